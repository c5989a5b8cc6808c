"""What a trace says happened: action executions and their durable calls (addendum §3.3)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from agent_inspect.trace._model import TraceLog

__all__ = ["executions", "calls", "OBSERVED", "EXECUTION_COLUMNS", "CALL_COLUMNS"]

OBSERVED = ("REUSE", "RERUN", "RESUME", "FAILED", "INCOMPLETE")
"""observed outcome of an action execution"""
EXECUTION_COLUMNS = ["order", "execution_id", "business_key", "agent_name", "action", "trigger_event_id",
                     "input_run_id", "statuses", "observed", "first", "last", "file", "line", "job_id", "subtask_id",
                     "problem_category", "error_message", "calls", "calls_replayed", "calls_executed",
                     "output_event_ids", "trigger_type", "trigger_producer", "input_ordinal"]
CALL_COLUMNS = ["execution_id", "parent_execution_id", "position", "entity_type", "entity_name", "model",
                "statuses", "latency_ms", "replayed", "first", "file", "line"]
_CHILD = ("llm", "tool", "parser", "subagent")


def _groups(frame: pd.DataFrame, columns: list[str]) -> dict[Any, list[tuple[Any, ...]]]:
    """Rows of ``frame`` as tuples of ``columns``, grouped by their first column in order of first appearance.

    Plain lists instead of a pandas groupby: a trace has one small group per execution, and per-group
    frame indexing cost seconds on a few thousand records.
    """
    groups: dict[Any, list[tuple[Any, ...]]] = {}
    for row in zip(*(frame[c].tolist() for c in columns)):
        groups.setdefault(row[0], []).append(row)
    return groups


def _span(stamps: list[Any]) -> tuple[Any, Any]:
    present = [t for t in stamps if not pd.isna(t)]
    return (min(present), max(present)) if present else (pd.NaT, pd.NaT)


def calls(trace: TraceLog, *, cached_latency_ms: float = 5.0) -> pd.DataFrame:
    """One row per child execution (llm, tool, parser, subagent), in order of first record.

    ``replayed`` follows the signatures of addendum §3.3: a cached LLM result reports ``success`` with
    near-zero latency (at most ``cached_latency_ms`` after its ``started``, or no ``started``), and so does a
    recorded failure re-raised, with ``failed``; a cached tool result reports ``created`` then its terminal
    status, with no ``started``.
    ``position`` is the n-th child of its parent execution (the n-th durable CallResult, §3.4).

    For example::

        trace = ai.load_trace("sample_logs/production.trace.log")
        ai.trace.calls(trace)[["entity_type", "replayed"]].value_counts()
    """
    good = trace.good
    kids = good[good["entity_type"].isin(_CHILD)]
    columns = ["execution_id", "status", "timestamp", "entity_type", "parent_execution_id", "entity_name",
               "model", "file", "line"]
    rows = []
    seen_pos: dict[Any, int] = {}
    for eid, group in _groups(kids, columns).items():
        statuses = tuple(str(r[1]) for r in group)
        first = group[0]
        started = [r[2] for r in group if r[1] == "started"]
        ended = [r[2] for r in group if r[1] in ("success", "failed")]
        latency = None
        if started and ended and not pd.isna(started[0]) and not pd.isna(ended[-1]):
            latency = (ended[-1] - started[0]).total_seconds() * 1000.0
        et = str(first[3])
        terminal = "success" in statuses or "failed" in statuses
        if et == "llm":   # a recorded failure is re-raised as fast as a recorded result is returned
            replayed = terminal and ("started" not in statuses
                                     or (latency is not None and latency <= cached_latency_ms))
        elif et == "tool":
            replayed = "created" in statuses and "started" not in statuses and terminal
        else:
            replayed = False
        parent = first[4]
        pos = seen_pos.get(parent, 0)
        seen_pos[parent] = pos + 1
        rows.append({"execution_id": eid, "parent_execution_id": parent, "position": pos, "entity_type": et,
                     "entity_name": first[5], "model": first[6], "statuses": statuses,
                     "latency_ms": latency, "replayed": bool(replayed), "first": first[2],
                     "file": first[7], "line": first[8]})
    frame = pd.DataFrame(rows, columns=CALL_COLUMNS)
    frame["replayed"] = frame["replayed"].astype(bool)
    frame["position"] = frame["position"].astype("int64")
    return frame


def executions(trace: TraceLog, *, cached_latency_ms: float = 5.0) -> pd.DataFrame:
    """One row per action execution, in order of its first record, with what the trace shows it did.

    ``observed``: REUSE (status ``reused``), FAILED, RESUME (ran and at least one durable call was
    served from its CallResult), RERUN (ran, every call executed), INCOMPLETE (``started`` with no end:
    the job stopped, or the trace is cut off). ``trigger_type`` / ``trigger_producer`` come from the
    trigger's ``event`` record when the trace has it; ``input_ordinal`` counts the key's
    ``_input_event`` records up to the trigger's root input (None when the lineage is not traced).

    For example::

        trace = ai.load_trace("sample_logs/production.trace.log")
        ai.trace.executions(trace)["observed"].value_counts()
    """
    good = trace.good
    acts = good[good["entity_type"] == "action"]
    columns = ["execution_id", "status", "timestamp", "business_key", "agent_name", "entity_name",
               "trigger_event_id", "input_run_id", "file", "line", "job_id", "subtask_id", "problem_category",
               "error_message"]
    events = good[good["entity_type"] == "event"]
    cached = getattr(trace, "calls", None)
    kid = cached(cached_latency_ms=cached_latency_ms) if callable(cached) else calls(trace, cached_latency_ms=cached_latency_ms)
    n_calls: dict[Any, int] = {}
    n_replayed: dict[Any, int] = {}
    for parent, replayed in zip(kid["parent_execution_id"].tolist(), kid["replayed"].tolist()):
        n_calls[parent] = n_calls.get(parent, 0) + 1
        n_replayed[parent] = n_replayed.get(parent, 0) + int(replayed)
    ev_ids = events["event_id"].tolist()
    ev_producers = events["producer_execution_id"].tolist()
    ev_names = events["entity_name"].astype(object).tolist()
    outputs: dict[str, list[str]] = {}
    for prod, eid in zip(ev_producers, ev_ids):
        if isinstance(prod, str) and isinstance(eid, str):
            outputs.setdefault(prod, []).append(eid)
    ev_type = dict(zip(ev_ids, ev_names))
    ev_prod = dict(zip(ev_ids, ev_producers))
    ordinal: dict[str, int] = {}
    counts: dict[str, int] = {}
    for bk, eid, name in zip(events["business_key"].astype(object).tolist(), ev_ids, ev_names):
        if name == "_input_event":
            counts[str(bk)] = counts.get(str(bk), 0) + 1
            ordinal[eid] = counts[str(bk)]
    groups = _groups(acts, columns)
    trig_of: dict[str, Any] = {}
    for eid, group in groups.items():
        trig = next((r[6] for r in group if isinstance(r[6], str)), None)
        if trig is not None:
            trig_of[eid] = trig
    rows = []
    for order, (eid, group) in enumerate(groups.items()):
        statuses = tuple(str(r[1]) for r in group)
        first = group[0]
        calls_made, calls_replayed = n_calls.get(eid, 0), n_replayed.get(eid, 0)
        if "reused" in statuses:
            observed = "REUSE"
        elif "failed" in statuses:
            observed = "FAILED"
        elif "success" in statuses:
            observed = "RESUME" if calls_replayed else "RERUN"
        else:
            observed = "INCOMPLETE"
        trig = trig_of.get(eid)
        failed = next((r for r in group if r[1] == "failed"), None)
        start, end = _span([r[2] for r in group])
        rows.append({
            "order": order, "execution_id": eid, "business_key": first[3],
            "agent_name": first[4], "action": first[5], "trigger_event_id": trig,
            "input_run_id": first[7], "statuses": statuses, "observed": observed,
            "first": start, "last": end, "file": first[8],
            "line": first[9], "job_id": first[10], "subtask_id": first[11],
            "problem_category": failed[12] if failed is not None else None,
            "error_message": failed[13] if failed is not None else None,
            "calls": calls_made, "calls_replayed": calls_replayed, "calls_executed": calls_made - calls_replayed,
            "output_event_ids": tuple(outputs.get(eid, ())), "trigger_type": ev_type.get(trig),
            "trigger_producer": ev_prod.get(trig), "input_ordinal": _root_ordinal(trig, ev_prod, trig_of, ordinal),
        })
    frame = pd.DataFrame(rows, columns=EXECUTION_COLUMNS)
    for col in ("calls", "calls_replayed", "calls_executed", "order"):
        frame[col] = frame[col].astype("int64")
    frame["input_ordinal"] = frame["input_ordinal"].astype("Int64")
    for col in ("business_key", "action", "observed"):
        frame[col] = frame[col].astype(object)
    return frame


def _root_ordinal(trig: Any, ev_prod: dict[Any, Any], trig_of: dict[str, Any], ordinal: dict[str, int]) -> Any:
    seen = set()
    while isinstance(trig, str) and trig not in seen:
        seen.add(trig)
        if trig in ordinal:
            return ordinal[trig]
        prod = ev_prod.get(trig)
        trig = trig_of.get(prod) if isinstance(prod, str) else None
    return None
