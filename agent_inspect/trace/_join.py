"""Trace action executions ↔ action-state records, and their llm/tool children ↔ CallResults (addendum §3.4)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd

from agent_inspect._glossary import count_words
from agent_inspect.trace._runtime import call_entity

if TYPE_CHECKING:
    from agent_inspect.log import ActionStateLog
    from agent_inspect.trace._model import TraceLog

__all__ = ["join", "JOIN_COLUMNS", "JOIN_METHODS"]

JOIN_COLUMNS = ["entity_type", "execution_id", "parent_execution_id", "business_key", "log_business_key", "name",
                "observed", "trigger_event_id", "pos", "positions", "state_key", "seq", "call_index", "function_id",
                "join", "confidence", "reason"]
JOIN_METHODS = {"trigger-event-id": "high", "output-event-id": "high", "input-fingerprint": "medium",
                "call-position": "best-effort"}
"""how a row was joined, with its confidence"""


def _key_map(log_keys: set[str], texts: set[str]) -> dict[str, str]:
    """trace business key text -> the log's business key (the text itself, or its K1.6/K2 digest)."""
    from agent_inspect.codec import string_key_digest

    out = {}
    for t in texts:
        if t in log_keys:
            out[t] = t
        else:
            d = string_key_digest(t)
            if d in log_keys:
                out[t] = d
    return out


def _action_names(log: Any) -> dict[str, str]:
    """action UUID -> action name, as the log's own records name them (upstreamActionName of outputs)."""
    from agent_inspect.agents import AsRecordedAgent

    try:
        agent = AsRecordedAgent.of(log)
    except Exception:  # noqa: BLE001 - a log the agent model cannot read still joins by id and K2 name UUIDs
        return {}
    names = {}
    for d in agent.actions:
        try:
            names[agent.action_uuid(d.name, "K1.5")] = d.name
        except Exception:  # noqa: BLE001
            continue
    return names


def join(trace: TraceLog, log: ActionStateLog, *, call_kind: Callable[[str | None], str | None] = call_entity) -> pd.DataFrame:
    """Every action execution of ``trace`` joined to the action-state records of ``log``, and every llm /
    tool child to a durable CallResult of its execution's record.

    Actions, in order of preference: the record's ``taskEvent.id`` equals the execution's
    ``triggerEventId`` (one attempt; confidence "high"); for a reuse, a stored ``outputEvents[i].id``
    equals an event the execution re-emitted (``producerExecutionId``; "high"); for a root whose input
    attributes the trace holds untruncated, the event UUID recomputed from them equals the record's
    fingerprint ("medium"). Keys match as text or as the K1.6/K2 digest of a String key; action names
    through the log's own names, or the K2 name UUID. Children: the n-th llm / tool child is the n-th
    CallResult of that kind in the record ("best-effort": observations can be published late).
    A row that cannot be joined is kept, with ``reason`` saying why.

    For example::

        trace = ai.load_trace("sample_logs/production.trace.log")
        ai.trace.join(trace, log).head()               # each traced execution with its records
    """
    from agent_inspect.codec import event_uuid, name_action_uuid

    recs = log.records
    ok = recs[recs["error"].isna() & ~recs["tombstone"].fillna(False).astype(bool)]
    execs = trace.executions()
    kids = trace.calls()
    good = trace.good
    log_keys = set(map(str, ok["business_key"].dropna().unique()))
    keys = _key_map(log_keys, set(map(str, execs["business_key"].dropna())))
    names = _action_names(log)
    by_trigger: dict[tuple[str, str], list[int]] = {}
    by_output: dict[str, list[int]] = {}
    by_fp: dict[tuple[str, str], list[int]] = {}
    for pos, bk, tid, outs, fp in zip(ok.index, ok["business_key"].astype(object), ok["task_event_id"],
                                      ok["output_event_ids"], ok["event_uuid"]):
        if isinstance(tid, str):
            by_trigger.setdefault((str(bk), tid), []).append(int(pos))
        for o in outs if isinstance(outs, (tuple, list)) else ():
            by_output.setdefault(o, []).append(int(pos))
        if isinstance(fp, str):
            by_fp.setdefault((str(bk), fp), []).append(int(pos))
    action_uuid = ok["action_uuid"].astype(object)
    inputs = good[(good["entity_type"] == "event") & (good["entity_name"].astype(object) == "_input_event")]
    input_attrs = {eid: a for eid, a, tr in zip(inputs["event_id"], inputs["attributes"], inputs["truncated"])
                   if isinstance(a, dict) and a and not tr}

    def same_action(pos: int, name: str) -> bool:
        au = action_uuid.get(pos)
        return names.get(au) == name or au == name_action_uuid(name)

    rows: list[dict[str, Any]] = []
    joined_pos: dict[str, tuple[int, ...]] = {}
    for e in execs.itertuples(index=False):
        bk = keys.get(str(e.business_key))
        name = str(e.action)
        row = {"entity_type": "action", "execution_id": e.execution_id, "parent_execution_id": None,
               "business_key": e.business_key, "log_business_key": bk, "name": name, "observed": e.observed,
               "trigger_event_id": e.trigger_event_id, "pos": None, "positions": (), "state_key": None, "seq": None,
               "call_index": None, "function_id": None, "join": None, "confidence": None, "reason": None}
        found: list[int] = []
        method = None
        if bk is None:
            row["reason"] = f"business key {e.business_key!r} is not in the log (as text or as a K1.6/K2 digest)"
        else:
            if isinstance(e.trigger_event_id, str):
                found = [p for p in by_trigger.get((bk, e.trigger_event_id), []) if same_action(p, name)]
                method = "trigger-event-id" if found else None
            if not found and e.output_event_ids:
                found = sorted({p for o in e.output_event_ids for p in by_output.get(o, []) if same_action(p, name)})
                method = "output-event-id" if found else None
            if not found and e.trigger_event_id in input_attrs:
                fp = event_uuid(input_attrs[e.trigger_event_id])
                found = [p for p in by_fp.get((bk, fp), []) if same_action(p, name)]
                method = "input-fingerprint" if found else None
            if not found:
                row["reason"] = _why_not(e, name, names)
        if found:
            primary = _primary(ok, found)
            row.update(pos=primary, positions=tuple(found), state_key=ok.at[primary, "state_key"],
                       seq=ok.at[primary, "seq"], join=method, confidence=JOIN_METHODS.get(method or ""))
            joined_pos[e.execution_id] = tuple(found)
        rows.append(row)
    for c in kids.itertuples(index=False):
        row = {"entity_type": c.entity_type, "execution_id": c.execution_id, "parent_execution_id":
               c.parent_execution_id, "business_key": None, "log_business_key": None, "name": c.entity_name,
               "observed": "replayed" if c.replayed else "executed", "trigger_event_id": None, "pos": None,
               "positions": (), "state_key": None, "seq": None, "call_index": None, "function_id": None,
               "join": None, "confidence": None, "reason": None}
        parent_found = joined_pos.get(c.parent_execution_id)
        if parent_found is None:
            row["reason"] = "its action execution is not joined to a record"
        else:
            # a completed write clears the journal: the calls are on the latest record that still holds them
            pos, results = parent_found[-1], []
            for p in reversed(parent_found):
                state = log.value(p)
                if state is not None and state.call_results:
                    pos, results = p, list(state.call_results)
                    break
            same_kind = [i for i, r in enumerate(results) if call_kind(r.function_id) == c.entity_type]
            nth = _nth_of_kind(kids, c)
            if nth < len(same_kind):
                i = same_kind[nth]
                row.update(pos=pos, positions=(pos,), state_key=ok.at[pos, "state_key"], seq=ok.at[pos, "seq"],
                           call_index=i, function_id=results[i].function_id, join="call-position",
                           confidence=JOIN_METHODS["call-position"])
            else:
                row["reason"] = (f"the execution's records hold {len(same_kind)} {c.entity_type} "
                                 f"{count_words(len(same_kind), 'CallResult')}; "
                                 f"this is child {nth + 1} (the calls were not journaled, or not durable)")
        rows.append(row)
    frame = pd.DataFrame(rows, columns=JOIN_COLUMNS)
    for col in ("pos", "seq", "call_index"):     # from the rows: through float64 a seq past 2^53 fails to cast
        frame[col] = pd.array([r.get(col) for r in rows], dtype="Int64")
    return frame


def _nth_of_kind(kids: pd.DataFrame, c: Any) -> int:
    sib = kids[(kids["parent_execution_id"] == c.parent_execution_id) & (kids["entity_type"] == c.entity_type)]
    return int(list(sib["execution_id"]).index(c.execution_id))


def _primary(ok: pd.DataFrame, found: list[int]) -> int:
    """The completed record among the matches (the last one written), else the last."""
    done = [p for p in found if bool(ok.at[p, "completed"])]
    return (done or found)[-1]


def _why_not(e: Any, name: str, names: dict[str, str]) -> str:
    if name not in set(names.values()):
        return (f"action {name!r} is named by no record of the log (no output names it, and its K2 name UUID "
                "matches no key)")
    if e.observed == "REUSE":
        return ("reused, but no record has its trigger event id or the output ids it re-emitted: the reused record "
                "is outside the loaded log, or the trace leaves out the outputs (VERBOSE detail lets the input "
                "fingerprint be recomputed)")
    return ("no record with this trigger event id: the execution wrote nothing the log holds (the log ends before "
            "it, or it ran in another attempt than the loaded one)")
