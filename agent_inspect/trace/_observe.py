"""What a trace says happened: action executions and their durable calls (addendum §3.3)."""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["executions", "calls", "OBSERVED", "EXECUTION_COLUMNS", "CALL_COLUMNS"]

#: observed outcome of an action execution
OBSERVED = ("REUSE", "RERUN", "RESUME", "FAILED", "INCOMPLETE")
EXECUTION_COLUMNS = ["order", "execution_id", "business_key", "agent_name", "action", "trigger_event_id",
                     "input_run_id", "statuses", "observed", "first", "last", "file", "line", "job_id", "subtask_id",
                     "problem_category", "error_message", "calls", "calls_replayed", "calls_executed",
                     "output_event_ids", "trigger_type", "trigger_producer", "input_ordinal"]
CALL_COLUMNS = ["execution_id", "parent_execution_id", "position", "entity_type", "entity_name", "model",
                "statuses", "latency_ms", "replayed", "first", "file", "line"]
_CHILD = ("llm", "tool", "parser", "subagent")


def calls(trace: Any, *, cached_latency_ms: float = 5.0) -> pd.DataFrame:
    """One row per child execution (llm, tool, parser, subagent), in order of first record.

    ``replayed`` follows the signatures of addendum §3.3: a cached LLM result reports ``success`` with
    near-zero latency (at most ``cached_latency_ms`` after its ``started``, or no ``started``); a
    cached tool result reports ``created`` then its terminal status, with no ``started``.
    ``position`` is the n-th child of its parent execution (the n-th durable CallResult, §3.4).
    """
    good = trace.good
    # only the columns read below: a group's rows are then cheap to take
    kids = good.loc[good["entity_type"].isin(_CHILD),
                    ["execution_id", "status", "timestamp", "entity_type", "parent_execution_id", "entity_name",
                     "model", "file", "line"]]
    rows = []
    seen_pos: dict[str, int] = {}
    for eid, g in kids.groupby("execution_id", sort=False, observed=True):
        statuses = tuple(map(str, g["status"]))
        first = g.iloc[0]
        started = g.loc[g["status"] == "started", "timestamp"]
        ended = g.loc[g["status"].isin(["success", "failed"]), "timestamp"]
        latency = None
        if len(started) and len(ended) and pd.notna(started.iloc[0]) and pd.notna(ended.iloc[-1]):
            latency = (ended.iloc[-1] - started.iloc[0]).total_seconds() * 1000.0
        et = str(first["entity_type"])
        terminal = "success" in statuses or "failed" in statuses
        if et == "llm":
            replayed = "success" in statuses and ("started" not in statuses
                                                  or (latency is not None and latency <= cached_latency_ms))
        elif et == "tool":
            replayed = "created" in statuses and "started" not in statuses and terminal
        else:
            replayed = False
        parent = first["parent_execution_id"]
        pos = seen_pos.get(parent, 0)
        seen_pos[parent] = pos + 1
        rows.append({"execution_id": eid, "parent_execution_id": parent, "position": pos, "entity_type": et,
                     "entity_name": first["entity_name"], "model": first["model"], "statuses": statuses,
                     "latency_ms": latency, "replayed": bool(replayed), "first": first["timestamp"],
                     "file": first["file"], "line": first["line"]})
    frame = pd.DataFrame(rows, columns=CALL_COLUMNS)
    frame["replayed"] = frame["replayed"].astype(bool)
    frame["position"] = frame["position"].astype("int64")
    return frame


def executions(trace: Any, *, cached_latency_ms: float = 5.0) -> pd.DataFrame:
    """One row per action execution, in order of its first record, with what the trace shows it did.

    ``observed``: REUSE (status ``reused``), FAILED, RESUME (ran and at least one durable call was
    served from its CallResult), RERUN (ran, every call executed), INCOMPLETE (``started`` with no end:
    the job stopped, or the trace is cut off). ``trigger_type`` / ``trigger_producer`` come from the
    trigger's ``event`` record when the trace has it; ``input_ordinal`` counts the key's
    ``_input_event`` records up to the trigger's root input (None when the lineage is not traced).
    """
    good = trace.good
    acts = good.loc[good["entity_type"] == "action",
                    ["execution_id", "status", "timestamp", "business_key", "agent_name", "entity_name",
                     "trigger_event_id", "input_run_id", "file", "line", "job_id", "subtask_id", "problem_category",
                     "error_message"]]
    events = good[good["entity_type"] == "event"]
    cached = getattr(trace, "calls", None)
    kid = cached(cached_latency_ms=cached_latency_ms) if callable(cached) else calls(trace, cached_latency_ms=cached_latency_ms)
    by_parent = kid.groupby("parent_execution_id", sort=False)["replayed"].agg(["size", "sum"]) if len(kid) else None
    outputs: dict[str, list[str]] = {}
    for prod, eid in zip(events["producer_execution_id"], events["event_id"]):
        if isinstance(prod, str) and isinstance(eid, str):
            outputs.setdefault(prod, []).append(eid)
    ev_type = dict(zip(events["event_id"], events["entity_name"].astype(object)))
    ev_prod = dict(zip(events["event_id"], events["producer_execution_id"]))
    inputs = events[events["entity_name"].astype(object) == "_input_event"]
    ordinal: dict[str, int] = {}
    counts: dict[str, int] = {}
    for bk, eid in zip(inputs["business_key"].astype(object), inputs["event_id"]):
        counts[str(bk)] = counts.get(str(bk), 0) + 1
        ordinal[eid] = counts[str(bk)]
    trig_of: dict[str, Any] = {}
    for eid, trig in zip(acts["execution_id"], acts["trigger_event_id"]):
        if isinstance(trig, str):
            trig_of.setdefault(eid, trig)
    rows = []
    for order, (eid, g) in enumerate(acts.groupby("execution_id", sort=False, observed=True)):
        statuses = tuple(map(str, g["status"]))
        first = g.iloc[0]
        n_calls = int(by_parent.loc[eid, "size"]) if by_parent is not None and eid in by_parent.index else 0
        n_rep = int(by_parent.loc[eid, "sum"]) if by_parent is not None and eid in by_parent.index else 0
        if "reused" in statuses:
            observed = "REUSE"
        elif "failed" in statuses:
            observed = "FAILED"
        elif "success" in statuses:
            observed = "RESUME" if n_rep else "RERUN"
        else:
            observed = "INCOMPLETE"
        trig = trig_of.get(eid)
        failed = g[g["status"] == "failed"]
        rows.append({
            "order": order, "execution_id": eid, "business_key": first["business_key"],
            "agent_name": first["agent_name"], "action": first["entity_name"], "trigger_event_id": trig,
            "input_run_id": first["input_run_id"], "statuses": statuses, "observed": observed,
            "first": g["timestamp"].min(), "last": g["timestamp"].max(), "file": first["file"],
            "line": first["line"], "job_id": first["job_id"], "subtask_id": first["subtask_id"],
            "problem_category": failed["problem_category"].iloc[0] if len(failed) else None,
            "error_message": failed["error_message"].iloc[0] if len(failed) else None,
            "calls": n_calls, "calls_replayed": n_rep, "calls_executed": n_calls - n_rep,
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
