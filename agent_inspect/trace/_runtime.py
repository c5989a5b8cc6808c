"""The Trace Log a runtime writes for a recovery, from the replay executor's own decisions (addendum §3.3).

Used by the sample generator: the trace is not built from the prediction it is checked against, but
from what :class:`~agent_inspect.executor.ReplayExecutor` did step by step (a loop written apart from
``predict``). Records follow the FILE output's member order and presence rules (§3.2).
"""

from __future__ import annotations

import random
import uuid
import zlib
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_inspect.executor import ReplayExecutor

__all__ = ["trace_from_executor", "call_entity"]

_INPUT = "_input_event"


def call_entity(function_id: str | None) -> str | None:
    """The trace entity a durable call's function id shows up as: "llm", "tool", "subagent" or None.

    Model and tool calls of the framework are traced; a plain user ``durable_execute`` writes no
    record (addendum §3.3). The toolkit's agents name calls by function id, so the kind is read from
    it: a sub-agent call id (``…#…``), a routed model call (``chat:<router>:<candidate>``,
    ``judge:<router>``; the ``route:`` decision is no model call), a ``chat_model`` / ``llm`` segment, a
    ``tools`` / ``tool`` segment. Pass your own classifier where your ids differ.

    For example::

        ai.trace.call_entity("chat_model.ask"), ai.trace.call_entity("tools.lookup_order")   # "llm", "tool"
        ai.trace.call_entity("my_helper")                                                  # None: not traced
    """
    if not function_id:
        return None
    fid = str(function_id)
    if "#" in fid:
        return "subagent"
    if fid.startswith(("chat:", "judge:")):        # model routing: candidate attempts and the judge (addendum §4)
        return "llm"
    parts = [p.lower() for p in fid.replace("/", ".").split(".")]
    if any("chat_model" in p or "llm" in p for p in parts):
        return "llm"
    if any(p in ("tools", "tool") or p.startswith("tool_") for p in parts):
        return "tool"
    return None


class _Clock:
    def __init__(self, start_ms: int, rng: random.Random) -> None:
        self.ms = start_ms
        self.rng = rng

    def tick(self, lo: int = 1, hi: int = 12) -> str:
        self.ms += self.rng.randint(lo, hi)
        return self.now()

    def now(self) -> str:
        dt = datetime.fromtimestamp(self.ms / 1000.0, tz=UTC)
        return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.ms % 1000:03d}Z"


def _record(ts: str, detail: str, *, input_run_id: str | None, business_key: str | None, agent_name: str | None,
            entity_type: str, entity_name: str | None, execution_id: str | None = None,
            parent_execution_id: str | None = None, metadata: Mapping[str, Any] | None = None,
            status: str | None = None, problem_category: str | None = None,
            attributes: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One record in the serializer's member order; null strings and empty metadata omitted (§3.2)."""
    rec: dict[str, Any] = {"timestamp": ts, "detail": detail}
    for k, v in (("inputRunId", input_run_id), ("businessKey", business_key), ("agentName", agent_name),
                 ("entityType", entity_type), ("entityName", entity_name), ("executionId", execution_id),
                 ("parentExecutionId", parent_execution_id)):
        if v is not None:
            rec[k] = v
    meta = {k: v for k, v in (metadata or {}).items() if v is not None}
    if meta:
        rec["entityMetadata"] = meta
    if status is not None:
        rec["status"] = status
    if problem_category is not None:
        rec["problemCategory"] = problem_category
    rec["attributes"] = dict(attributes or {})
    return rec


def trace_from_executor(ex: ReplayExecutor, *, agent_name: str | None = None, inputs: Sequence[object] = (),
                        start_ms: int = 0, seed: int = 0, detail: str = "STANDARD",
                        call_kind: Callable[[str | None], str | None] = call_entity,
                        scope: str = "ALL") -> list[dict[str, Any]]:
    """The Trace Log records a runtime writes for the run ``ex`` made (run it first).

    ``inputs``: the attributes (or plain values, as ``{"input": value}``) of the inputs the run
    replayed, in order, for the ``_input_event`` records; ``start_ms``/``seed`` make timestamps and
    execution ids deterministic. ``scope`` "ALL" writes every entity; "EVENT_ONLY" (upstream's
    default target) only event records. Per task (addendum §3.3): a reuse writes ``reused`` and an
    ``event`` record per replayed output (stored id, ``producerExecutionId`` = the reusing
    execution); an execution writes ``started``, its llm/tool records, its outputs, then ``success``
    or ``failed``; a cached LLM result is ``started``/``success`` at the same instant, a cached tool
    result ``created`` then its stored status. A lookup that fails the job writes nothing.

    For example::

        ex = ai.ReplayExecutor(log, markers=markers)
        ex.run()
        records = ai.trace.trace_from_executor(ex)     # the Trace Log a runtime writes for this run
        len(records)
    """
    rng = random.Random(seed)
    clock = _Clock(int(start_ms), rng)

    def new_id() -> str:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    steps = list(ex.step_list)
    outputs = _output_attributes(ex)
    journal = ex.journal if any(str(x.kind) == "persist" for x in steps) else None
    input_attrs = [dict(a) if isinstance(a, Mapping) else {"input": a} for a in inputs]
    out: list[dict[str, Any]] = []
    emitted: set[str] = set()
    run_of: dict[str, str] = {}          # root input event id -> inputRunId
    exec_of: dict[int | None, str] = {}  # task number -> executionId
    produced_by: dict[str, str] = {}     # event id -> executionId that sent it
    round_inputs = iter(input_attrs)
    task_run: dict[str, str] = {}       # executionId -> inputRunId
    events_only = scope == "EVENT_ONLY"

    def emit(rec: dict[str, Any]) -> None:
        if events_only and rec["entityType"] != "event":
            return
        out.append(rec)

    def input_event(s: Any) -> str:
        eid = s.event_id
        if eid not in run_of:
            run_of[eid] = new_id()
            attrs = next(round_inputs, None)
            if not (s.detail or {}).get("restored"):
                emit(_record(clock.tick(), detail, input_run_id=run_of[eid], business_key=s.key,
                             agent_name=agent_name, entity_type="event", entity_name=_INPUT,
                             metadata={"eventId": eid}, attributes={"input": None} if attrs is None else attrs))
                emitted.add(eid)
        return run_of[eid]

    for s in steps:
        kind = str(s.kind)
        if kind == "lookup" and s.event_type == _INPUT and s.outcome == "FAIL":
            input_event(s)       # the input was processed; its first lookup then failed the job
        if kind == "lookup" and s.outcome in ("REUSE", "RESUME", "RERUN"):
            restored = bool((s.detail or {}).get("restored"))
            if s.event_type == _INPUT:
                run = input_event(s)
            else:
                parent = produced_by.get(s.event_id) if s.event_id is not None else None
                found = task_run.get(parent) if parent is not None else None
                # a restored task keeps the trace context it was created with (§3.3 [I])
                run = found if found is not None else str(uuid.uuid5(uuid.NAMESPACE_URL, f"run:{s.key}:{s.seq}"))
            if restored:
                exec_of[s.task] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"exec:{s.key}:{s.seq}:{s.action}:{s.event_id}"))
            else:
                exec_of[s.task] = new_id()
            task_run[exec_of[s.task]] = run
        elif kind == "reuse":
            eid = exec_of[s.task]
            run = task_run[eid]
            emit(_record(clock.tick(), detail, input_run_id=run, business_key=s.key, agent_name=agent_name,
                         entity_type="action", entity_name=s.action, execution_id=eid,
                         metadata={"triggerEventId": s.event_id}, status="reused"))
            for oid in (s.detail or {}).get("outputs", ()):
                produced_by[oid] = eid
                emit(_event(clock.tick(), detail, run, s, oid, eid, outputs, agent_name))
        elif kind in ("rerun", "resume") and s.call_index is None and s.outcome in ("RERUN", "RESUME"):
            eid = exec_of[s.task]
            emit(_record(clock.tick(), detail, input_run_id=task_run[eid], business_key=s.key,
                         agent_name=agent_name, entity_type="action", entity_name=s.action, execution_id=eid,
                         metadata={"triggerEventId": s.event_id}, status="started"))
        elif kind in ("rerun", "resume") and s.call_index is not None:
            entity = call_kind(s.function_id)
            if entity is None or s.outcome == "pending":
                continue
            eid = exec_of[s.task]
            run = task_run[eid]
            cid = new_id()
            status = str((s.detail or {}).get("status") or "SUCCEEDED")
            end = "failed" if status == "FAILED" else "success"
            common: dict[str, Any] = dict(input_run_id=run, business_key=s.key, agent_name=agent_name, entity_type=entity,
                          entity_name=s.function_id, execution_id=cid, parent_execution_id=eid)
            problem = {"llm": "model_call_failed", "tool": "tool_call_failed"}.get(entity) if end == "failed" else None
            failure = {"errorType": "RecordedCallError", "errorMessage": "the call failed"} if end == "failed" else {}
            if s.outcome in ("hit", "reraise", "hit-failed"):    # served from the CallResult (§3.3)
                if entity == "tool":
                    emit(_record(clock.tick(), detail, **common, status="created"))
                    emit(_record(clock.now(), detail, **common, status=end, problem_category=problem,
                                 attributes=failure))
                else:
                    emit(_record(clock.tick(), detail, **common, status="started"))
                    emit(_record(clock.now(), detail, **common, status=end, problem_category=problem,
                                 attributes=failure))
            else:                                         # executed (or reconciled) for real
                if entity == "tool":
                    emit(_record(clock.tick(), detail, **common, status="created"))
                emit(_record(clock.tick(), detail, **common, status="started"))
                usage = _usage(s) if entity == "llm" and end == "success" else {}
                emit(_record(clock.tick(40, 900), detail, **common, status=end, problem_category=problem,
                             attributes=failure or usage))
        elif kind == "persist" and s.outcome == "completed":
            eid = exec_of[s.task]
            run = task_run[eid]
            for oid in _written_outputs(journal, s, outputs):
                produced_by[oid] = eid
                emit(_event(clock.tick(), detail, run, s, oid, eid, outputs, agent_name))
            emit(_record(clock.tick(), detail, input_run_id=run, business_key=s.key, agent_name=agent_name,
                         entity_type="action", entity_name=s.action, execution_id=eid,
                         metadata={"triggerEventId": s.event_id}, status="success"))
        elif kind in ("rerun", "resume") and s.outcome == "failed":
            eid = exec_of[s.task]
            reason = str(s.reason or "")
            etype, _, msg = reason.removeprefix("body raised ").partition(": ")
            emit(_record(clock.tick(), detail, input_run_id=task_run[eid], business_key=s.key,
                         agent_name=agent_name, entity_type="action", entity_name=s.action, execution_id=eid,
                         metadata={"triggerEventId": s.event_id}, status="failed",
                         problem_category="action_execution_failed",
                         attributes={"errorType": etype or "Exception", "errorMessage": msg or reason}))
    return out


def _usage(s: Any) -> dict[str, int]:
    """Token counts of an executed model call (``promptTokens``/``completionTokens``, as upstream's token
    metrics name them): derived from the call's identity, so a trace is the same on every run and the same
    call costs the same in every attempt."""
    h = zlib.crc32(f"{s.function_id}|{s.key}|{s.seq}|{s.action}|{s.call_index}".encode())
    return {"promptTokens": 400 + h % 1600, "completionTokens": 40 + (h >> 12) % 460}


def _output_attributes(ex: Any) -> dict[str, tuple[str, dict[str, Any]]]:
    """event id -> (type, attributes) for every event the run sent or wrote."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    frame = ex.outputs
    for eid, typ, attrs in zip(frame["event_id"], frame["type"], frame["attributes"]):
        if isinstance(eid, str):
            found[eid] = (str(typ), dict(attrs or {}))
    for st in ex.step_list:
        if st.event_id and st.event_type and st.event_id not in found:
            found[st.event_id] = (str(st.event_type), {})
    return found


def _written_outputs(journal: Any, s: Any, known: dict[str, tuple[str, dict[str, Any]]]) -> list[str]:
    """The output event ids of the completed write a PERSIST step made (types and attributes into ``known``)."""
    import agent_inspect.codec as codec

    j = (s.detail or {}).get("journal_index")
    if j is None or journal is None:
        return []
    value = journal.value[j] if j < len(journal.value) else None
    if value is None:
        return []
    state = codec.decode_action_state(value)
    ids = []
    for e in state.output_events:
        if e.id:
            ids.append(e.id)
            attrs = e.attrs()
            known[e.id] = (str(e.type), attrs if isinstance(attrs, dict) else {"value": attrs})
    return ids


def _event(ts: str, detail: str, run: str, s: Any, oid: str, producer: str,
           known: Mapping[str, tuple[str, dict[str, Any]]], agent_name: str | None) -> dict[str, Any]:
    typ, attrs = known.get(oid, (None, {}))
    return _record(ts, detail, input_run_id=run, business_key=s.key, agent_name=agent_name, entity_type="event",
                   entity_name=typ or "event", metadata={"eventId": oid, "producerExecutionId": producer,
                                                          "upstreamEventId": s.event_id,
                                                          "upstreamActionName": s.action},
                   attributes=attrs)
