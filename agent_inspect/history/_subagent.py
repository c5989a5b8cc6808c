"""Sub-agent call trees of one round, rebuilt from action states alone (spec §11.5)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from agent_inspect._types import LogLike, ReconstructionLike
from agent_inspect.history._graph import EVICTED_STATUSES, action_attributes
from agent_inspect.history._graph_data import (
    Execution,
    KeyData,
    event_attributes,
    first_attr,
    load_key,
    task_event,
)
from agent_inspect.history._results import subagent_result_events

__all__ = ["subagent_tree", "tree_lanes", "CALL_STATUSES", "ATTRIBUTIONS"]

CALL_STATUSES = ("done", "in-flight", "consumed")
"""``call_status`` values of call nodes (spec §11.5 step 5)."""

ATTRIBUTIONS = ("call-result", "namespace-digest", "upstream-event", "unattributed")
"""How a session was tied to its caller, strongest first."""

_SUBAGENT_TYPE = "InternalSubagentCallEvent"
_TERMINAL = frozenset({"SUCCEEDED", "FAILED"})


@dataclass(slots=True)
class _Child:
    ex: Execution
    session_id: str
    call_id: str
    scope: str | None
    delegate_type: str | None
    upstream_event_id: str | None
    upstream_action: str | None
    parent: str | None = None  # node of the emitting child, when the event was forwarded
    role: str = "bootstrap"


@dataclass(slots=True)
class _Session:
    session_id: str
    scope: str | None
    calls: dict[str, list[_Child]] = field(default_factory=dict)
    caller: Execution | None = None
    attribution: str = "unattributed"


def _subagent_fields(data: KeyData, ex: Execution) -> tuple[str, str, str | None, str | None] | None:
    first = ex.first
    session, call = first.get("subagent_session_id"), first.get("subagent_call_id")
    scope = first.get("subagent_scope")
    if session is None and first.get("task_event_type") != _SUBAGENT_TYPE:
        return None
    event = task_event(data, ex)
    attrs = event_attributes(event) if event is not None else {}
    session = session or attrs.get("sessionId")
    call = call or attrs.get("callId")
    scope = scope or attrs.get("targetScope")
    if not isinstance(session, str) or not isinstance(call, str):
        return None
    delegate = event.delegate if event is not None else None
    delegate_type = first_attr(delegate, "type", "event_type") if delegate is not None else attrs.get("delegateType")
    return session, call, scope, delegate_type


def _digest_of(session_id: str) -> str:
    return session_id.rsplit("-", 1)[0]


def _trigger_variants(data: KeyData, ex: Execution) -> list[tuple[str, Any]]:
    """(event type, attributes) pairs a caller's namespace may have been computed from."""
    event = task_event(data, ex)
    if event is None:
        return []
    etype = ex.first.get("task_event_type") or first_attr(event, "type", "event_type")
    attrs = event_attributes(event)
    variants = [(etype, attrs)] if isinstance(etype, str) else []
    if etype == _SUBAGENT_TYPE:
        # A nested caller is a child action; its runner context may expose the delegate instead.
        dtype, dattrs = attrs.get("delegateType"), attrs.get("delegateAttributes")
        if isinstance(dtype, str):
            variants.append((dtype, dattrs if dattrs is not None else {}))
    return variants


def _latest_by_state_key(executions: Iterable[Execution]) -> dict[Any, Execution]:
    latest: dict[Any, Execution] = {}
    for ex in executions:
        cur = latest.get(ex.state_key)
        if cur is None or ex.positions[-1] > cur.positions[-1]:
            latest[ex.state_key] = ex
    return latest


class _Digests:
    """Namespace digests of candidate callers, computed once per (caller, agent name) and only on demand."""

    def __init__(self, data: KeyData, candidates: list[Execution], key_text: str | None) -> None:
        self._data, self._key_text = data, key_text
        self._candidates = [ex for ex in candidates if ex.action_name is not None and ex.seq is not None]
        self._by_agent: dict[str | None, dict[str, list[Execution]]] = {}

    def callers(self, digest: str, agent: str | None) -> list[Execution]:
        if self._key_text is None:
            return []
        table = self._by_agent.get(agent)
        if table is None:
            from agent_inspect.codec import subagent_namespace_digest

            table = self._by_agent[agent] = {}
            for ex in self._candidates:
                seq, action = ex.seq, ex.action_name
                if seq is None or action is None:    # candidates have both (see __init__)
                    continue
                for etype, attrs in _trigger_variants(self._data, ex):
                    try:
                        value = subagent_namespace_digest(self._key_text, seq, action, etype, attrs, agent)
                    except Exception:  # noqa: BLE001 - attributes the codec cannot canonicalize: no match
                        continue
                    table.setdefault(value, []).append(ex)
        return table.get(digest, [])


def _journal_ids(data: KeyData, ex: Execution) -> set[str]:
    """Every function id in any call journal an execution wrote (a mismatch may have cut the last one)."""
    ids = {fid for fid, _ in ex.call_functions}
    for row in ex.rows:
        if row.get("call_count"):
            state = data.value(row["pos"])
            if state is not None:
                ids.update(c.function_id for c in state.call_results)
    return ids


def _attribute(
    data: KeyData, session: _Session, candidates: list[Execution], own: set[str], digests: _Digests
) -> None:
    function_ids = {f"{session.session_id}#{cid}" for cid in session.calls}
    by_result = [
        ex for ex in candidates
        if ex.node not in own and any(fid in function_ids for fid, _ in ex.call_functions)
    ] or [
        ex for ex in candidates
        if ex.node not in own and len(ex.rows) > 1 and function_ids & _journal_ids(data, ex)
    ]
    if by_result:
        session.caller, session.attribution = max(by_result, key=lambda e: e.positions[-1]), "call-result"
        return

    digest = _digest_of(session.session_id)
    for agent in (session.scope, None):  # agentName is optional in the namespace (spec §11.2)
        matched = [ex for ex in digests.callers(digest, agent) if ex.node not in own]
        if matched:
            session.caller = max(matched, key=lambda e: e.positions[-1])
            session.attribution = "namespace-digest"
            return

    for children in session.calls.values():
        for child in children:
            if child.role != "bootstrap" or not child.upstream_event_id:
                continue
            hits = [
                ex for ex in candidates
                if ex.node not in own and ex.first.get("task_event_id") == child.upstream_event_id
                and (child.upstream_action is None or ex.action_name in (None, child.upstream_action))
            ]
            if len({ex.state_key for ex in hits}) == 1:
                session.caller = max(hits, key=lambda e: e.positions[-1])
                session.attribution = "upstream-event"
                return


def _common_status(statuses: Iterable[str]) -> str:
    values = set(statuses)
    if not values:
        return "unknown"
    return values.pop() if len(values) == 1 else "mixed"


def subagent_tree(
    source: LogLike | ReconstructionLike,
    key: str,
    seq: int,
    *,
    action_names: Mapping[str, str] | Iterable[str] | None = None,
    key_text: str | None = None,
    kafka_pending: str | None = None,
) -> nx.DiGraph:
    """The sub-agent call tree of round ``seq`` of ``key``: round → caller → session → call → child actions.

    Built from the records alone (spec §11.5). Child actions are the executions whose taskEvent is an
    ``InternalSubagentCallEvent``, grouped by ``sessionId``/``callId``; the bootstrap child hangs under its
    call node and each forwarded child under the child that emitted its event. A session's caller is the
    execution holding a ``<sessionId>#<callId>`` call result, else the round's execution whose recomputed
    namespace digest matches the session id (needs the key text: pass ``key_text=`` for K1.6/K2 keys, and
    the caller's name, from its outputs or ``action_names=``), else the action that triggered the bootstrap
    (``upstreamEventId``); otherwise the session hangs under an ``"unattributed"`` node. A child that calls
    further sub-agents is the caller of the next level (``level``, ``target_scope``). Call nodes carry
    ``call_status`` (done / in-flight / consumed) and ``attribution``; every node carries ``status`` under
    the source's rule and ``evicted`` (True when it, or a node under it, was evicted or invalidated). A log's
    refresh rows are no executions, as :func:`executions` reads them under ``kafka_pending``.

    For example::

        tree = ai.history.subagent_tree(log, "user-0011", 1)   # round -> caller -> session -> call -> children
        tree.number_of_nodes()
    """
    data = load_key(source, key, seq=seq, action_names=action_names, kafka_pending=kafka_pending)
    key_text = key_text if key_text is not None else data.key_text
    root = f"round:{seq}"
    tree = nx.DiGraph(business_key=data.business_key, key_text=key_text, seq=seq, rule=data.rule,
                      statuses_known=data.has_status)
    tree.add_node(root, kind="round", label=f"{data.business_key} · seq {seq}", status=None, order=-1.0,
                  business_key=data.business_key, seq=seq)

    children: list[_Child] = []
    for ex in data.executions:
        fields = _subagent_fields(data, ex)
        if fields is not None:
            children.append(_Child(ex, *fields, upstream_event_id=ex.first.get("upstream_event_id"),
                                   upstream_action=ex.first.get("upstream_action")))
    child_nodes = {c.ex.node for c in children}

    emitted_by: dict[str, str] = {}
    for ex in data.executions:
        for out in ex.outputs:
            if out.event_id:
                emitted_by.setdefault(out.event_id, ex.node)
    task_ids = {c.ex.first.get("task_event_id"): c for c in children}

    sessions: dict[str, _Session] = {}
    for c in children:
        session = sessions.setdefault(c.session_id, _Session(c.session_id, c.scope))
        session.calls.setdefault(c.call_id, []).append(c)
        event_id = c.ex.first.get("task_event_id")
        emitter = emitted_by.get(event_id) if event_id else None
        if emitter is None and c.upstream_event_id in task_ids:
            up = task_ids[c.upstream_event_id]
            if (up.session_id, up.call_id) == (c.session_id, c.call_id):
                emitter = up.ex.node
        # Only a child forwards (spec §11.1); an event some other action emitted started the call.
        if emitter is not None and emitter in child_nodes:
            c.role, c.parent = "forwarded", emitter

    candidates = list(data.executions)
    digests = _Digests(data, candidates, key_text)
    for session in sessions.values():
        own = {c.ex.node for calls in session.calls.values() for c in calls}
        _attribute(data, session, candidates, own, digests)
    _break_cycles(sessions, {c.ex.node: c for c in children})

    latest = _latest_by_state_key(data.executions)
    # Callers are drawn once per state key (their latest execution): a resumed caller is one caller.
    for session in sessions.values():
        if session.caller is not None:
            session.caller = latest.get(session.caller.state_key, session.caller)

    by_state_key: dict[Any, list[str]] = {}
    for e in data.executions:
        by_state_key.setdefault(e.state_key, []).append(e.node)

    def add_exec(ex: Execution, role: str, **extra: Any) -> None:
        attrs = action_attributes(ex)
        attrs.update(role=role, **extra)
        attrs["executions"] = tuple(by_state_key.get(ex.state_key, (ex.node,)))
        attrs["divergences"] = tuple(sorted({d for p in ex.positions for d in data.involved.get(p, ())}, key=str))
        tree.add_node(ex.node, **attrs)

    for session in sessions.values():
        caller = session.caller
        if caller is not None and caller.node not in child_nodes and caller.node not in tree:
            add_exec(caller, "caller", target_scope=None, level=0)
            tree.add_edge(root, caller.node, kind="root-caller")
    for c in children:
        add_exec(c.ex, c.role, target_scope=c.scope, session_id=c.session_id, call_id=c.call_id,
                 delegate_type=c.delegate_type, level=None)

    unattributed = "unattributed"
    for session in sessions.values():
        snode = f"session:{session.session_id}"
        caller = session.caller
        tree.add_node(snode, kind="session", label=_ordinal_label("session", session.session_id, session.scope),
                      session_id=session.session_id, target_scope=session.scope, attribution=session.attribution,
                      caller=caller.node if caller else None, order=_first_pos(session) - 0.2, status=None)
        if caller is None:
            if unattributed not in tree:
                tree.add_node(unattributed, kind="unattributed", label="unattributed calls", status=None,
                              order=float("inf"))
                tree.add_edge(root, unattributed, kind="unattributed")
            tree.add_edge(unattributed, snode, kind="opens")
        else:
            tree.add_edge(caller.node, snode, kind="opens")
        for call_id, calls in session.calls.items():
            cnode = f"call:{call_id}" if f"call:{call_id}" not in tree else f"call:{session.session_id}/{call_id}"
            tree.add_node(cnode, kind="call", label=_ordinal_label("call", call_id, None), call_id=call_id,
                          caller=caller.node if caller else None,
                          session_id=session.session_id, target_scope=session.scope,
                          attribution=session.attribution,
                          call_status=_call_status(session, call_id, calls, latest),
                          order=min(c.ex.positions[0] for c in calls) - 0.1, status=None)
            tree.add_edge(snode, cnode, kind="contains")
            for c in calls:
                parent = c.parent if c.parent is not None else cnode
                tree.add_edge(parent, c.ex.node, kind="forwards" if c.parent else "delegates",
                              linked=c.parent is not None or c.role == "bootstrap")
            _add_results(tree, data, cnode, calls, latest)

    _levels_and_marks(tree)
    tree.graph["attributions"] = {s.session_id: s.attribution for s in sessions.values()}
    return tree


def _add_results(tree: nx.DiGraph, data: KeyData, cnode: str, calls: list[_Child],
                 latest: Mapping[Any, Execution]) -> None:
    """The call's result events (V4 ``subagentResultEvents`` of its children's latest records, addendum
    §1.1) as ``result`` nodes under the call they answer, each naming the child that produced it."""
    for c in calls:
        ex = latest.get(c.ex.state_key, c.ex)
        state = data.value(ex.positions[-1]) if ex.positions else None
        for i, ev in enumerate(subagent_result_events(state)):
            node = f"result:{ev.id or f'{ex.node}/{i}'}"
            if node in tree:
                continue
            try:
                attrs = event_attributes(ev)
            except Exception:  # noqa: BLE001 - undecodable attributes: the node is still shown
                attrs = None
            tree.add_node(node, kind="result", label=f"result · {ev.type}", event_id=ev.id, event_type=ev.type,
                          attributes=attrs, produced_by=ex.node, call=cnode, status=None,
                          order=float(ex.positions[-1]) + 0.1 * (i + 1))
            tree.add_edge(cnode, node, kind="answers")


def _ordinal_label(what: str, ident: str, scope: str | None) -> str:
    ordinal = ident.rsplit("-", 1)[-1]
    return f"{what} {ordinal}" + (f" · {scope}" if scope else "")


def _first_pos(session: _Session) -> float:
    return float(min(c.ex.positions[0] for calls in session.calls.values() for c in calls))


def _call_status(session: _Session, call_id: str, calls: list[_Child], latest: Mapping[Any, Execution]) -> str:
    caller = session.caller
    if caller is not None:
        if caller.last.get("completed"):
            return "consumed"
        fid = f"{session.session_id}#{call_id}"
        if any(f == fid and status in _TERMINAL for f, status in caller.call_functions):
            return "done"
    newest = {c.ex.state_key: latest.get(c.ex.state_key, c.ex) for c in calls}
    if any(not ex.last.get("completed") for ex in newest.values()):
        return "in-flight"
    answered = any(
        out.delegate_type == "_output_event" for ex in newest.values() for out in ex.outputs
    ) or any(ex.extra.get("results") for ex in newest.values())
    return "done" if answered else "in-flight"


def _break_cycles(sessions: dict[str, _Session], children: Mapping[str, _Child]) -> None:
    # Attribution is a heuristic on possibly inconsistent data; a session must never end up below itself.
    for session in sessions.values():
        seen = {session.session_id}
        caller = session.caller
        while caller is not None and caller.node in children:
            owner = children[caller.node].session_id
            if owner in seen:
                session.caller, session.attribution = None, "unattributed"
                break
            seen.add(owner)
            caller = sessions[owner].caller


def _levels_and_marks(tree: nx.DiGraph) -> None:
    order = list(nx.topological_sort(tree))
    for node in order:
        d = tree.nodes[node]
        preds = list(tree.predecessors(node))
        parent_level = tree.nodes[preds[0]].get("level") if preds else None
        if d["kind"] == "session":
            d["level"] = (parent_level or 0) + 1
        elif d["kind"] == "call" or d.get("role") in ("bootstrap", "forwarded"):
            d["level"] = parent_level if parent_level is not None else 0
        elif d.get("level") is None:
            d["level"] = 0
    structural = {"session", "call", "unattributed", "round", "result"}
    below: dict[Any, set[str]] = {}  # rule statuses of the executions in each subtree, children first
    for node in reversed(order):
        d = tree.nodes[node]
        statuses = set().union(*(below[c] for c in tree.successors(node)))
        if d["kind"] == "action" and d.get("status") is not None:
            statuses.add(d["status"])
        below[node] = statuses
        d["evicted"] = bool(statuses & EVICTED_STATUSES)
        if d["kind"] in structural:
            d["status"] = _common_status(statuses)


def tree_lanes(tree: nx.DiGraph) -> nx.DiGraph:
    """``tree`` with every node in the lane of an attempt (its ``attempt`` attribute), for
    ``layered_drawing(..., lane="attempt")``: each attempt's children side by side, as the action graph's lanes.

    An action keeps its own attempt; a structure node (round, session, call) is in the lane of every attempt whose
    actions hang under it, as a copy ``(node, attempt)`` when more than one attempt's do (so each lane is a whole
    tree); a result node is in its producer's lane. With one attempt every node is in its lane.

    For example::

        sub = ai.load(ai.samples.path("subagents"))
        laned = ai.history.tree_lanes(ai.history.subagent_tree(sub, "order-1", 5))
        sorted({a.get("attempt") for _, a in laned.nodes(data=True)}, key=str)
    """
    attempt_of = {n: a["attempt"] for n, a in tree.nodes(data=True)
                  if a.get("kind") == "action" and a.get("attempt") is not None}
    attempts = sorted(set(attempt_of.values()), key=str)
    lanes: dict[Any, list[Any]] = {}
    for node, attrs in tree.nodes(data=True):
        producer = attrs.get("produced_by")
        if node in attempt_of:
            found = {attempt_of[node]}
        elif producer in attempt_of:
            found = {attempt_of[producer]}
        else:
            found = {attempt_of[d] for d in nx.descendants(tree, node) if d in attempt_of} or \
                    {attempt_of[d] for d in nx.ancestors(tree, node) if d in attempt_of}
        lanes[node] = sorted(found, key=str) or attempts[:1] or [None]

    def named(node: Any, lane: Any) -> Any:
        return node if len(lanes[node]) == 1 else (node, lane)

    out = nx.DiGraph(**tree.graph)
    for node, attrs in tree.nodes(data=True):
        for lane in lanes[node]:
            out.add_node(named(node, lane), **{**attrs, "attempt": lane})
    for u, v, attrs in tree.edges(data=True):
        for lane in lanes[v]:
            # an edge into another attempt's lane leaves the source's own copy (a caller reused by a later attempt)
            source = named(u, lane if lane in lanes[u] else lanes[u][0])
            out.add_edge(source, named(v, lane), **attrs)
    return out
