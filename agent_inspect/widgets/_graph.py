"""Action graph and sub-agent tree views over the networkx graphs of a reconstruction."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as w
import networkx as nx
import numpy as np
import plotly.graph_objects as go

from agent_inspect._html import escape
from agent_inspect.widgets._common import colour_for, decoded_value, hover, log_of, message_html, value_html

__all__ = ["GraphView", "SubagentTreeView"]

_SYMBOLS = {
    "event": "circle", "action": "square", "execution": "square", "caller": "diamond", "session": "triangle-up",
    "call": "star", "child": "square", "unattributed": "x", "round": "hexagon",
}
_KIND_ATTRS = ("kind", "type", "node_type")
_LABEL_ATTRS = ("label", "name", "action", "event_type", "task_event_type")
_POS_ATTRS = ("positions", "pos", "position", "record")
_REMOVED = ("evicted", "invalidated")
_HOVER_ATTRS = (
    "label", "kind", "status", "reason", "business_key", "seq", "attempt", "state_key", "action_name",
    "event_type", "task_event_type", "event_id", "completed", "calls_pending", "calls_succeeded", "calls_failed",
    "positions", "target_scope", "session_id", "call_id", "call_status", "function_id",
)
# Above this many nodes, labels are left to hover text to keep the figure readable and light.
_MAX_LABELS = 80


class GraphView(w.VBox):
    """One round's action graph: events and action executions, laid out in layers.

    Node colour = status under the rule (evicted and invalidated nodes stay visible, outlined in
    red), symbol = node kind (event ●, action ■, sub-agent caller ◆, session ▲, call ★). Click a
    node to see its attributes and its record's decoded value.
    """

    _css = "ai-graph"
    _what = "action graph"

    def __init__(self, source: Any, key: Any = None, seq: int | None = None, *, attempt: int | None = None,
                 graph: nx.DiGraph | None = None, height: int = 460) -> None:
        super().__init__()
        self.add_class(self._css)
        self._source = source
        self.graph = graph if graph is not None else self._build(source, key, seq, attempt)
        self.key, self.seq = key, seq
        self.positions = _layout(self.graph)
        self.selected_node: Any = None
        where = "" if key is None else f" of key <code>{escape(key)}</code>" + ("" if seq is None else f", seq {escape(seq)}")
        self.title = w.HTML(f'<div class="ai-title">{escape(self._what)}{where} · '
                            f"{self.graph.number_of_nodes():,} nodes, {self.graph.number_of_edges():,} edges</div>")
        self.detail = w.HTML(message_html("click a node to see its attributes"))
        self.detail.add_class("ai-detail")
        self.figure = go.FigureWidget(layout=go.Layout(
            height=height, margin=dict(l=10, r=10, t=20, b=10), hovermode="closest", showlegend=True,
            xaxis=dict(visible=False), yaxis=dict(visible=False),
            legend=dict(orientation="h", y=1.06)))
        self.figure.add_class(f"{self._css}-figure")
        self._draw()
        self.children = [self.title, self.figure, self.detail]

    def _build(self, source: Any, key: Any, seq: int | None, attempt: int | None) -> nx.DiGraph:
        if attempt is None:
            return source.graph(key, seq)
        return source.graph(key, seq, attempt=attempt)

    def select(self, node: Any) -> None:
        """Show the attributes of ``node`` and the decoded value of its (first) record."""
        self.selected_node = node
        attrs = dict(self.graph.nodes[node])
        parts = [value_html(f"node {node}", {str(k): _jsonable(v) for k, v in attrs.items()})]
        pos = _first_position(attrs)
        if pos is not None and log_of(self._source) is not None:
            parts.append(value_html(f"record {pos}", decoded_value(self._source, pos)))
        self.detail.value = "".join(parts)

    # -- drawing ----------------------------------------------------------------------------------

    def _draw(self) -> None:
        g, xy = self.graph, self.positions
        self._nodes = list(g.nodes)
        index = {n: i for i, n in enumerate(self._nodes)}
        traces: list[Any] = []
        ex: list[float | None] = []
        ey: list[float | None] = []
        for u, v in g.edges:
            ex += [xy[u][0], xy[v][0], None]
            ey += [xy[u][1], xy[v][1], None]
        traces.append(go.Scattergl(x=ex, y=ey, mode="lines", name="edges", hoverinfo="skip",
                                   line=dict(color="#999", width=1)))
        groups: dict[tuple[str, str], list[Any]] = {}
        for node in self._nodes:
            attrs = g.nodes[node]
            groups.setdefault((_status(attrs), _kind(attrs)), []).append(node)
        show_labels = len(self._nodes) <= _MAX_LABELS
        for (status, kind), nodes in sorted(groups.items()):
            removed = status in _REMOVED
            traces.append(go.Scattergl(
                x=[xy[n][0] for n in nodes], y=[xy[n][1] for n in nodes],
                mode="markers+text" if show_labels else "markers", name=escape(f"{kind} · {status}"),
                text=[escape(_label(n, g.nodes[n])) for n in nodes] if show_labels else None,
                textposition="bottom center", textfont=dict(size=9),
                customdata=[index[n] for n in nodes],
                marker=dict(symbol=_SYMBOLS.get(kind, "circle"), size=12, color=colour_for(status),
                            line=dict(color="#d62728" if removed else "#333", width=2 if removed else 0.5)),
                hovertext=[_node_hover(n, g.nodes[n]) for n in nodes], hoverinfo="text"))
        with self.figure.batch_update():
            for trace in traces:
                self.figure.add_trace(trace)
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

    def __init__(self, source: Any, key: Any = None, seq: int | None = None, *, graph: nx.DiGraph | None = None,
                 height: int = 460) -> None:
        super().__init__(source, key, seq, graph=graph, height=height)

    def _build(self, source: Any, key: Any, seq: int | None, attempt: int | None) -> nx.DiGraph:
        return source.subagent_tree(key, seq)


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
    try:
        from agent_inspect.history import layered_layout
    except ImportError:
        layered_layout = None
    if layered_layout is not None:
        return {n: (float(x), float(y)) for n, (x, y) in layered_layout(graph).items()}
    # Until the history layer ships its layout: topological layers, nodes ordered by name.
    layers = list(nx.topological_generations(graph)) if nx.is_directed_acyclic_graph(graph) else [list(graph)]
    return {n: (float(i), -float(layer)) for layer, nodes in enumerate(layers)
            for i, n in enumerate(sorted(nodes, key=str))}
