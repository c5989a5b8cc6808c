"""Action graph and sub-agent tree views over the networkx graphs of a reconstruction."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as w
import networkx as nx
import numpy as np
import plotly.graph_objects as go

from agent_inspect._html import escape, plotly_text
from agent_inspect.history import graph_groups, group_graph, layered_layout
from agent_inspect.widgets._common import colour_for, decoded_value, hover, log_of, message_html, value_html
from agent_inspect.widgets._plot import Plot
from agent_inspect.widgets._style import colour

__all__ = ["GraphView", "SubagentTreeView"]

_SYMBOLS = {
    "event": "circle", "action": "square", "execution": "square", "caller": "diamond", "session": "triangle-up",
    "call": "star", "child": "square", "unattributed": "x", "round": "hexagon", "attempt": "octagon",
    "rounds": "hexagon2",
}
_KIND_ATTRS = ("kind", "type", "node_type")
_LABEL_ATTRS = ("label", "name", "action", "event_type", "task_event_type")
_POS_ATTRS = ("positions", "pos", "position", "record")
_REMOVED = ("evicted", "invalidated")
# Hover keeps to what identifies a node and its fate; a click shows every attribute.
_HOVER_ATTRS = (
    "label", "kind", "status", "reason", "seq", "attempt", "state_key", "positions", "completed",
    "call_status", "function_id",
)
# Above this many nodes, labels are left to hover text to keep the figure readable and light; a graph of
# all rounds that big is folded into attempt and round groups instead (expand a group to see inside).
_MAX_LABELS = 80
# Arrowheads (SVG markers turned along their edge) up to this many edges.
_MAX_ARROWS = 2000
_ALL_ROUNDS = "all rounds"
# Folded graphs keep their labels up to this many drawn nodes.
_MAX_GROUP_LABELS = 400


class GraphView(w.VBox):
    """A business key's action graph (one round, or all of them): events and action executions in layers.

    Node colour = status under the rule (evicted and invalidated nodes stay visible, outlined in
    red), symbol = node kind (event ●, action ■, sub-agent caller ◆, session ▲, call ★); edges end in
    arrowheads. The "Round" picker searches the key's rounds as you type; click a node to see its
    attributes and its record's decoded value. All rounds of a big key (over 80 nodes) are folded into
    one node per attempt (⯃), per range of rounds when an attempt has over 40, and per round (⬢),
    labelled, collapsed: click a group to expand it,
    "collapse all" folds them again. ``graph`` is the whole graph, ``shown`` what is drawn.
    """

    _css = "ai-graph"
    _what = "action graph"

    def __init__(self, source: Any, key: str | None = None, seq: int | None = None, *, attempt: int | None = None,
                 graph: nx.DiGraph | None = None, height: int = 460) -> None:
        super().__init__()
        self.add_class(self._css)
        self._source = source
        self._attempt = attempt
        self.key = key
        self.selected_node: Any = None
        self.expanded: set[Any] = set()
        self.title = w.HTML()
        self.detail = w.HTML()
        self.detail.add_class("ai-detail")
        self.figure = Plot(layout=go.Layout(
            height=height, margin=dict(l=10, r=10, t=20, b=10), hovermode="closest", showlegend=True,
            xaxis=dict(visible=False), yaxis=dict(visible=False),
            legend=dict(orientation="h", y=1.06)))
        self.figure.add_class(f"{self._css}-figure")
        rounds = _rounds(source, key) if graph is None else []
        self._round_of = dict(self._round_options(rounds))
        # A searching picker: type a seq, pick from the matches (no drop-down of every round).
        self.round_picker = w.Combobox(description="Round", options=list(self._round_of), ensure_option=True,
                                       placeholder="type a seq…", value=_round_text(seq) if _round_text(seq) in self._round_of else "",
                                       layout=w.Layout(width="220px"))
        self.round_picker.layout.display = None if rounds else "none"
        self.collapse_button = w.Button(description="collapse all", layout=w.Layout(width="110px", display="none"))
        self.collapse_button.on_click(lambda _: self.collapse_all())
        self._show(seq, graph)
        self.round_picker.observe(lambda change: self._picked(change["new"]), names="value")
        self.children = [w.HBox([self.round_picker, self.collapse_button, self.title]), self.figure, self.detail]

    @property
    def seq(self) -> int | None:
        """The round shown (None: every round of the key)."""
        return self._seq

    def _round_options(self, rounds: list[int]) -> list[tuple[str, int | None]]:
        return [(_ALL_ROUNDS, None)] + [(_round_text(s), s) for s in rounds]

    def show_round(self, seq: int | None) -> None:
        """Show round ``seq`` (None: every round), as picking it would."""
        self.round_picker.value = _round_text(seq) if seq is not None else _ALL_ROUNDS

    def expand(self, group: Any) -> None:
        """Unfold an attempt or round group node of the drawn graph."""
        self.expanded.add(group)
        self._redraw()

    def collapse(self, group: Any) -> None:
        """Fold an expanded group again (and the groups inside it)."""
        self.expanded = {g for g in self.expanded if g != group and not _inside(g, group)}
        self._redraw()

    def collapse_all(self) -> None:
        self.expanded = set()
        self._redraw()

    def _picked(self, text: str) -> None:
        if text in self._round_of and self._round_of[text] != self._seq:
            self.expanded = set()
            self._show(self._round_of[text])

    def _show(self, seq: int | None, graph: nx.DiGraph | None = None) -> None:
        self._seq = seq
        self.graph = graph if graph is not None else self._build(self._source, self.key, seq, self._attempt)
        self.grouped = seq is None and graph is None and self.graph.number_of_nodes() > _MAX_LABELS and \
            len({g[-1] for g in graph_groups(self.graph).values()}) > 1
        self._redraw()

    def _redraw(self) -> None:
        self.shown = group_graph(self.graph, self.expanded) if self.grouped else self.graph
        self.collapse_button.layout.display = None if self.grouped else "none"
        self.positions = _layout(self.shown)
        self.selected_node = None
        seq = self._seq
        key, what = self.key, escape(self._what)
        where = "" if key is None else f" of key <code>{escape(key)}</code>" + (
            "" if seq is None else f", seq {escape(seq)}")
        folded = "" if self.shown is self.graph else \
            f" · drawn as {self.shown.number_of_nodes():,} (click a group to expand it)"
        self.title.value = (f'<div class="ai-title">{what}{where} · {self.graph.number_of_nodes():,} nodes, '
                            f"{self.graph.number_of_edges():,} edges{folded}</div>")
        self.detail.value = message_html("click a node to see its attributes")
        with self.figure.batch_update():
            self.figure.data = []
            self._draw()

    def _build(self, source: Any, key: Any, seq: int | None, attempt: int | None) -> nx.DiGraph:
        if attempt is None:
            return source.graph(key, seq)
        return source.graph(key, seq, attempt=attempt)

    def select(self, node: Any) -> None:
        """Show the attributes of ``node`` and the decoded value of its (first) record; a group node
        is expanded instead (``collapse_all`` folds it again)."""
        if self.grouped and self.shown.nodes[node].get("group"):
            group = dict(self.shown.nodes[node])
            self.expand(node)
            self.selected_node = node
            self.detail.value = value_html(f"expanded {group['label']}",
                                           {str(k): _jsonable(v) for k, v in group.items()})
            return
        self.selected_node = node
        attrs = dict(self.shown.nodes[node])
        parts = [value_html(f"node {node}", {str(k): _jsonable(v) for k, v in attrs.items()})]
        pos = _first_position(attrs)
        if pos is not None and log_of(self._source) is not None:
            parts.append(value_html(f"record {pos}", decoded_value(self._source, pos)))
        self.detail.value = "".join(parts)

    # -- drawing ----------------------------------------------------------------------------------

    def _draw(self) -> None:
        g, xy = self.shown, self.positions
        self._nodes = list(g.nodes)
        index = {n: i for i, n in enumerate(self._nodes)}
        # One line trace for all edges, NaN-separated; numpy arrays keep plotly's validation cheap.
        ex = np.full(3 * g.number_of_edges(), np.nan)
        ey = np.full(3 * g.number_of_edges(), np.nan)
        for i, (u, v) in enumerate(g.edges):
            ex[3 * i], ey[3 * i] = xy[u]
            ex[3 * i + 1], ey[3 * i + 1] = xy[v]
        show_labels = len(self._nodes) <= (_MAX_GROUP_LABELS if self.grouped else _MAX_LABELS)
        # WebGL draws text labels literally (no HTML entities), so labelled graphs use SVG traces.
        scatter = go.Scatter if show_labels else go.Scattergl
        traces: list[Any] = [_edges_trace(scatter, ex, ey)]
        groups: dict[tuple[str, str], list[Any]] = {}
        for node in self._nodes:
            attrs = g.nodes[node]
            groups.setdefault((_status(attrs), _kind(attrs)), []).append(node)
        for (status, kind), nodes in sorted(groups.items()):
            removed = status in _REMOVED
            labels = np.array([plotly_text(_label(n, g.nodes[n])) for n in nodes], dtype=object) if show_labels else None
            traces.append(scatter(
                x=np.array([xy[n][0] for n in nodes]), y=np.array([xy[n][1] for n in nodes]),
                mode="markers+text" if show_labels else "markers", name=plotly_text(f"{kind} · {status}"),
                text=labels, textposition="bottom center", textfont=dict(size=9),
                customdata=np.array([index[n] for n in nodes]),
                marker=dict(symbol=_SYMBOLS.get(kind, "circle"), size=12, color=colour_for(status),
                            line=dict(color=colour("bad") if removed else colour("ink"), width=2 if removed else 0.5)),
                hovertext=np.array([_node_hover(n, g.nodes[n]) for n in nodes], dtype=object), hoverinfo="text"))
        for trace in traces:
            self.figure.add_trace(trace)
        if show_labels and xy:
            xs = [p[0] for p in xy.values()]
            ys = [p[1] for p in xy.values()]
            # room for the labels around the outermost nodes
            self.figure.layout.xaxis.range = [min(xs) - 0.8, max(xs) + 0.8]
            self.figure.layout.yaxis.range = [min(ys) - 0.5, max(ys) + 0.3]
        else:
            self.figure.layout.xaxis.range = None
            self.figure.layout.yaxis.range = None
        for trace in self.figure.data[1:]:
            trace.on_click(self._on_click)

    def _on_click(self, trace: Any, points: Any, _state: Any = None) -> None:
        indices = list(getattr(points, "point_inds", []) or [])
        if indices and trace.customdata is not None:
            self.select(self._nodes[int(np.asarray(trace.customdata)[indices[0]])])


class SubagentTreeView(GraphView):
    """One round's sub-agent call tree: root caller → session → call → child actions (§11.5).

    Calls carry their status (done / in-flight / consumed); evicted or invalidated children stay
    visible, outlined in red; unattributed calls are drawn with ✕.
    """

    _css = "ai-subagent-tree"
    _what = "sub-agent call tree"

    def __init__(self, source: Any, key: str | None = None, seq: int | None = None, *, graph: nx.DiGraph | None = None,
                 height: int = 460) -> None:
        if graph is None and seq is None:
            seq = _first_subagent_round(source, key)
        super().__init__(source, key, seq, graph=graph, height=height)

    def _round_options(self, rounds: list[int]) -> list[tuple[str, int | None]]:
        return [(f"seq {s}", s) for s in rounds]

    def _build(self, source: Any, key: Any, seq: int | None, attempt: int | None) -> nx.DiGraph:
        return source.subagent_tree(key, seq)


def _edges_trace(scatter: Any, ex: np.ndarray, ey: np.ndarray) -> Any:
    """One trace for every edge (NaN-separated); SVG edges end in an arrowhead just short of their target."""
    line = dict(color=colour("muted"), width=1)
    n = len(ex) // 3
    if scatter is not go.Scatter or n == 0 or n > _MAX_ARROWS:
        return scatter(x=ex, y=ey, mode="lines", name="edges", hoverinfo="skip", line=line)
    dx, dy = ex[1::3] - ex[0::3], ey[1::3] - ey[0::3]
    length = np.hypot(dx, dy)
    length[length == 0] = 1.0
    back = np.minimum(0.18, 0.4 * length)  # stop before the target's marker
    ex, ey = ex.copy(), ey.copy()
    ex[1::3] -= dx / length * back
    ey[1::3] -= dy / length * back
    size = np.zeros(len(ex))
    size[1::3] = 9
    # "previous": each arrowhead turns along the segment from its edge's source
    return go.Scatter(x=ex, y=ey, mode="lines+markers", name="edges", hoverinfo="skip", line=line,
                      marker=dict(symbol="arrow", angleref="previous", size=size, color=colour("muted")))


def _round_text(seq: int | None) -> str:
    return _ALL_ROUNDS if seq is None else f"seq {seq}"


def _inside(group: Any, outer: Any) -> bool:
    """Whether group ``group`` lies in group ``outer`` (a range or round in an attempt, a round in a range)."""
    if not (isinstance(group, tuple) and isinstance(outer, tuple)) or group[1] != outer[1]:
        return False
    if outer[0] == "attempt":
        return group[0] in ("rounds", "round")
    if outer[0] == "rounds" and group[0] == "round":
        try:
            return bool(outer[2] <= group[2] <= outer[3])
        except TypeError:
            return False
    return False


def _first_subagent_round(source: Any, key: Any) -> int | None:
    """The first round of ``key`` with sub-agent records, else its first round."""
    frame = getattr(source, "records", None)
    rounds = _rounds(source, key)
    if not rounds:
        return None
    if frame is not None and "subagent_session_id" in frame.columns:    # not None: it has rounds
        mine = frame[(frame["business_key"] == key).fillna(False).to_numpy(dtype=bool)]
        sub = mine.loc[mine["subagent_session_id"].notna(), "seq"].dropna()
        if len(sub):
            return int(sub.min())
    return rounds[0]


def _rounds(source: Any, key: Any) -> list[int]:
    """The seqs of ``key``'s records, ascending (empty when the source has no record frame)."""
    frame = getattr(source, "records", None)
    if frame is None or key is None or "business_key" not in frame.columns or "seq" not in frame.columns:
        return []
    seqs = frame.loc[(frame["business_key"] == key).fillna(False).to_numpy(dtype=bool), "seq"].dropna()
    return sorted(int(s) for s in seqs.unique())


def _kind(attrs: Mapping[str, Any]) -> str:
    for name in _KIND_ATTRS:
        if attrs.get(name) is not None:
            return str(attrs[name])
    return "node"


def _status(attrs: Mapping[str, Any]) -> str:
    status, call = attrs.get("status"), attrs.get("call_status")
    if call is not None and status not in _REMOVED:
        return str(call)
    return "live" if status is None else str(status)


def _label(node: Any, attrs: Mapping[str, Any]) -> str:
    for name in _LABEL_ATTRS:
        if attrs.get(name) is not None:
            return str(attrs[name])
    return str(node)


def _first_position(attrs: Mapping[str, Any]) -> int | None:
    for name in _POS_ATTRS:
        value = attrs.get(name)
        if value is None:
            continue
        if isinstance(value, (int, np.integer)):
            return int(value)
        if isinstance(value, (list, tuple)) and value:
            return int(value[0])
    return None


def _node_hover(node: Any, attrs: Mapping[str, Any]) -> str:
    names = [n for n in _HOVER_ATTRS if n in attrs] or list(attrs)
    return hover([("node", node)] + [(n, _short(attrs[n])) for n in names])


def _short(value: Any) -> Any:
    text = value if isinstance(value, str) else _plain_repr(value)
    return text if len(text) <= 120 else text[:117] + "…"


def _plain_repr(value: Any) -> str:
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(map(str, value))
    return str(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def _layout(graph: nx.DiGraph) -> dict[Any, tuple[float, float]]:
    """Positions from the history layer's deterministic layered layout."""
    if graph.number_of_nodes() == 0:
        return {}
    return {n: (float(x), float(y)) for n, (x, y) in layered_layout(graph).items()}
