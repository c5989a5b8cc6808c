"""Deterministic layered (Sugiyama-style) layout for action graphs and call trees."""

from __future__ import annotations

import math
import numbers
from collections.abc import Hashable

import networkx as nx

__all__ = ["layered_layout"]


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


def layered_layout(graph: nx.DiGraph, *, sweeps: int = 6) -> dict[Hashable, tuple[float, float]]:
    """Positions ``{node: (x, y)}`` in layers: sources on top (``y = 0``), each edge going down.

    A node's layer is the length of the longest path reaching it (so ``y = -layer``); inside a
    layer nodes are ordered by a few barycentric sweeps to reduce crossings and centred on
    ``x = 0``. Cycles are broken deterministically. The result depends only on the graph's
    nodes, edges and their ``order`` attribute, never on timing or hashing, so a view can
    redraw the same graph in the same place.

    For example::

        g = ai.history.action_graph(log, "user-0011", seq=1)
        positions = ai.history.layered_layout(g)       # {node: (x, y)}, the same every time
        min(y for _, y in positions.values())
    """
    nodes = sorted(graph.nodes, key=lambda n: _initial_key(graph, n))
    if not nodes:
        return {}
    edges = _acyclic_edges(graph, nodes)
    preds: dict[Hashable, list[Hashable]] = {n: [] for n in nodes}
    succs: dict[Hashable, list[Hashable]] = {n: [] for n in nodes}
    for u, v in edges:
        if u != v:
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

    layers: list[list[Hashable]] = [[] for _ in range(max(layer.values()) + 1)]
    for node in nodes:  # already in initial order, so each layer starts sorted
        layers[layer[node]].append(node)
    rank = {n: i for row in layers for i, n in enumerate(row)}

    def sweep(rows: list[list[Hashable]], neighbours: dict[Hashable, list[Hashable]]) -> None:
        for row in rows:
            def bary(n: Hashable) -> tuple[float, int]:
                near = neighbours[n]
                if not near:
                    return (float(rank[n]), rank[n])
                return (sum(rank[m] for m in near) / len(near), rank[n])

            row.sort(key=bary)
            for i, n in enumerate(row):
                rank[n] = i

    for _ in range(max(sweeps, 0)):
        sweep(layers[1:], preds)
        sweep(layers[-2::-1], succs)
    sweep(layers[1:], preds)

    positions: dict[Hashable, tuple[float, float]] = {}
    for depth, row in enumerate(layers):
        offset = (len(row) - 1) / 2
        for i, node in enumerate(row):
            positions[node] = (float(i - offset), float(-depth))
    return positions

