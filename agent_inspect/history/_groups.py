"""Level of detail for big action graphs: nodes folded into attempt, round-range and round groups.

A key with thousands of rounds draws as one node per attempt; expanding an attempt shows its rounds
(in at most ``MAX_CHILDREN`` ranges of consecutive rounds when it has more), expanding a round shows
its events and actions. Edges between folded nodes become one edge per pair
of groups, with a ``count``. Pure function over a networkx graph.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Hashable
from typing import Any

import networkx as nx

__all__ = ["group_graph", "graph_groups", "attempt_group", "range_group", "round_group", "MAX_CHILDREN"]

MAX_CHILDREN = 40
"""An attempt with more rounds than this shows them in this many ranges of consecutive rounds."""

# The most telling status of a group's members first.
_SEVERITY = ("evicted", "invalidated", "not-in-log", "pruned", "in-flight", "superseded", "live")


def attempt_group(attempt: Any) -> tuple[str, Any]:
    """The id of the group node of one attempt.

    For example::

        ai.history.attempt_group(2)                    # the id of attempt 2's group node in a grouped graph
    """
    return ("attempt", attempt)


def range_group(attempt: Any, first: Any, last: Any) -> tuple[str, Any, Any, Any]:
    """The id of the group node of the rounds ``first``..``last`` of one attempt.

    For example::

        ai.history.range_group(1, 0, 4)                # the group node of rounds 0..4 of attempt 1
    """
    return ("rounds", attempt, first, last)


def round_group(attempt: Any, seq: Any) -> tuple[str, Any, Any]:
    """The id of the group node of one round (``seq``) of one attempt.

    For example::

        ai.history.round_group(1, 3)                   # the group node of round 3 of attempt 1
    """
    return ("round", attempt, seq)


def graph_groups(graph: nx.DiGraph) -> dict[Hashable, tuple[Hashable, Hashable | None, Hashable]]:
    """Node → (its attempt group, its round-range group or None, its round group); nodes without a seq
    stay out of every group.

    For example::

        g = ai.history.action_graph(log, "user-0011")
        list(ai.history.graph_groups(g).items())[:2]   # node -> (attempt group, range group, round group)
    """
    seqs: dict[Any, set[Any]] = {}
    for _, attrs in graph.nodes(data=True):
        if attrs.get("seq") is not None:
            seqs.setdefault(attrs.get("attempt"), set()).add(attrs["seq"])
    chunk_of: dict[tuple[Any, Any], Hashable] = {}
    for attempt, values in seqs.items():
        ordered = sorted(values, key=lambda v: (str(type(v)), v))
        if len(ordered) <= MAX_CHILDREN:
            continue
        size = -(-len(ordered) // MAX_CHILDREN)
        for i in range(0, len(ordered), size):
            part = ordered[i:i + size]
            group = range_group(attempt, part[0], part[-1])
            for seq in part:
                chunk_of[(attempt, seq)] = group
    out: dict[Hashable, tuple[Hashable, Hashable | None, Hashable]] = {}
    for node, attrs in graph.nodes(data=True):
        seq = attrs.get("seq")
        if seq is None:
            continue
        attempt = attrs.get("attempt")
        out[node] = (attempt_group(attempt), chunk_of.get((attempt, seq)), round_group(attempt, seq))
    return out


def group_graph(graph: nx.DiGraph, expanded: Collection[Hashable] = ()) -> nx.DiGraph:
    """``graph`` with every node folded into its attempt's group node, or its round's when that attempt
    is in ``expanded``, or left as it is when its round is expanded too.

    With a single attempt, rounds are the top level. Group nodes carry ``kind`` (``attempt`` or
    ``round``), ``label``, ``seq``, ``attempt``, ``members``, ``actions``, ``statuses`` (counts),
    ``status`` (the most telling of their members'), ``divergences`` and ``order`` (for the layered
    layout); an edge between two groups carries ``count``, the edges it stands for.

    For example::

        g = ai.history.action_graph(log, "user-0011")
        folded = ai.history.group_graph(g)             # one node per attempt
        expanded = ai.history.group_graph(g, expanded=[ai.history.attempt_group(1)])   # attempt 1 by round
        folded.number_of_nodes(), expanded.number_of_nodes()
    """
    groups = graph_groups(graph)
    single = len({a for a, _, _ in groups.values()}) <= 1
    expanded = set(expanded)

    def rep(node: Hashable) -> Hashable:
        if node not in groups:
            return node
        attempt, chunk, rnd = groups[node]
        if not single and attempt not in expanded:
            return attempt
        if chunk is not None and chunk not in expanded:
            return chunk
        return node if rnd in expanded else rnd

    out = nx.DiGraph(**graph.graph)
    members: dict[Hashable, list[Hashable]] = {}
    for node in graph.nodes:
        r = rep(node)
        if r == node:
            out.add_node(node, **graph.nodes[node])
        else:
            members.setdefault(r, []).append(node)
    for group, nodes in members.items():
        out.add_node(group, **_group_attributes(graph, group, nodes))
    for u, v in graph.edges:
        ru, rv = rep(u), rep(v)
        if ru == rv:
            continue
        if out.has_edge(ru, rv):
            out.edges[ru, rv]["count"] += 1
        else:
            out.add_edge(ru, rv, **({**graph.edges[u, v], "count": 1} if (ru, rv) == (u, v) else
                                    {"kind": "grouped", "count": 1}))
    return out


def _group_attributes(graph: nx.DiGraph, group: Hashable, nodes: list[Hashable]) -> dict[str, Any]:
    attrs = [graph.nodes[n] for n in nodes]
    parts: tuple[Any, ...] = group if isinstance(group, tuple) else (group,)
    kind = group[0] if isinstance(group, tuple) else "group"
    statuses = Counter(str(a.get("status") or "live") for a in attrs if a.get("kind") == "action")
    status = next((s for s in _SEVERITY if statuses.get(s)), None) or (statuses.most_common(1)[0][0]
                                                                        if statuses else "live")
    actions = sum(1 for a in attrs if a.get("kind") == "action")
    rounds = {a.get("seq") for a in attrs}
    divergences = sorted({d for a in attrs for d in (a.get("divergences") or ())}, key=str)
    orders = [a["order"] for a in attrs if isinstance(a.get("order"), (int, float))]
    attempt = group[1] if isinstance(group, tuple) and len(group) > 1 else None
    of = "" if attempt is None else f" · attempt {attempt}"
    if kind == "round":
        seq = parts[2]
        label = f"seq {seq}{of} · {actions} actions"
    elif kind == "rounds":
        seq = None
        label = f"seq {parts[2]}–{parts[3]}{of} · {len(rounds)} rounds · {actions} actions"
    else:
        seq = None
        label = f"attempt {attempt} · {len(rounds)} rounds · {actions} actions"
    return {
        "kind": kind, "label": label, "seq": seq, "attempt": attempt, "members": len(nodes), "actions": actions,
        "rounds": len(rounds), "statuses": dict(statuses), "status": status, "divergences": tuple(divergences),
        "order": min(orders) if orders else None, "group": True,
    }
