"""Level of detail for big action graphs: nodes folded into attempt, round-range and round groups.

A key with thousands of rounds draws as one node per attempt; expanding an attempt shows its rounds
(in at most ``MAX_CHILDREN`` ranges of consecutive rounds when it has more), expanding a round shows
its events and actions. Edges between folded nodes become one edge per pair
of groups, with a ``count``. Pure function over a networkx graph.

Rounds of one key share few edges (a round's input comes from the source, not from an earlier round), so a
folded graph also draws the order the data implies between its groups (``GROUP_EDGE_KINDS``): within an
attempt, each round runs after the previous one (the key's mailbox takes one input at a time: ``next``);
a later attempt runs a round an earlier one had already written (``reruns``: same seq, a restore replayed
it); a later attempt with no round in common with the earlier one starts after it (``restarts``). Edges of
the members that cross groups (an event emitted in one round and handled in another, a sub-agent call and
its result) keep their own kind.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Hashable
from typing import Any

import networkx as nx

from agent_inspect._glossary import plural

__all__ = ["group_graph", "graph_groups", "attempt_group", "range_group", "round_group", "MAX_CHILDREN",
           "GROUP_EDGE_KINDS"]

MAX_CHILDREN = 40
"""An attempt with more rounds than this shows them in this many ranges of consecutive rounds."""

GROUP_EDGE_KINDS = {
    "next": "the next round of the same attempt (a key's inputs run one at a time)",
    "reruns": "a later attempt ran this seq again after a restore",
    "restarts": "a later attempt, with no round in common, started after this one",
}
"""What an edge between two folded groups stands for, by its ``kind`` (member edges keep theirs)."""

# The most telling status of a group's members first.
_SEVERITY = ("evicted", "invalidated", "not-in-log", "pruned", "in-flight", "superseded", "live")


def attempt_group(attempt: int) -> tuple[str, int]:
    """The id of the group node of one attempt.

    For example::

        ai.history.attempt_group(2)                    # the id of attempt 2's group node in a grouped graph
    """
    return ("attempt", attempt)


def range_group(attempt: int, first: int, last: int) -> tuple[str, int, int, int]:
    """The id of the group node of the rounds ``first``..``last`` of one attempt.

    For example::

        ai.history.range_group(1, 0, 4)                # the group node of rounds 0..4 of attempt 1
    """
    return ("rounds", attempt, first, last)


def round_group(attempt: int, seq: int) -> tuple[str, int, int]:
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
    layout); an edge between two groups carries ``kind``, ``count`` (the edges it stands for) and ``kinds``
    (count per kind): the members' own edges across groups and the order of rounds and attempts
    (``GROUP_EDGE_KINDS``), so a folded graph keeps its shape.

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
        if (ru, rv) == (u, v):
            out.add_edge(u, v, **graph.edges[u, v], count=1)
        else:
            _count_edge(out, ru, rv, str(graph.edges[u, v].get("kind") or "edge"))
    member_of = {rnd: node for node, (_, _, rnd) in groups.items()}
    for a, b, kind in _order_edges(graph):
        ra, rb = rep(member_of[a]), rep(member_of[b])
        if ra != rb and ra in members and rb in members:      # between folded groups only
            _count_edge(out, ra, rb, kind)
    return out


def _count_edge(out: nx.DiGraph, u: Hashable, v: Hashable, kind: str) -> None:
    """Add one edge of ``kind`` to the group edge u → v (its ``kind`` is the most frequent of its ``kinds``)."""
    if not out.has_edge(u, v):
        out.add_edge(u, v, kind=kind, count=0, kinds={})
    attrs = out.edges[u, v]
    kinds = attrs.setdefault("kinds", {})
    kinds[kind] = kinds.get(kind, 0) + 1
    attrs["count"] = attrs.get("count", 0) + 1
    attrs["kind"] = max(kinds, key=lambda k: (kinds[k], k))


def _order_edges(graph: nx.DiGraph) -> list[tuple[Hashable, Hashable, str]]:
    """(round group, round group, kind) for the order the data implies: each attempt's rounds in seq order
    (``next``), a round run again by the next attempt that has it (``reruns``), else the last round of an
    attempt before the first of the next (``restarts``)."""
    seqs: dict[Any, set[Any]] = {}
    for _, attrs in graph.nodes(data=True):
        if attrs.get("seq") is not None:
            seqs.setdefault(attrs.get("attempt"), set()).add(attrs["seq"])
    order = sorted(seqs, key=lambda a: (a is None, str(type(a)), a if a is not None else 0))
    ordered = {a: sorted(seqs[a], key=lambda v: (str(type(v)), v)) for a in order}
    out: list[tuple[Hashable, Hashable, str]] = []
    for a in order:
        rounds = ordered[a]
        out += [(round_group(a, s), round_group(a, t), "next") for s, t in zip(rounds, rounds[1:], strict=False)]
    for a, b in zip(order, order[1:], strict=False):
        shared = [s for s in ordered[a] if s in seqs[b]]
        if shared:
            out += [(round_group(a, s), round_group(b, s), "reruns") for s in shared]
        else:
            out.append((round_group(a, ordered[a][-1]), round_group(b, ordered[b][0]), "restarts"))
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
        label = f"seq {seq}{of} · {plural(actions, 'action')}"
    elif kind == "rounds":
        seq = None
        label = f"seq {parts[2]}–{parts[3]}{of} · {plural(len(rounds), 'round')} · {plural(actions, 'action')}"
    else:
        seq = None
        label = f"attempt {attempt} · {plural(len(rounds), 'round')} · {plural(actions, 'action')}"
    # which groups hold a divergence point or removed actions, readable without hovering
    removed = statuses.get("evicted", 0) + statuses.get("invalidated", 0)
    if removed:
        label += f" · {removed} removed"
    if divergences:
        label += f" · ✕ {plural(len(divergences), 'divergence')}"
    return {
        "kind": kind, "label": label, "seq": seq, "attempt": attempt, "members": len(nodes), "actions": actions,
        "rounds": len(rounds), "statuses": dict(statuses), "status": status, "divergences": tuple(divergences),
        "order": min(orders) if orders else None, "group": True,
    }
