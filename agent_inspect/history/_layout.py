"""Deterministic layered (Sugiyama-style) layout for action graphs and call trees, with lanes and edge routes.

networkx (the one graph library the toolkit depends on, and the only one installed) has no layered layout
with edge routing, and Graphviz or grandalf would be a new dependency for a few dozen lines, so the classic
steps are written here: break cycles, longest-path layers, a virtual point per layer crossed by a long edge, barycentric
sweeps, lanes side by side. A long edge then passes its intermediate layers in a slot of its own, between
the nodes of that layer and their labels, never through them.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable
from dataclasses import dataclass, field

import networkx as nx

__all__ = ["layered_layout", "layered_drawing", "LayeredDrawing", "wrapped_drawing"]

# Empty slots between two lanes.
_LANE_GAP = 1.0
# Empty slots between two bands of a wrapped drawing: its edges climb to the next band in the middle one.
_BAND_GAP = 2.0
# How far under a row a band's edge runs to its gutter (layers): below the row's labels, above the next row.
_ROW_GUTTER = 0.8
# Slots between two edges climbing the same gutter.
_GUTTER_STEP = 0.2
# How far over its target's row a band's edge runs across to its target (layers): above the row's markers, under
# the row before it, as high over the next row as a gutter runs under a row.
_ROW_ENTRY = 1.0 - _ROW_GUTTER


@dataclass(frozen=True)
class LayeredDrawing:
    """Node positions ``{node: (x, y)}``; each edge's route (its source, a point per layer it crosses, its
    target); each lane's value and its ``(left, right)`` x extent; the number of layers.

    For example::

        drawing = ai.history.layered_drawing(ai.history.action_graph(log, "user-0011"), lane="attempt")
        drawing.layers, sorted(drawing.lanes)
    """

    positions: dict[Hashable, tuple[float, float]]
    routes: dict[tuple[Hashable, Hashable], list[tuple[float, float]]] = field(default_factory=dict)
    lanes: dict[Hashable, tuple[float, float]] = field(default_factory=dict)
    layers: int = 0
    #: a wrapped drawing (:func:`wrapped_drawing`): how far right of the first each band of layers sits (its
    #: lanes' extents are the first band's)
    band_shifts: tuple[float, ...] = (0.0,)
    #: a wrapped drawing: how far over its target's row an edge from another band runs across to it (layers; the
    #: lane titles over a band's top row sit higher)
    entry: float = 0.0


def _initial_key(graph: nx.DiGraph, node: Hashable) -> tuple[float, str]:
    # Graphs built by agent_inspect carry an integer "order" (log position); ties and foreign
    # graphs fall back to the node's text so equal graphs lay out equally whatever their build order.
    order = graph.nodes[node].get("order")
    if isinstance(order, numbers.Real) and not isinstance(order, bool) and not math.isnan(order):
        return (float(order), str(node))
    return (math.inf, str(node))


def _acyclic_edges(graph: nx.DiGraph, nodes: list[Hashable]) -> list[tuple[Hashable, Hashable]]:
    """The graph's edges without the back edges of a deterministic depth-first search."""
    index = {n: i for i, n in enumerate(nodes)}
    state: dict[Hashable, int] = {}  # 1 = on the stack, 2 = finished
    keep: list[tuple[Hashable, Hashable]] = []
    for start in nodes:
        if start in state:
            continue
        state[start] = 1
        stack = [(start, iter(sorted(graph.successors(start), key=index.__getitem__)))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
                continue
            seen = state.get(child)
            if seen == 1:
                continue  # back edge: dropping it is what makes the layering well defined
            keep.append((node, child))
            if seen is None:
                state[child] = 1
                stack.append((child, iter(sorted(graph.successors(child), key=index.__getitem__))))
    return keep


def _lane_key(value: Hashable) -> tuple[bool, str, str]:
    return (value is None, type(value).__name__, str(value))


class _Virtual:
    """A long edge's point in one layer it crosses (equal only to itself, so never to a node of the graph)."""

    __slots__ = ("edge", "depth")

    def __init__(self, edge: tuple[Hashable, Hashable], depth: int) -> None:
        self.edge, self.depth = edge, depth


def layered_layout(graph: nx.DiGraph, *, sweeps: int = 6, lane: str | None = None) -> dict[Hashable, tuple[float, float]]:
    """Positions ``{node: (x, y)}`` in layers: sources on top (``y = 0``), each edge going down.

    A node's layer is the length of the longest path reaching it (so ``y = -layer``); inside a
    layer nodes are ordered by a few barycentric sweeps to reduce crossings and centred on
    ``x = 0``. Cycles are broken deterministically. The result depends only on the graph's
    nodes, edges and their ``order`` attribute, never on timing or hashing, so a view can
    redraw the same graph in the same place. ``lane`` names a node attribute (e.g. ``"attempt"``):
    the nodes of each value are laid out side by side, in lanes of their own (see ``layered_drawing``).

    For example::

        g = ai.history.action_graph(log, "user-0011", seq=1)
        positions = ai.history.layered_layout(g)       # {node: (x, y)}, the same every time
        min(y for _, y in positions.values())
    """
    return layered_drawing(graph, sweeps=sweeps, lane=lane).positions


def layered_drawing(graph: nx.DiGraph, *, sweeps: int = 6, lane: str | None = None) -> LayeredDrawing:
    """The layered layout with each edge's route and the lanes' extents.

    An edge spanning several layers gets a virtual point in every layer between its ends, ordered with the
    nodes of that layer, so its route keeps a slot of its own there. With ``lane``, layers are shared (a
    layer is one height across lanes) and each lane orders and centres its own nodes; lanes are placed left
    to right by value (None last), a slot apart.

    For example::

        g = ai.history.action_graph(log, "user-0011")
        drawing = ai.history.layered_drawing(g, lane="attempt")   # attempts side by side
        len(drawing.positions), len(drawing.routes)
    """
    nodes = sorted(graph.nodes, key=lambda n: _initial_key(graph, n))
    if not nodes:
        return LayeredDrawing({})
    edges = [(u, v) for u, v in _acyclic_edges(graph, nodes) if u != v]
    preds: dict[Hashable, list[Hashable]] = {n: [] for n in nodes}
    succs: dict[Hashable, list[Hashable]] = {n: [] for n in nodes}
    for u, v in edges:
        preds[v].append(u)
        succs[u].append(v)

    layer: dict[Hashable, int] = {}
    indegree = {n: len(preds[n]) for n in nodes}
    ready = [n for n in nodes if indegree[n] == 0]
    while ready:
        node = ready.pop()
        layer[node] = max((layer[p] + 1 for p in preds[node]), default=0)
        for s in succs[node]:
            indegree[s] -= 1
            if indegree[s] == 0:
                ready.append(s)
    lane_of = {n: (graph.nodes[n].get(lane) if lane else None) for n in nodes}

    # long edges: a virtual point per layer crossed, in the lane of the edge's source
    chains: dict[tuple[Hashable, Hashable], list[Hashable]] = {}
    order = list(nodes)
    for u, v in edges:
        if layer[v] - layer[u] <= 1:
            continue
        chain: list[Hashable] = [u]
        for depth in range(layer[u] + 1, layer[v]):
            point = _Virtual((u, v), depth)
            layer[point], lane_of[point] = depth, lane_of[u]
            preds[point], succs[point] = [chain[-1]], []
            succs[chain[-1]].append(point)
            order.append(point)
            chain.append(point)
        succs[u].remove(v)
        preds[v].remove(u)
        succs[chain[-1]].append(v)
        preds[v].append(chain[-1])
        chains[(u, v)] = chain[1:]

    n_layers = max(layer.values()) + 1
    lanes = sorted({lane_of[n] for n in order}, key=_lane_key)
    positions: dict[Hashable, tuple[float, float]] = {}
    extents: dict[Hashable, tuple[float, float]] = {}
    left = 0.0
    for value in lanes:
        rows: list[list[Hashable]] = [[] for _ in range(n_layers)]
        for node in order:  # nodes first, in initial order; virtual points after them
            if lane_of[node] == value:
                rows[layer[node]].append(node)
        width = _order_rows(rows, preds, succs, lane_of, value, sweeps)
        for depth, row in enumerate(rows):
            offset = (width - len(row)) / 2
            for i, node in enumerate(row):
                positions[node] = (left + offset + i, float(-depth))
        extents[value] = (left, left + width - 1)
        left += width + _LANE_GAP
    # centre the drawing on x = 0
    shift = (left - _LANE_GAP - 1) / 2
    positions = {n: (x - shift, y) for n, (x, y) in positions.items()}
    extents = {v: (a - shift, b - shift) for v, (a, b) in extents.items()}
    routes = {(u, v): [positions[u], *(positions[p] for p in chains.get((u, v), ())), positions[v]]
              for u, v in graph.edges if u != v}
    return LayeredDrawing({n: positions[n] for n in nodes}, routes, extents if lane else {}, n_layers)


def _order_rows(rows: list[list[Hashable]], preds: dict[Hashable, list[Hashable]],
                succs: dict[Hashable, list[Hashable]], lane_of: dict[Hashable, Hashable], value: Hashable,
                sweeps: int) -> int:
    """Order each layer of one lane by barycentric sweeps (neighbours in the lane only); its width in slots."""
    rank = {n: i for row in rows for i, n in enumerate(row)}

    def sweep(ordered: list[list[Hashable]], neighbours: dict[Hashable, list[Hashable]]) -> None:
        for row in ordered:
            def bary(n: Hashable) -> tuple[float, int]:
                near = [m for m in neighbours[n] if lane_of[m] == value]
                if not near:
                    return (float(rank[n]), rank[n])
                return (sum(rank[m] for m in near) / len(near), rank[n])

            row.sort(key=bary)
            for i, n in enumerate(row):
                rank[n] = i

    for _ in range(max(sweeps, 0)):
        sweep(rows[1:], preds)
        sweep(rows[-2::-1], succs)
    sweep(rows[1:], preds)
    return max((len(row) for row in rows), default=0)


def wrapped_drawing(drawing: LayeredDrawing, rows: int) -> LayeredDrawing:
    """``drawing`` with its layers wrapped into bands of ``rows`` layers, side by side (a tall chain of rounds
    reads as columns, like a newspaper's). Each band keeps every lane, in the same order and extent.

    An edge inside one band keeps its route. An edge to a later band leaves its source downwards, runs under
    the source's row to the gutter right of the band, climbs it to just over its target's row, runs across over
    the row's markers and enters the target from above, so it crosses no label (labels hang under their node) and
    no other node of the target's row.

    For example::

        g = ai.history.group_graph(ai.history.action_graph(log, "user-0011"), expanded=[ai.history.attempt_group(1)])
        tall = ai.history.layered_drawing(g, lane="attempt")
        wide = ai.history.wrapped_drawing(tall, rows=4)
        tall.layers, wide.layers, wide.band_shifts
    """
    rows = max(int(rows), 1)
    if drawing.layers <= rows or not drawing.positions:
        return drawing
    bands = -(-drawing.layers // rows)
    xs = [x for x, _ in drawing.positions.values()] + [x for ext in drawing.lanes.values() for x in ext]
    width = max(xs) - min(xs) + 1
    shifts = tuple(b * (width + _BAND_GAP) for b in range(bands))
    centre = shifts[-1] / 2

    def band(y: float) -> int:
        return min(int(round(-y)) // rows, bands - 1)

    def place(point: tuple[float, float]) -> tuple[float, float]:
        x, y = point
        b = band(y)
        return (x + shifts[b] - centre, y + b * rows)

    positions = {n: place(p) for n, p in drawing.positions.items()}
    routes: dict[tuple[Hashable, Hashable], list[tuple[float, float]]] = {}
    climbing: dict[int, int] = {}              # edges climbing each band's gutter so far
    for (u, v), route in sorted(drawing.routes.items(), key=lambda item: (positions[item[0][1]], str(item[0]))):
        bu, bv = band(drawing.positions[u][1]), band(drawing.positions[v][1])
        if bu == bv:
            routes[(u, v)] = [place(p) for p in route]
            continue
        (xu, yu), (xv, yv) = positions[u], positions[v]
        # midway to the next band; a second edge in the same gutter climbs beside the first, not on it
        k = climbing[bu] = climbing.get(bu, -1) + 1
        gutter = max(xs) + shifts[bu] + (1 + _BAND_GAP) / 2 - centre + _GUTTER_STEP * (k % 4)
        routes[(u, v)] = [(xu, yu), (xu, yu - _ROW_GUTTER), (gutter, yu - _ROW_GUTTER), (gutter, yv + _ROW_ENTRY),
                          (xv, yv + _ROW_ENTRY), (xv, yv)]
    lanes = {k: (a - centre, b - centre) for k, (a, b) in drawing.lanes.items()}
    return LayeredDrawing(positions, routes, lanes, rows, shifts, _ROW_ENTRY)
