"""Action graph and sub-agent tree views over the networkx graphs of a reconstruction.

Why it is long: both views draw through the same marks (divergence rings, evicted-suffix bands, attempt lanes,
edge labels, hover text) and the same layout; the sub-agent tree is a candidate to move into its own module once
those helpers have a home of their own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as w
import networkx as nx
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from agent_inspect._errors import InspectError
from agent_inspect._glossary import count_words, plural
from agent_inspect._html import escape, plotly_text
from agent_inspect._types import ReconstructionLike
from agent_inspect.history import (
    GROUP_EDGE_KINDS,
    LayeredDrawing,
    graph_groups,
    group_graph,
    layered_drawing,
    tree_lanes,
    wrapped_drawing,
)
from agent_inspect.log import rule_mark
from agent_inspect.widgets._common import (
    KIND_COLOURS,
    colour_for,
    decoded_value,
    first_column,
    hover,
    log_of,
    message_html,
    terms_html,
    value_html,
)
from agent_inspect.widgets._graph_geometry import RING_PX, Geometry, label_lines, label_px, wrap_label
from agent_inspect.widgets._plot import Plot
from agent_inspect.widgets._style import View, colour
from agent_inspect.widgets._timeline import removed_by

if TYPE_CHECKING:
    from collections.abc import Hashable

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
# A folded graph taller than this many layers (a long chain of rounds) wraps into bands side by side, at most
# _MAX_COLUMNS lane columns across (so labels keep their room in a notebook's width).
_WRAP_LAYERS = 12
_MAX_COLUMNS = 6
DIVERGENCE_MARK = "divergence point"
EVICTED_BAND = "evicted suffix"
# What each edge kind of the graphs means, in the words drawn on it (sub-agent trees label their edges).
_EDGE_WORDS = {"delegates": "calls", "forwards": "emits", "answers": "result", "opens": "opens",
               "contains": "call", "root-caller": "runs", "unattributed": "", "triggers": "", "emits": ""}
# The replay outcome of an action under the rule, as its badge reads (reuse / rerun / resume / not dispatched).
_OUTCOME_WORDS = {"REUSE": "reused", "RERUN": "re-run", "RESUME": "resumed", "FAIL": "failed"}
_NOT_DISPATCHED = "not dispatched"
# An edge between folded groups, in the words drawn on it (what each means: history.GROUP_EDGE_KINDS).
_GROUP_EDGE_WORDS = {"next": "then", "reruns": "re-runs", "restarts": "restarts", "emits": "emits",
                     "triggers": "triggers"}


def _word(words: str, meaning: str, x: float, y: float, xanchor: str, yanchor: str, xshift: int) -> dict[str, Any]:
    """An edge's words as a plotly annotation at (x, y), its meaning on hover."""
    return dict(x=x, y=y, xref="x", yref="y", text=f"<i>{plotly_text(words)}</i>", hovertext=plotly_text(meaning),
                showarrow=False, font=dict(size=9), xanchor=xanchor, yanchor=yanchor, xshift=xshift, opacity=0.85)


def _along(words: str, meaning: str, start: tuple[float, float], end: tuple[float, float],
           word: float) -> dict[str, Any]:
    """The words of an edge drawn from ``start`` down to ``end``. Down a column: left of it, on the line of
    ``word`` units kept under the labels when there is one (halfway, a word sat on the tall label of a divergence
    node), else halfway; edges to the next lane leave rightwards, so the left is free. Across to another lane:
    under the middle of the line, on the side where the line is higher, so the line never runs through them."""
    (x0, y0), (x1, y1) = start, end
    if x0 == x1:
        return _word(words, meaning, x0, y0 - word / 2 if word else (y0 + y1) / 2, "right", "middle", -4)
    return _word(words, meaning, (x0 + x1) / 2, (y0 + y1) / 2, "right" if x1 > x0 else "left", "top", 0)


def _climbs(route: Sequence[tuple[float, float]]) -> bool:
    """Whether a route climbs a wrapped band's gutter: its middle segment runs straight up (every other edge
    runs down, the layers' way)."""
    i = (len(route) - 1) // 2
    return len(route) > 2 and route[i][0] == route[i + 1][0] and route[i + 1][1] > route[i][1]


class GraphView(View):
    """A business key's action graph (one round, or all of them): events and action executions in layers.

    Node colour = status under the rule (evicted and invalidated nodes stay visible, outlined in
    red, inside a shaded "evicted suffix" band), symbol = node kind (event ●, action ■, sub-agent caller ◆,
    session ▲, call ★); edges end in arrowheads. The diverging node (the record whose lookup triggered the
    rule) is ringed ("divergence point" in the legend): hover it for what the rule did, click it for
    ``explain``'s chain of store decisions. Attempts are labelled lanes. The "Round" picker searches the key's rounds as you type; click a node to see its
    attributes and its record's decoded value. All rounds of a big key (over 80 nodes) are folded into
    one node per attempt (⯃), per range of rounds when an attempt has over 40, and per round (⬢),
    labelled, collapsed: click a group to expand it,
    "collapse all" folds them again. ``graph`` is the whole graph, ``shown`` what is drawn.

    For example::

        view = ai.widgets.GraphView(ai.reconstruct(log, markers=markers), "user-0011", seq=1)
        view.show_round(2)
    """

    _css = "ai-graph"
    _what = "action graph"
    _foldable = True
    _lane: str | None = "attempt"        # the node attribute whose values are drawn as lanes side by side

    def __init__(self, source: ReconstructionLike | None, key: str | None = None, seq: int | None = None, *, attempt: int | None = None,
                 graph: nx.DiGraph | None = None, height: int = 460) -> None:
        super().__init__()
        self.add_class(self._css)
        self._source = source
        self._attempt = attempt
        self.key = key
        self._min_height = height
        self.selected_node: Any = None
        self.expanded: set[Any] = set()
        self.title = w.HTML()
        self.detail = w.HTML()
        self.detail.add_class("ai-detail")
        self.explain_box = w.VBox()
        self.explain_box.add_class("ai-graph-explain")
        self.terms = w.HTML()
        self._divergences = _key_divergences(source, key)
        self.figure = Plot(layout=go.Layout(
            height=height, margin=dict(l=10, r=10, t=30, b=10), hovermode="closest", showlegend=True,
            xaxis=dict(visible=False), yaxis=dict(visible=False),
            legend=dict(orientation="h", x=0, xanchor="left", y=1.0, yanchor="bottom")))
        self.figure.add_class(f"{self._css}-figure")
        rounds = _rounds(source, key) if graph is None else []
        self._round_of = dict(self._round_options(rounds))
        # A searching picker: type a seq, pick from the matches (no drop-down of every round).
        self.round_picker = w.Combobox(description="Round", options=list(self._round_of), ensure_option=False,
                                       placeholder="type a seq…", value=_round_text(seq) if _round_text(seq) in self._round_of else "",
                                       layout=w.Layout(width="220px", flex="0 0 auto"))
        self.round_picker.layout.display = None if rounds else "none"
        # fixed widths: a long title beside them wraps instead of squeezing "collapse all" to "colla…"
        self.collapse_button = w.Button(description="collapse all",
                                        layout=w.Layout(width="110px", flex="0 0 auto", display="none"))
        self.collapse_button.on_click(lambda _: self.collapse_all())
        self._show(seq, graph)
        self.round_picker.observe(lambda change: self._picked(change["new"]), names="value")
        self.children = [w.HBox([self.round_picker, self.collapse_button, self.title]), self.figure, self.terms,
                         self.detail, self.explain_box]

    @property
    def seq(self) -> int | None:
        """The round shown (None: every round of the key)."""
        return self._seq

    def _round_options(self, rounds: list[int]) -> list[tuple[str, int | None]]:
        return [(_ALL_ROUNDS, None)] + [(_round_text(s), s) for s in rounds]

    def show_round(self, seq: int | None) -> None:
        """Show round ``seq`` (None: every round), as picking it would."""
        self.round_picker.value = _round_text(seq) if seq is not None else _ALL_ROUNDS

    def expand(self, group: Hashable) -> None:
        """Unfold an attempt or round group node of the drawn graph."""
        self.expanded.add(group)
        self._redraw()

    def collapse(self, group: Hashable) -> None:
        """Fold an expanded group again (and the groups inside it)."""
        self.expanded = {g for g in self.expanded if g != group and not _inside(g, group)}
        self._redraw()

    def collapse_all(self) -> None:
        self.expanded = set()
        self._redraw()

    def _picked(self, text: str) -> None:
        """A picked option, or a typed seq ("6", "seq 6") once it names one of the key's rounds."""
        option = _match_round(text, self._round_of)
        if option is None:
            return
        if self.round_picker.value != option:
            self.round_picker.value = option   # observed again: shows it
            return
        if self._round_of[option] != self._seq:
            self.expanded = set()
            self._show(self._round_of[option])

    def _show(self, seq: int | None, graph: nx.DiGraph | None = None) -> None:
        self._seq = seq
        self.graph = graph if graph is not None else self._build(self._source, self.key, seq, self._attempt)
        self.grouped = self._foldable and seq is None and graph is None and \
            self.graph.number_of_nodes() > _MAX_LABELS and \
            len({g[-1] for g in graph_groups(self.graph).values()}) > 1
        self._redraw()

    def _redraw(self) -> None:
        self.shown = self._drawn_graph()
        self.collapse_button.layout.display = None if self.grouped else "none"
        drawing = layered_drawing(self.shown, lane=self._lane) if self.shown.number_of_nodes() else LayeredDrawing({})
        if self.grouped and drawing.layers > _WRAP_LAYERS:
            bands = max(1, _MAX_COLUMNS // max(len(drawing.lanes), 1))
            drawing = wrapped_drawing(drawing, rows=max(_WRAP_LAYERS * 2 // 3, -(-drawing.layers // bands)))
        self.positions = {n: (float(x), float(y)) for n, (x, y) in drawing.positions.items()}
        self.routes = drawing.routes
        self._lanes = drawing.lanes
        self._band_shifts = drawing.band_shifts
        self._entry = drawing.entry
        self.selected_node = None
        seq = self._seq
        key, what = self.key, escape(self._what)
        where = "" if key is None else f" of key <code>{escape(key)}</code>" + (
            " · all rounds" if seq is None else f" · seq {escape(seq)}")
        attempts = sorted({a for a in _attempts(self.graph)}, key=str)
        if attempts:
            where += f" · {count_words(len(attempts), 'attempt')} {escape(', '.join(map(str, attempts)))}"
        folded = "" if not self.grouped else \
            f" · drawn as {self.shown.number_of_nodes():,} (click a group to expand it)"
        self.title.value = (f'<div class="ai-title">{what}{where} · {plural(self.graph.number_of_nodes(), "node")}, '
                            f"{plural(self.graph.number_of_edges(), 'edge')}{folded}</div>" + self._suffix_html())
        self.detail.value = message_html("click a node to see its attributes")
        self.explain_box.children = []
        self.terms.value = terms_html(self._terms())
        with self.figure.batch_update():
            self.figure.data = []
            self._draw()

    def _drawn_graph(self) -> nx.DiGraph:
        """What is drawn of ``graph``: folded into groups (all rounds of a big key), else the graph itself."""
        return group_graph(self.graph, self.expanded) if self.grouped else self.graph

    def _build(self, source: Any, key: Any, seq: int | None, attempt: int | None) -> nx.DiGraph:
        if attempt is None:
            return source.graph(key, seq)
        return source.graph(key, seq, attempt=attempt)

    def select(self, node: Hashable) -> None:
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
        parts = [self._divergence_html(node)]
        parts.append(value_html(f"node {node}", {str(k): _jsonable(v) for k, v in attrs.items()}))
        pos = _first_position(attrs)
        if pos is not None and log_of(self._source) is not None:
            parts.append(value_html(f"record {pos}", decoded_value(self._source, pos)))
        self.detail.value = "".join(parts)

    def explain(self, node: object) -> None:
        """Show ``explain``'s chain of store decisions for the action at ``node`` (a reconstruction's graph)."""
        attrs = self.graph.nodes[node] if node in self.graph else self.shown.nodes[node]
        action = attrs.get("action_name") or attrs.get("label")
        if not isinstance(self._source, ReconstructionLike) or attrs.get("kind") != "action" or \
                attrs.get("seq") is None or action is None:
            self.explain_box.children = []
            return
        from agent_inspect.diffing import explain
        from agent_inspect.widgets._explain import ExplainView

        try:
            story = explain(self._source, attrs.get("business_key", self.key), int(attrs["seq"]), str(action))
        except (InspectError, LookupError, ValueError) as exc:
            self.explain_box.children = [w.HTML(message_html(f"explain: {exc}", level="warning"))]
            return
        self.explain_box.children = [ExplainView(story, log=log_of(self._source))]

    def _marks(self) -> dict[Any, list[dict[str, Any]]]:
        """Drawn node → the divergences it is the divergence point of (the record whose lookup triggered
        the rule); a folded group holds those of its members."""
        marks: dict[Any, list[dict[str, Any]]] = {}
        by_id = {d["id"]: d for d in self._divergences}
        for node, attrs in self.shown.nodes(data=True):
            if attrs.get("group"):
                hits = [by_id[i] for i in (attrs.get("divergences") or ()) if i in by_id]
            else:
                positions = set(_positions_of(attrs))
                hits = [d for d in self._divergences if d["trigger"] is not None and d["trigger"] in positions]
                if not hits and self._divergences and all(d["trigger"] is None for d in self._divergences):
                    hits = [by_id[i] for i in (attrs.get("divergences") or ()) if i in by_id]
            if hits:
                marks[node] = hits
        return marks

    def _divergence_html(self, node: Any) -> str:
        hits = self._marks().get(node, [])
        return "".join(f'<div class="ai-graph-divergence">{escape(_divergence_text(d))}</div>' for d in hits)

    def _suffix_html(self) -> str:
        """One line per divergence of the round shown: what it evicted, also when those rounds are not drawn."""
        shown = self._divergences if self._seq is None else [d for d in self._divergences if d["seq"] == self._seq]
        return "".join(f'<div class="ai-graph-suffix">{escape(_divergence_text(d))}</div>' for d in shown)

    # -- drawing ----------------------------------------------------------------------------------

    def _draw(self) -> None:
        g, xy = self.shown, self.positions
        self._nodes = list(g.nodes)
        index = {n: i for i, n in enumerate(self._nodes)}
        show_labels = len(self._nodes) <= (_MAX_GROUP_LABELS if self.grouped else _MAX_LABELS)
        texts = {n: self._node_label(n, g.nodes[n]) for n in self._nodes} if show_labels else {}
        lanes = len(self._lanes) > 1
        marks = self._marks()
        # the routes' bends too (a wrapped drawing's edges run in gutters around its bands)
        points: dict[Any, tuple[float, float]] = dict(xy)
        points.update((("bend", i), p) for i, p in enumerate(p for r in self.routes.values() for p in r[1:-1]))
        geometry = Geometry.of(points, {n: label_lines(t) for n, t in texts.items()}, map(label_px, texts.values()),
                               min_height=self._min_height, legend_rows=self._legend_rows(), lanes=lanes,
                               ringed=bool(marks), words=bool(self.grouped), entry=self._entry)
        self.geometry = geometry
        # WebGL draws text labels literally (no HTML entities), so labelled graphs use SVG traces.
        scatter = go.Scatter if show_labels else go.Scattergl
        # One line trace for all edges, NaN-separated; numpy arrays keep plotly's validation cheap.
        ex, ey, sizes = geometry.edge_arrays((self.routes.get((u, v)) or [xy[u], xy[v]] for u, v in g.edges),
                                             labelled=show_labels)
        traces: list[Any] = [_edges_trace(scatter, ex, ey, sizes)]
        groups: dict[tuple[str, str, str, bool], list[Any]] = {}
        for node in self._nodes:
            attrs = g.nodes[node]
            groups.setdefault(self._legend_of(attrs), []).append(node)
        for (name, kind, fill, removed), nodes in sorted(groups.items()):
            # a ringed node's label is drawn by its ring, under it
            labels = np.array(["" if n in marks else texts[n] for n in nodes], dtype=object) if show_labels else None
            traces.append(scatter(
                x=np.array([xy[n][0] for n in nodes]), y=np.array([xy[n][1] for n in nodes]),
                mode="markers+text" if show_labels else "markers", name=plotly_text(name),
                text=labels, textposition="bottom center", textfont=dict(size=9),
                **({"cliponaxis": False} if scatter is go.Scatter else {}),
                customdata=np.array([index[n] for n in nodes]),
                marker=dict(symbol=_SYMBOLS.get(kind, "circle"), size=12, color=fill,
                            line=dict(color=colour("bad") if removed else colour("ink"),
                                      width=2 if removed else 0.5)),
                # a diverging node leads its hover with the divergence, whichever trace the mouse picks
                hovertext=np.array(["<br>".join([*(_divergence_hover(d) for d in marks.get(n, ())),
                                                 _node_hover(n, g.nodes[n])]) for n in nodes], dtype=object),
                hoverinfo="text"))
        if marks:
            nodes = list(marks)
            # SVG, after the nodes: drawn on top and first under the mouse
            traces.append(go.Scatter(
                x=np.array([xy[n][0] for n in nodes]), y=np.array([xy[n][1] for n in nodes]),
                mode="markers+text" if show_labels else "markers",
                text=np.array([texts[n] for n in nodes], dtype=object) if show_labels else None,
                textposition="bottom center", textfont=dict(size=9),
                name=DIVERGENCE_MARK, customdata=np.array([index[n] for n in nodes]), cliponaxis=False,
                marker=dict(symbol="circle-open", size=RING_PX, color=colour("ink"), line=dict(width=3)),
                hovertext=np.array(["<br>".join(_divergence_hover(d) for d in marks[n]) for n in nodes], dtype=object),
                hoverinfo="text"))
        for trace in traces:
            self.figure.add_trace(trace)
        self.figure.layout.shapes = self._bands()
        self.figure.layout.annotations = self._lane_labels() + self._edge_labels()
        if show_labels and xy:
            # every label inside the figure: the height follows the layers, the margins the widest label
            self.figure.layout.height = geometry.height
            self.figure.layout.margin = geometry.margin
            self.figure.layout.xaxis.range = list(geometry.x_range)
            self.figure.layout.yaxis.range = list(geometry.y_range)
        else:
            self.figure.layout.height = self._min_height
            self.figure.layout.margin = dict(l=10, r=10, t=30, b=10)
            self.figure.layout.xaxis.range = None
            self.figure.layout.yaxis.range = None
        for trace in self.figure.data[1:]:
            trace.on_click(self._on_click)

    def _terms(self) -> list[str]:
        """The words of the drawn graph the terms line explains: its node kinds and statuses, then its marks."""
        nodes = [self.shown.nodes[n] for n in self.shown.nodes]
        return [*sorted({_kind(a) for a in nodes}), *sorted({_status(a) for a in nodes}), "round", "attempt",
                *(["divergence"] if self._divergences else [])]

    def _legend_of(self, attrs: Mapping[str, Any]) -> tuple[str, str, str, bool]:
        """(legend entry, kind, colour, removed) of a node: its kind and status under the rule."""
        status, kind = _status(attrs), _kind(attrs)
        return f"{kind} · {status}", kind, colour_for(status), status in _REMOVED

    def _node_label(self, node: Any, attrs: Mapping[str, Any]) -> str:
        """The node's label under its marker, as plotly text (escaped), wrapped to short lines."""
        return _wrapped(_label(node, attrs))

    def _bands(self) -> list[dict[str, Any]]:
        """A shaded box around each connected part of the evicted or invalidated nodes (the evicted suffix, one
        box per attempt or sub-tree), in the legend once."""
        xy, out = self.positions, list[dict[str, Any]]()
        removed = [n for n, attrs in self.shown.nodes(data=True) if _status(attrs) in _REMOVED and n in xy]
        parts = nx.weakly_connected_components(self.shown.subgraph(removed)) if removed else []
        # one box per band of a wrapped drawing: a suffix wrapped to the next band continues in a box there
        parts = [p for part in parts for p in self._by_band(part)]
        for part in sorted(parts, key=lambda p: min(xy[n] for n in p)):
            xs, ys = [xy[n][0] for n in part], [xy[n][1] for n in part]
            out.append(dict(type="rect", xref="x", yref="y", layer="below", line=dict(width=0),
                            x0=min(xs) - 0.45, x1=max(xs) + 0.45, y0=min(ys) - self.geometry.below - 0.05,
                            y1=max(ys) + self.geometry.above + 0.05,
                            fillcolor=colour_for("evicted"), opacity=0.12, name=EVICTED_BAND,
                            showlegend=not out, legendrank=900))
        return out

    def _by_band(self, nodes: Any) -> list[list[Any]]:
        """``nodes`` split by the band of a wrapped drawing they sit in (one part when nothing is wrapped)."""
        if len(self._band_shifts) < 2:
            return [list(nodes)]
        left = min(self.positions[n][0] for n in self.positions) - 0.5
        out: dict[int, list[Any]] = {}
        for n in nodes:
            band = max(i for i, s in enumerate(self._band_shifts) if self.positions[n][0] >= left + s)
            out.setdefault(band, []).append(n)
        return list(out.values())

    def _lane_labels(self) -> list[dict[str, Any]]:
        """"attempt N" over each attempt's lane when attempts sit side by side (more than one drawn)."""
        if len(self._lanes) < 2 or not self.positions:
            return []
        top = max(p[1] for p in self.positions.values()) + self.geometry.titles
        return [dict(x=(left + right) / 2 + shift, y=top, xref="x", yref="y", showarrow=False, yanchor="bottom",
                     text=f"<b>{escape(self._lane)} {escape(value)}</b>" if value is not None else "<b>no attempt</b>",
                     font=dict(size=11))
                for shift in self._band_shifts for value, (left, right) in self._lanes.items()]

    def _legend_rows(self) -> int:
        """How many rows the horizontal legend takes, about (its entries at ~6 px a character, 760 px a row)."""
        names = {self._legend_of(a)[0] for _, a in self.shown.nodes(data=True)}
        width = sum(40 + 6 * len(n) for n in names) + 3 * 120
        return max(1, math.ceil(width / 760))

    def _edge_labels(self) -> list[dict[str, Any]]:
        """On a folded graph, what each edge between groups stands for ("then", "re-runs ×3", "emits ×2")."""
        if not self.grouped or self.shown.number_of_edges() > _MAX_LABELS:
            return []
        xy, out = self.positions, list[dict[str, Any]]()
        edges = [(u, v, attrs.get("kinds")) for u, v, attrs in self.shown.edges(data=True)
                 if attrs.get("kinds") and u in xy and v in xy]
        routes = {(u, v): self.routes.get((u, v)) or [xy[u], xy[v]] for u, v, _ in edges}
        climbing = sorted({r[(len(r) - 1) // 2][0] for r in routes.values() if _climbs(r)})
        for u, v, kinds in edges:
            words = ", ".join(_GROUP_EDGE_WORDS.get(k, k) + (f" ×{n}" if n > 1 else "")
                              for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
            meaning = "; ".join(GROUP_EDGE_KINDS.get(k, f"{k} edges of the members") for k in kinds)
            route = routes[(u, v)]
            i = (len(route) - 1) // 2
            (x0, y0), (x1, y1) = route[i], route[i + 1]
            g = self.geometry
            if _climbs(route):
                # up the gutter: right of the gutter's last climbing edge (a word beside the first would lie
                # across the next), on the line kept under a row's labels (beside a row's label it would run into
                # the next band's), the words of one gutter's edges a row apart
                gutter = [x for x in climbing if abs(x - x0) < 1.0]
                row = min(round((y0 + y1) / 2) - gutter.index(x0), math.floor(y1))
                out.append(_word(words, meaning, max(gutter), row - g.below - g.word / 2, "left", "middle", 4))
                continue
            # the segment as drawn: an edge leaves under its source's label and stops above its target's marker
            top = y0 - g.below if i == 0 and y1 < y0 else y0
            bottom = y1 + g.above if i + 1 == len(route) - 1 and y1 < y0 else y1
            out.append(_along(words, meaning, (x0, top), (x1, bottom), g.word if i == 0 else 0.0))
        return out

    def _on_click(self, trace: Any, points: Any, _state: Any = None) -> None:
        indices = list(getattr(points, "point_inds", []) or [])
        if indices and trace.customdata is not None:
            node = self._nodes[int(np.asarray(trace.customdata)[indices[0]])]
            # the ring or the node beneath it (the mouse may pick either): a divergence point explains itself
            hits = self._marks().get(node, [])
            self.select(node)   # a folded group expands: ``node`` is no longer drawn
            if hits:
                self.explain(self._diverging_node(hits[0], node))

    def _diverging_node(self, divergence: Mapping[str, Any], drawn: Any) -> Any:
        """The action node whose record triggered ``divergence`` (``drawn``, the node clicked, when it names no
        trigger): inside a folded group, the member, not the group."""
        trigger = divergence.get("trigger")
        if trigger is not None:
            for node, attrs in self.graph.nodes(data=True):
                if _kind(attrs) == "action" and trigger in _positions_of(attrs):
                    return node
        return drawn


class SubagentTreeView(GraphView):
    """The sub-agent call trees of a key: round → caller → session → call → child actions (§11.5).

    Each action carries a badge with what the recovery did with it under the rule (reused / re-run / resumed /
    not dispatched; node colour) next to its record status; the children of one call are siblings under it,
    a child's event that started another is a dashed "emits" arrow between them, and every edge says what it
    is (runs, opens, call, calls, result). A V4 result event (``subagentResultEvents``) says whether the
    recovery replays it from the record or the child produces it again. Evicted or invalidated children are
    outlined in red; unattributed calls are drawn with ✕. By default every round of the key with sub-agent
    calls is drawn side by side (up to 12); the Round box picks one (type its seq).

    For example::

        sample = ai.samples.scenario("subagents")
        ai.widgets.SubagentTreeView(ai.reconstruct(sample.log, markers=sample.markers))
    """

    _css = "ai-subagent-tree"
    _what = "sub-agent call tree"
    _foldable = False
    # each attempt's children in a lane of their own; structure nodes in the lanes of the children under them

    def __init__(self, source: ReconstructionLike | None, key: str | None = None, seq: int | None = None, *, graph: nx.DiGraph | None = None,
                 height: int = 460) -> None:
        rounds = _subagent_rounds(source, key) if graph is None else []
        if graph is None and seq is None and not 0 < len(rounds) <= _MAX_TREE_ROUNDS:
            seq = _first_subagent_round(source, key)
        super().__init__(source, key, seq, graph=graph, height=height)

    def _round_options(self, rounds: list[int]) -> list[tuple[str, int | None]]:
        subagent = set(_subagent_rounds(self._source, self.key))
        every = [(_ALL_ROUNDS, None)] if 0 < len(subagent) <= _MAX_TREE_ROUNDS else []
        return every + [(f"seq {s}", s) for s in rounds]

    def _build(self, source: Any, key: Any, seq: int | None, attempt: int | None) -> nx.DiGraph:
        if seq is not None:
            return _siblings(source.subagent_tree(key, seq))
        rounds = _subagent_rounds(source, key)
        trees = [_siblings(source.subagent_tree(key, s)) for s in rounds]
        if not trees:
            return nx.DiGraph(business_key=key, seq=None)
        whole = nx.compose_all(trees)
        whole.graph.update(seq=None, emits=[e for t in trees for e in t.graph.get("emits", ())])
        return whole

    def _drawn_graph(self) -> nx.DiGraph:
        return tree_lanes(self.graph)

    def _terms(self) -> list[str]:
        return ["sub-agent call", *super()._terms(), "REUSE", "RERUN", "RESUME", "NOT_DISPATCHED", "calls"]

    def _legend_of(self, attrs: Mapping[str, Any]) -> tuple[str, str, str, bool]:
        kind = _kind(attrs)
        status = _status(attrs)
        if kind != "action":
            # structure (round, session, call, result): one neutral colour, its status in its label
            return kind, kind, colour_for("outside"), False
        badge = _badge(attrs, self.graph)
        role = attrs.get("role") or "action"
        role = "child" if role in ("bootstrap", "forwarded") else role
        return f"{role} · {badge}", kind, colour_for(_BADGE_KINDS.get(badge, badge), KIND_COLOURS), \
            status in _REMOVED

    def _node_label(self, node: Any, attrs: Mapping[str, Any]) -> str:
        label = _wrapped(_label(node, attrs))
        kind = _kind(attrs)
        if kind == "action":
            badge = _badge(attrs, self.graph)
            status = attrs.get("status")
            # badge and status on lines of their own: siblings sit one slot apart, their labels side by side
            return f"{label}<br><b>{plotly_text(badge.upper())}</b>" + (f"<br>{plotly_text(status)}" if status else "")
        if kind == "call" and attrs.get("call_status"):
            return f"{label}<br>{plotly_text(attrs['call_status'])}"
        if kind == "result":
            producer = self.shown.nodes.get(attrs.get("produced_by"), {}) if attrs.get("produced_by") in \
                self.shown else {}
            return f"{label}<br>{plotly_text(_result_replay(producer, self.graph))}"
        return label

    def _edge_labels(self) -> list[dict[str, Any]]:
        xy, out = self.positions, list[dict[str, Any]]()
        if self.shown.number_of_edges() > _MAX_LABELS:
            return out
        for u, v, attrs in self.shown.edges(data=True):
            word = _EDGE_WORDS.get(str(attrs.get("kind")), str(attrs.get("kind") or ""))
            if word and u in xy and v in xy:
                # along the drawn edge: from under the source's label to above the target's marker
                y0, y1 = xy[u][1] - self.geometry.below, xy[v][1] + self.geometry.above
                out.append(_along(word, "", (xy[u][0], y0), (xy[v][0], y1), self.geometry.word))
        for u, v in self.shown.graph.get("emits", ()):
            if u in xy and v in xy:
                # the child whose event started a sibling: an arrow beside the tree's edges
                out.append(dict(x=xy[v][0], y=xy[v][1], ax=xy[u][0], ay=xy[u][1], xref="x", yref="y",
                                axref="x", ayref="y", showarrow=True, arrowhead=2, arrowwidth=1,
                                standoff=10, startstandoff=10, text=""))
                out.append(dict(x=(xy[u][0] + xy[v][0]) / 2, y=(xy[u][1] + xy[v][1]) / 2 + 0.12, xref="x",
                                yref="y", text="<i>emits</i>", showarrow=False, font=dict(size=9)))
        return out


_MAX_TREE_ROUNDS = 12
_BADGE_KINDS = {"reused": "reuse", "re-run": "rerun", "resumed": "resume", "failed": "fail",
                _NOT_DISPATCHED: "not-dispatched"}


def _badge(attrs: Mapping[str, Any], graph: nx.DiGraph) -> str:
    """What the recovery did with an action under the graph's rule: reused / re-run / resumed / failed /
    not dispatched (no replay task reached it); "status only" when the source knows no rule."""
    outcome = attrs.get("outcome")
    if outcome is not None and not _na(outcome):
        return _OUTCOME_WORDS.get(str(outcome).upper(), str(outcome).lower())
    return _NOT_DISPATCHED if graph.graph.get("statuses_known") else "status only"


def _result_replay(producer: Mapping[str, Any], graph: nx.DiGraph) -> str:
    """How a V4 result event reaches its caller in the recovery: replayed from the child's record, or produced
    again by the child running again."""
    badge = _badge(producer, graph) if producer else "status only"
    if badge == "reused":
        return "replayed from the record"
    if badge in ("re-run", "resumed"):
        return f"produced again ({badge} child)"
    return "as recorded"


def _siblings(tree: nx.DiGraph) -> nx.DiGraph:
    """The tree with every child of a call directly under the call (siblings); the "forwards" edges (a child
    whose event started another) are kept aside in ``graph.graph["emits"]``, drawn beside the tree."""
    tree = tree.copy()
    emits = []
    for u, v, attrs in list(tree.edges(data=True)):
        if attrs.get("kind") != "forwards":
            continue
        call = _call_of(tree, u)
        if call is None:
            continue
        tree.remove_edge(u, v)
        tree.add_edge(call, v, kind="delegates", linked=True)
        emits.append((u, v))
    tree.graph["emits"] = emits
    return tree


def _call_of(tree: nx.DiGraph, node: Any) -> Any:
    seen = set()
    while node is not None and node not in seen:
        seen.add(node)
        if tree.nodes[node].get("kind") == "call":
            return node
        preds = list(tree.predecessors(node))
        node = preds[0] if preds else None
    return None


def _subagent_rounds(source: Any, key: Any) -> list[int]:
    """The rounds of ``key`` with sub-agent records, ascending."""
    frame = getattr(source, "records", None)
    if not isinstance(frame, pd.DataFrame) or key is None or "subagent_session_id" not in frame.columns:
        return []
    mine = frame[(frame["business_key"] == key).fillna(False).to_numpy(dtype=bool)]
    return sorted(int(s) for s in mine.loc[mine["subagent_session_id"].notna(), "seq"].dropna().unique())


def _edges_trace(scatter: Any, ex: np.ndarray, ey: np.ndarray, sizes: np.ndarray) -> Any:
    """One trace for every edge (NaN-separated); SVG edges end in an arrowhead just short of their target."""
    line = dict(color=colour("muted"), width=1)
    n = int(np.count_nonzero(sizes))
    if scatter is not go.Scatter or n == 0 or n > _MAX_ARROWS:
        return scatter(x=ex, y=ey, mode="lines", name="edges", hoverinfo="skip", line=line)
    # "previous": each arrowhead turns along the last segment of its edge
    return go.Scatter(x=ex, y=ey, mode="lines+markers", name="edges", hoverinfo="skip", line=line,
                      marker=dict(symbol="arrow", angleref="previous", size=sizes, color=colour("muted")))


def _wrapped(text: str) -> str:
    """Plotly text of ``text`` in short lines (escaped)."""
    return "<br>".join(plotly_text(line) for line in wrap_label(text))


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


def _match_round(text: Any, options: Mapping[str, Any]) -> str | None:
    """The round option ``text`` names: an option itself, or a typed seq ("6", " seq 6 ")."""
    typed = str(text or "").strip()
    if typed in options:
        return typed
    digits = typed.removeprefix("seq").strip()
    if digits.lstrip("-").isdigit():
        option = _round_text(int(digits))
        return option if option in options else None
    return None


def _attempts(graph: nx.DiGraph) -> list[Any]:
    return [a.get("attempt") for _, a in graph.nodes(data=True)
            if a.get("kind") == "action" and a.get("attempt") is not None]


def _positions_of(attrs: Mapping[str, Any]) -> list[int]:
    value = attrs.get("positions")
    if isinstance(value, (list, tuple)):
        return [int(v) for v in value if isinstance(v, (int, np.integer))]
    return []


def _rule_name(source: Any) -> str | None:
    rule = getattr(source, "rule", None)
    if rule is None:
        return None
    return rule_mark(rule, None).name


def _key_divergences(source: Any, key: Any) -> list[dict[str, Any]]:
    """The divergences of ``key`` in a reconstruction: id, seq, kind, trigger position, explanation, the rule,
    and what each removed, grouped by round (``seq 1 ×5, seq 2 ×6``)."""
    if key is None or not isinstance(source, ReconstructionLike):
        return []
    frame = source.divergences
    key_col = first_column(frame, "business_key", "key")
    if frame.empty or key_col is None:
        return []
    mine = frame[(frame[key_col] == key).fillna(False).to_numpy(dtype=bool)]
    removed = removed_by(source)
    rule = _rule_name(source)
    out = []
    for index, row in mine.iterrows():
        ident = row.get("id", index)
        trigger = row.get("trigger_pos")
        seq = row.get("seq")
        out.append({
            "id": ident, "seq": None if _na(seq) else int(seq), "kind": row.get("kind"), "rule": rule,
            "trigger": None if _na(trigger) else int(trigger), "explanation": row.get("explanation"),
            "removed": removed.get(ident, ""),
        })
    return out


def _divergence_hover(d: Mapping[str, Any]) -> str:
    """Escaped hover lines of one divergence: which, under which rule, its cause and what it removed."""
    head = " · ".join(str(p) for p in (f"divergence #{d['id']}", d.get("kind"),
                                        f"rule {d['rule']}" if d.get("rule") else None) if p)
    return hover([("✕", head), ("cause", d.get("explanation")), ("removed", d.get("removed") or None)])


def _divergence_text(d: Mapping[str, Any]) -> str:
    """One line: the rule, the divergence and its cause, and what it removed."""
    parts = [f"divergence #{d['id']}"]
    if d.get("rule"):
        parts.append(f"rule {d['rule']}")
    if d.get("kind"):
        parts.append(str(d["kind"]))
    text = " · ".join(parts)
    if d.get("explanation"):
        text += f": {d['explanation']}"
    if d.get("removed"):
        text += f" — removed {d['removed']}"
    return text


def _na(value: Any) -> bool:
    try:
        return value is None or bool(pd.isna(value))
    except (TypeError, ValueError):
        return False
