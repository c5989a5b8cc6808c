"""Action graphs of one business key: event and action-execution nodes, "triggers" and "emits" edges."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import networkx as nx
import pandas as pd

from agent_inspect._types import LogLike, ReconstructionLike
from agent_inspect.history._graph_data import UNKNOWN, Execution, KeyData, load_key

__all__ = ["action_graph", "graph_nodes", "graph_edges", "NOT_IN_LOG", "EVICTED_STATUSES"]

NOT_IN_LOG = "not-in-log"
"""Status of a placeholder node: an action or event known only from another record's lineage fields."""

EVICTED_STATUSES = frozenset({"evicted", "invalidated"})
"""Statuses that make up a recovery's evicted suffix."""

_ROOT_TYPE = "_input_event"


def action_attributes(ex: Execution) -> dict[str, Any]:
    first, last = ex.first, ex.last
    call_row = ex.extra.get("call_row", {})
    name = ex.action_name
    uuid = last.get("action_uuid")
    lineage = last.get("upstream_event_id") is not None or any(o.upstream_event_id is not None for o in ex.outputs)
    return {
        "kind": "action",
        "label": name or (f"action {uuid[:8]}" if uuid else "action ?"),
        "business_key": ex.business_key,
        "seq": ex.seq,
        "attempt": ex.attempt,
        "order": float(ex.positions[0]),
        "status": ex.status,
        "reason": ex.reason,
        "status_rule_note": ex.extra.get("status_rule_note"),
        "divergence_id": ex.divergence_id,
        "outcome": ex.extra.get("outcome", (None, None, None))[0],
        "outcome_reason": ex.extra.get("outcome", (None, None, None))[1],
        "rule_note": ex.extra.get("outcome", (None, None, None))[2],
        "placeholder": False,
        "state_key": ex.state_key,
        "action_uuid": uuid,
        "action_name": name,
        "event_uuid": last.get("event_uuid"),
        "task_event_id": first.get("task_event_id"),
        "task_event_type": first.get("task_event_type"),
        "is_root": bool(first.get("is_root")),
        "positions": tuple(ex.positions),
        "first_pos": ex.positions[0],
        "last_pos": ex.positions[-1],
        "partition": last.get("partition"),
        "offsets": tuple(r.get("offset") for r in ex.rows),
        "writes": len(ex.positions),
        "completed": bool(last.get("completed")),
        "resumed": not _started_fresh(first),
        "calls_pending": int(call_row.get("calls_pending") or 0),
        "calls_succeeded": int(call_row.get("calls_succeeded") or 0),
        "calls_failed": int(call_row.get("calls_failed") or 0),
        "output_count": int(last.get("output_event_count") or 0),
        "tombstoned": ex.tombstoned,
        "key_format": last.get("key_format"),
        "value_format": last.get("value_format"),
        "subagent_scope": last.get("subagent_scope"),
        "subagent_session_id": last.get("subagent_session_id"),
        "subagent_call_id": last.get("subagent_call_id"),
        "lineage_fields": lineage,
        "error": next((r["error"] for r in ex.rows if r.get("error")), None),
    }


def _started_fresh(row: Mapping[str, Any]) -> bool:
    return (not row.get("completed")) and not (row.get("call_count") or 0) and not (
        row.get("output_event_count") or 0
    )


def _event_attrs(event_id: str | None, **given: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "kind": "event",
        "label": given.get("event_type") or "event ?",
        "business_key": None,
        "seq": None,
        "attempt": None,
        "order": 0.0,
        "status": UNKNOWN,
        "reason": None,
        "divergence_id": None,
        "placeholder": False,
        "event_id": event_id,
        "event_type": None,
        "event_class": None,
        "is_root": False,
        "upstream_event_id": None,
        "upstream_action": None,
        "in_log": True,
        "orphan": False,
        "lineage_note": None,
    }
    attrs.update(given)
    attrs["is_root"] = attrs.get("event_type") == _ROOT_TYPE
    return attrs


def _event_node(event_id: str | None, fallback: str) -> str:
    return f"event:{event_id}" if event_id else f"event:@{fallback}"


def _add_event(g: nx.DiGraph, node: str, **attrs: Any) -> None:
    if node not in g:
        g.add_node(node, **_event_attrs(attrs.pop("event_id", None), **attrs))
        return
    data = g.nodes[node]
    for k, v in attrs.items():
        if v is not None and data.get(k) is None:
            data[k] = v
    data["is_root"] = data.get("event_type") == _ROOT_TYPE
    if data["label"] == "event ?" and data.get("event_type"):
        data["label"] = data["event_type"]


def _build_graph(data: KeyData, *, seq: int | None, attempt: int | None) -> nx.DiGraph:
    g = nx.DiGraph(
        business_key=data.business_key,
        key_text=data.key_text,
        seq=seq,
        attempt=attempt,
        rule=data.rule,
        statuses_known=data.has_status,
    )
    for ex in data.executions:
        g.add_node(ex.node, **action_attributes(ex))
        ids = {d for pos in ex.positions for d in data.involved.get(pos, ())}
        g.nodes[ex.node]["divergences"] = tuple(sorted(ids, key=str))

    emitter: dict[str, str] = {}
    for ex in data.executions:
        for i, out in enumerate(ex.outputs):
            node = _event_node(out.event_id, f"{ex.positions[-1]}.{i}")
            _add_event(
                g, node, event_id=out.event_id, event_type=out.event_type, event_class=out.event_class,
                upstream_event_id=out.upstream_event_id, upstream_action=out.upstream_action,
                business_key=ex.business_key, seq=ex.seq, attempt=ex.attempt,
                order=ex.positions[-1] + 0.5 + i / 1000, status=ex.status, reason=ex.reason,
            )
            g.add_edge(ex.node, node, kind="emits", inferred=False)
            if out.event_id:
                emitter.setdefault(out.event_id, ex.node)

    for ex in data.executions:
        first = ex.first
        event_id = first.get("task_event_id")
        node = _event_node(event_id, str(ex.positions[0]))
        _add_event(
            g, node, event_id=event_id, event_type=first.get("task_event_type"),
            event_class=first.get("task_event_class"), upstream_event_id=first.get("upstream_event_id"),
            upstream_action=first.get("upstream_action"), business_key=ex.business_key, seq=ex.seq,
            attempt=ex.attempt, order=ex.positions[0] - 0.5, status=ex.status, reason=ex.reason,
        )
        g.add_edge(node, ex.node, kind="triggers", inferred=False)

    _link_by_upstream(g, data, emitter)
    _mark_orphans(g)

    actions = [n for n, d in g.nodes(data=True) if d["kind"] == "action" and not d["placeholder"]]
    g.graph["rounds"] = tuple(sorted({g.nodes[n]["seq"] for n in actions if g.nodes[n]["seq"] is not None}))
    g.graph["attempts"] = tuple(
        sorted({g.nodes[n]["attempt"] for n in actions if g.nodes[n]["attempt"] is not None})
    )
    g.graph["evicted"] = tuple(n for n in actions if g.nodes[n]["status"] in EVICTED_STATUSES)
    g.graph["divergences"] = tuple(sorted({d for n in actions for d in g.nodes[n]["divergences"]}, key=str))
    return g


def _link_by_upstream(g: nx.DiGraph, data: KeyData, emitter: dict[str, str]) -> None:
    """Connect trigger events whose emitter wrote no outputs here, using ``upstreamEventId`` (V3+)."""
    triggered: dict[str, list[str]] = {}
    for ex in data.executions:
        event_id = ex.first.get("task_event_id")
        if event_id:
            triggered.setdefault(event_id, []).append(ex.node)
    for node, d in list(g.nodes(data=True)):
        if d["kind"] != "event" or not d.get("event_id") or d["event_id"] in emitter:
            continue
        upstream, name = d.get("upstream_event_id"), d.get("upstream_action")
        if not upstream:
            continue
        candidates = triggered.get(upstream, [])
        named = [c for c in candidates if g.nodes[c]["action_name"] == name] if name else []
        if len(named) == 1 or (not name and len(candidates) == 1):
            source = (named or candidates)[0]
            g.add_edge(source, node, kind="emits", inferred=True)
            continue
        placeholder = f"action:?{upstream}/{name or '?'}"
        if placeholder not in g:
            up_node = _event_node(upstream, upstream)
            _add_event(g, up_node, event_id=upstream, in_log=upstream in triggered,
                       business_key=d["business_key"], seq=d["seq"], attempt=d["attempt"],
                       order=d["order"] - 0.75, status=NOT_IN_LOG if upstream not in triggered else d["status"])
            g.add_node(placeholder, **_placeholder_attrs(d, name))
            g.add_edge(up_node, placeholder, kind="triggers", inferred=True)
        g.add_edge(placeholder, node, kind="emits", inferred=True)


def _placeholder_attrs(event: Mapping[str, Any], name: str | None) -> dict[str, Any]:
    return {
        "kind": "action", "label": name or "action ?", "business_key": event["business_key"],
        "seq": event["seq"], "attempt": None, "order": event["order"] - 0.5, "status": NOT_IN_LOG,
        "reason": "emitter known only from upstreamEventId/upstreamActionName",
        "divergence_id": None, "placeholder": True, "action_name": name, "positions": (),
    }


def _mark_orphans(g: nx.DiGraph) -> None:
    # Pre-V3 records carry no lineage: a non-root event whose emitter is not in the log cannot be
    # attached anywhere. It stays in the graph, marked, instead of silently disappearing.
    for node, d in g.nodes(data=True):
        if d["kind"] == "event" and not d["is_root"] and g.in_degree(node) == 0:
            d["orphan"] = True
            d["lineage_note"] = (
                "known only from another event's upstreamEventId" if not d["in_log"]
                else "emitter not in the log and no lineage fields (pre-V3 data)"
            )


def action_graph(
    source: LogLike | ReconstructionLike,
    key: str,
    seq: int | None = None,
    attempt: int | None = None,
    *,
    action_names: Mapping[str, str] | Iterable[str] | None = None,
    kafka_pending: str | None = None,
) -> nx.DiGraph:
    """The action graph of one business key: every round, or round ``seq``; every attempt, or ``attempt``.

    ``source`` is a reconstruction (statuses under its rule) or a plain ``ActionStateLog`` (status
    ``"unknown"``). Nodes are ``"action:<first pos>"`` (one execution: the writes of one state key in
    one attempt) and ``"event:<event id>"``. Edges have ``kind`` ``"triggers"`` (event → action) or
    ``"emits"`` (action → event), with ``inferred=True`` when only ``upstreamEventId`` shows them.

    Action attributes include ``seq``, ``attempt``, ``positions``, ``completed``, the call counts,
    ``status`` and ``reason``; from a reconstruction also the replay ``outcome`` (REUSE / RESUME /
    RERUN / FAIL) and ``divergences``, the ids of the divergences its records took part in (its
    divergence points). ``graph.graph`` holds ``rounds``, ``attempts``, the ``evicted`` action nodes
    (the evicted suffix) and ``divergences``. Events whose emitter is unknown stay, with
    ``orphan=True``; emitters known only from lineage fields are placeholder actions with status
    ``"not-in-log"``. ``action_names`` (names, or ``{action_uuid: name}``) labels actions that
    emitted nothing. A log's checkpoint-time refresh rows are no executions, as :func:`executions` reads them
    under ``kafka_pending`` (a reconstruction reads them under its own settings).

    For example::

        g = ai.history.action_graph(ai.reconstruct(log, markers=markers), "user-0011", seq=1)
        ai.history.graph_nodes(g)[["kind", "status"]].head(), g.number_of_edges()
    """
    data = load_key(source, key, seq=seq, attempt=attempt, action_names=action_names, kafka_pending=kafka_pending)
    return _build_graph(data, seq=seq, attempt=attempt)


def graph_nodes(graph: nx.DiGraph) -> pd.DataFrame:
    """One row per node (index ``node``), one column per attribute; missing attributes are null.

    For example::

        g = ai.history.action_graph(log, "user-0011", seq=1)
        ai.history.graph_nodes(g).head()
    """
    ids = list(graph.nodes)
    frame = pd.DataFrame.from_records([dict(graph.nodes[n]) for n in ids], index=pd.Index(ids, name="node"))
    return frame.convert_dtypes()


def graph_edges(graph: nx.DiGraph) -> pd.DataFrame:
    """One row per edge: ``source``, ``target`` and the edge attributes (``kind``, ``inferred``…).

    For example::

        g = ai.history.action_graph(log, "user-0011", seq=1)
        ai.history.graph_edges(g).head()               # source, target, kind, inferred
    """
    rows = [{"source": u, "target": v, **d} for u, v, d in graph.edges(data=True)]
    columns = ["source", "target", "kind"]
    columns += sorted({k for r in rows for k in r} - set(columns))
    return pd.DataFrame.from_records(rows, columns=columns).convert_dtypes()
