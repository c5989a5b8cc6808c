"""Turn a case into a real log: state keys, values and ids built exactly as upstream writes them."""

from __future__ import annotations

import base64
import builtins
import hashlib
import pickle
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_inspect import codec
from agent_inspect._errors import CaseFileError
from agent_inspect.agents import SUBAGENT_EVENT, AgentEvent, DeclarativeAgent
from agent_inspect.cases._format import CallSpec, Case, KeySpec, LogLine
from agent_inspect.cases._notation import EventRef
from agent_inspect.log import ActionStateLog
from agent_inspect.raw import RawBatch, SourceInfo
from agent_inspect.recovery import KeyIdentity, PendingTask, ReplayInput, ReplayPlan

__all__ = ["BuiltCase", "build_case", "encode_payload", "call_result", "IdFactory"]

_INPUT_CLASS = "org.apache.flink.agents.api.InputEvent"
_OUTPUT_CLASS = "org.apache.flink.agents.api.OutputEvent"
_BEGIN_CLASS = "org.apache.flink.agents.api.event.AgentRunBeginEvent"
_T0_MS = 1_767_225_600_000


def _label_uuid(namespace: str, label: str) -> str:
    # random-looking v4 ids, but reproducible, so case runs and their diffs are stable
    return str(uuid.UUID(bytes=hashlib.md5(f"{namespace}#{label}".encode()).digest(), version=4))


class IdFactory:
    """Deterministic fresh event ids (``new1``, ``new2``, … as labels) for reproducible predictions."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.labels: dict[str, str] = {}
        self._n = 0

    def __call__(self) -> str:
        self._n += 1
        label = f"new{self._n}"
        eid = _label_uuid(self.namespace + "/fresh", label)
        self.labels[eid] = label
        return eid


@dataclass(frozen=True)
class BuiltCase:
    """A case as real data: the log, the recovery markers, the replay plan and the agent.

    For example::

        built = ai.cases.build_case(ai.cases.load_cases("cases/G01.toml")[0])
        built.log.records.head(), built.markers, built.plan.inputs
    """

    case: Case
    log: ActionStateLog
    markers: tuple[Mapping[int, int], ...]
    plan: ReplayPlan
    agent: DeclarativeAgent
    id_labels: Mapping[str, str]                 # event id -> case label (without '#')
    line_of_pos: Mapping[int, int]               # log position -> case line number
    key_of_business_key: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def label(self, event_id: str | None) -> str | None:
        return None if event_id is None else self.id_labels.get(event_id)

    def id_factory(self) -> IdFactory:
        return IdFactory(self.case.id.split("/")[0])


def encode_payload(spec: Mapping[str, Any] | None, *, where: str = "payload") -> str | None:
    """A CallResult payload (base64) from its case-file form (docs/reference/cases.md "Payloads")."""
    if spec is None:
        return None
    if not isinstance(spec, Mapping) or len(set(spec) - {"message"}) != 1:
        raise CaseFileError(f"{where}: a payload is one of {{json=…}}, {{pickle=…}}, {{error=…, message=…}}, "
                            "{java_error=…, message=…} or {base64=…}")
    if "base64" in spec:
        return str(spec["base64"])
    if "json" in spec:
        data = codec.canonical_json(spec["json"])
    elif "pickle" in spec:
        data = pickle.dumps(spec["pickle"], protocol=5)
    elif "error" in spec:
        cls = getattr(builtins, str(spec["error"]), None)
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            raise CaseFileError(f"{where}: error {spec['error']!r} is not a Python builtin exception")
        data = pickle.dumps(cls(spec.get("message", "")), protocol=5)
    elif "java_error" in spec:
        data = codec.canonical_json({"exceptionClass": str(spec["java_error"]),
                                     "message": str(spec.get("message", ""))})
    else:
        raise CaseFileError(f"{where}: unknown payload kind {sorted(spec)}")
    return base64.b64encode(data).decode("ascii")


def call_result(spec: CallSpec, *, where: str = "call") -> codec.CallResult:
    """The ``CallResult`` a case call stands for."""
    result = encode_payload(spec.result, where=where)
    exception = encode_payload(spec.exception, where=where)
    if spec.status == "SUCCEEDED" and result is None and spec.result is None:
        result = base64.b64encode(pickle.dumps(None, protocol=5)).decode("ascii") if spec.args_digest else None
    return codec.CallResult(function_id=spec.function_id, args_digest=spec.args_digest, result_payload=result,
                            exception_payload=exception, status=spec.status)


def key_identity(spec: KeySpec, case: Case) -> KeyIdentity:
    """The state-key segments of a case key under the case's key format."""
    fmt, mp = case.setup.key_format, case.setup.max_parallelism
    if spec.type == "long":
        try:
            value = int(spec.text)
        except ValueError:
            raise CaseFileError(f"{case.id}: key {spec.label} is typed long but its text {spec.text!r} is not") from None
        java_hash = codec.java_long_hash(value)
        digest = base64.b64encode(hashlib.sha256(value.to_bytes(8, "big", signed=True)).digest()).decode()
    elif spec.type == "string":
        java_hash = codec.java_string_hash(spec.text)
        digest = codec.string_key_digest(spec.text)
    else:
        raise CaseFileError(f"{case.id}: key {spec.label} has unknown type {spec.type!r}; use string or long")
    group = codec.key_group(java_hash, mp) if fmt != "K1" else None
    if fmt in ("K1.6", "K2"):
        # one key serializer per job, so one fingerprint for every key of the case (spec §4.6), typed or not
        fingerprint = base64.b64encode(hashlib.sha256(b"serializer:case-job").digest()).decode()
        return KeyIdentity(business_key=digest, key_format=fmt, key_group=group, key_digest=digest,
                           serializer_fingerprint=fingerprint if fmt == "K2" else None)
    return KeyIdentity(business_key=spec.text, key_format=fmt, key_text=spec.text, key_group=group)


def build_case(case: Case) -> BuiltCase:
    """Build the log of ``case`` through ``ActionStateLog.from_raw`` (the production path) and its plan.

    For example::

        built = ai.cases.build_case(ai.cases.load_cases("cases/G01.toml")[0])   # the log upstream would write
        ai.predict(built.log, markers=built.markers, plan=built.plan, agent=built.agent).tasks.head()
    """
    if case.call_case is not None and not case.log:
        raise CaseFileError(f"{case.id}: a call case has no log; run it at call level (docs/reference/cases.md)")
    ns = case.id.split("/")[0]
    agent = case.agent()
    writer = case.log_agent() if case.replay_agent is not None else agent
    idents = {label: key_identity(spec, case) for label, spec in case.keys.items()}
    labels: dict[str, str] = {}

    def event_id(ref: EventRef, fallback: str) -> str:
        label = ref.id_label or fallback
        eid = _label_uuid(ns, label)
        if ref.id_label:
            labels[eid] = ref.id_label
        return eid

    setup = case.setup
    batch = RawBatch(agent_key=[] if setup.source == "fluss" else None)
    offsets: dict[int, int] = {}
    line_of: list[tuple[int, int, int]] = []      # (partition, offset, line n)
    window: dict[int, int] = {}
    # unlabelled child events take the id of an earlier matching output of their round, as upstream writes them
    unclaimed: dict[tuple[str, int], list[tuple[str, bytes, str]]] = {}
    job = _Writer(case, batch, offsets, line_of)
    for count, ln in enumerate(case.log):
        job.checkpoints_after(count)
        ident = idents[ln.key]
        decl = writer.action(ln.action)
        if ln.action_label and decl.java and setup.key_format != "K2":
            action_uuid = codec.uuid3(f"case-action:{ln.action}@{ln.action_label}".encode())
        else:
            action_uuid = writer.action_uuid(ln.action, setup.key_format, attempt=ln.attempt)
        round_outputs = unclaimed.setdefault((ln.key, ln.seq), [])
        task_id = event_id(ln.event, f"L{ln.n}.task")
        if ln.event.id_label is None:
            ident_bytes = codec.canonical_json(dict(ln.event.attributes))
            match = next((o for o in round_outputs if o[0] == ln.event.type and o[1] == ident_bytes), None)
            if match is not None:
                round_outputs.remove(match)
                task_id = match[2]
        elif any(o[2] == task_id for o in round_outputs):
            round_outputs[:] = [o for o in round_outputs if o[2] != task_id]
        task_event = _event(ln.event, task_id, setup.pipeline)
        if ln.status == "C":
            round_outputs.extend((o.type, codec.canonical_json(dict(o.attributes)), event_id(o, f"L{ln.n}.out{i}"))
                                 for i, o in enumerate(ln.outputs, start=1))
        fingerprint = codec.event_uuid(dict(ln.event.attributes))
        state_key = ident.state_key(ln.seq, fingerprint, action_uuid)
        partition = codec.kafka_partition(state_key, setup.partitions) if setup.partitions > 1 else 0
        for value in _writes(ln, task_event, event_id, setup, decl.name):
            off = job.append(partition, state_key, value, ident.business_key, ln)
            if ln.n >= setup.window_start and partition not in window:
                window[partition] = off
    job.checkpoints_after(len(case.log))
    ends = dict(offsets)
    markers = ({p: window.get(p, ends[p]) for p in ends},) if ends else ()
    if setup.restore is not None:
        markers = (job.markers[setup.restore],)
    # sources hand records over in physical order per partition: partitions ascending, then offset
    order = sorted(range(len(batch)), key=lambda i: (batch.partition[i], batch.offset[i]))
    sorted_batch = RawBatch(agent_key=[] if batch.agent_key is not None else None)
    for i in order:
        sorted_batch.append(batch.partition[i], batch.offset[i], batch.timestamp_ms[i], batch.key[i],
                            batch.value[i], batch.agent_key[i] if batch.agent_key is not None else None)
    source = SourceInfo(kind=setup.source, location=f"case:{case.id}",
                        topic="action-state" if setup.source == "kafka" else "flink_agents.action_state",
                        start_offsets={p: 0 for p in ends}, end_offsets=ends,
                        options={"case": case.id})
    log = ActionStateLog.from_raw([sorted_batch], source)
    line_by_phys = {(p, o): n for p, o, n in line_of}
    recs = log.records
    line_of_pos = {int(pos): line_by_phys[(int(p), int(o))]
                   for pos, p, o in zip(recs.index, recs["partition"], recs["offset"])}
    plan = _plan(case, idents, labels, ns)
    by_bk: dict[str, list[str]] = {}
    for label, ident in idents.items():
        by_bk.setdefault(ident.business_key, []).append(label)
    return BuiltCase(case=case, log=log, markers=markers, plan=plan, agent=agent, id_labels=labels,
                     line_of_pos=line_of_pos, key_of_business_key={k: tuple(v) for k, v in by_bk.items()})


class _Writer:
    """The writing job's side of a case log: appends records, keeps the writer's cache (last write wins per
    state key) and runs the case's checkpoint and restore lines (0.4+ refresh rows, Kafka marker option)."""

    def __init__(self, case: Case, batch: Any, offsets: dict[int, int], line_of: list[tuple[int, int, int]]) -> None:
        from agent_inspect.store import runtime_model

        self.case, self.batch, self.offsets, self.line_of = case, batch, offsets, line_of
        setup = case.setup
        model = runtime_model(setup.runtime, kafka_pending=setup.kafka_pending)
        self.refresh = model.refresh_rows(setup.source)
        self.moved_back = model.keeps_pending and not self.refresh
        # state key -> (key label, seq, partition, offset, value, business key, line n)
        self.cache: dict[str, tuple[str, int, int, int, bytes, str, int]] = {}
        self.written: list[tuple[str, str, int, int, int, bytes | None, str, int]] = []
        self.pruned: dict[str, int] = {}
        self.markers: dict[str, dict[int, int]] = {}
        self._by_after: dict[int, list[Any]] = {}
        for c in case.checkpoints:
            self._by_after.setdefault(c.after, []).append(c)

    def append(self, partition: int, state_key: str, value: bytes | None, business_key: str, ln: Any,
               *, key: str | None = None, seq: int | None = None) -> int:
        off = self.offsets.get(partition, 0)
        self.offsets[partition] = off + 1
        self.batch.append(partition, off, _T0_MS + 1000 * len(self.batch), state_key.encode(), value,
                          business_key if self.case.setup.source == "fluss" else None)
        n = ln if isinstance(ln, int) else ln.n
        self.line_of.append((partition, off, n))
        key = key if key is not None else ln.key
        seq = seq if seq is not None else ln.seq
        self.written.append((state_key, key, seq, partition, off, value, business_key, n))
        if value is None:
            self.cache.pop(state_key, None)
        else:
            self.cache[state_key] = (key, seq, partition, off, value, business_key, n)
        return off

    def checkpoints_after(self, count: int) -> None:
        for c in self._by_after.get(count, ()):
            if c.restore:
                self._restore(self.markers[c.name])
            else:
                self._checkpoint(c)

    def _checkpoint(self, c: Any) -> None:
        marker = {p: self.offsets.get(p, 0) for p in range(self.case.setup.partitions)}
        retained = [(sk, v) for sk, v in self.cache.items() if v[1] > self.pruned.get(v[0], -1)]
        for sk, (key, seq, partition, off, value, bk, n) in retained:
            if self.refresh:          # re-append every retained state after the marker (addendum §2.2)
                self.append(partition, sk, value, bk, n, key=key, seq=seq)
            elif self.moved_back:     # Kafka, kafka_pending = "marker": the marker moves back to it
                marker[partition] = min(marker[partition], off)
        self.markers[c.name] = marker
        for key, s in c.completed.items():   # notifyCheckpointComplete prunes up to lastCompleted
            self.pruned[key] = s
            for sk in [sk for sk, v in self.cache.items() if v[0] == key and v[1] <= s]:
                del self.cache[sk]

    def _restore(self, marker: Mapping[int, int]) -> None:
        self.cache.clear()
        self.pruned.clear()
        for sk, key, seq, partition, off, value, bk, n in self.written:
            if partition in marker and off >= marker[partition]:
                if value is None:
                    self.cache.pop(sk, None)
                else:
                    self.cache[sk] = (key, seq, partition, off, value, bk, n)


def _plan(case: Case, idents: Mapping[str, KeyIdentity], labels: dict[str, str], ns: str) -> ReplayPlan:
    inputs = []
    for i, r in enumerate(case.replay, start=1):
        label = r.event.id_label or f"replay{i}"
        eid = _label_uuid(ns, label)
        if r.event.id_label:
            labels[eid] = r.event.id_label
        ev = AgentEvent(r.event.type, dict(r.event.attributes), eid, _event_class(r.event.type, case.setup.pipeline))
        inputs.append(ReplayInput(r.key, ev, r.label))
    pending = []
    for p in case.pending:
        label = p.event.id_label or f"pending.{p.action}"
        eid = _label_uuid(ns, label)
        if p.event.id_label:
            labels[eid] = p.event.id_label
        pending.append(PendingTask(p.key, p.seq, p.action,
                                   AgentEvent(p.event.type, dict(p.event.attributes), eid,
                                              _event_class(p.event.type, case.setup.pipeline))))
    return ReplayPlan(inputs=tuple(inputs), restored_seq={k: s.restored_seq for k, s in case.keys.items()},
                      pending=tuple(pending), keys=dict(idents), begin_event=case.setup.begin_event,
                      attempt=max((ln.attempt for ln in case.log), default=0) + 1)


def _event_class(event_type: str, pipeline: str) -> str:
    if event_type == "_input_event":
        return _INPUT_CLASS if pipeline == "java" else codec.GENERIC_EVENT
    if event_type == "_output_event":
        return _OUTPUT_CLASS if pipeline == "java" else codec.GENERIC_EVENT
    if event_type == "_agent_run_begin_event":
        return _BEGIN_CLASS
    if event_type == SUBAGENT_EVENT:
        return codec.SUBAGENT_EVENT
    return codec.GENERIC_EVENT


def _event(ref: EventRef, eid: str, pipeline: str, *, upstream: str | None = None,
           upstream_action: str | None = None, delegate_id: str | None = None) -> codec.Event:
    cls = _event_class(ref.type, pipeline)
    delegate = None
    if ref.type == SUBAGENT_EVENT:
        a = ref.attributes
        delegate = codec.Event.new(str(a.get("delegateType")), a.get("delegateAttributes") or {},
                                   id=delegate_id or _label_uuid("delegate", eid), event_class=codec.GENERIC_EVENT)
    return codec.Event.new(ref.type, dict(ref.attributes), id=eid, event_class=cls, upstream_event_id=upstream,
                           upstream_action_name=upstream_action, delegate=delegate)


def _writes(ln: LogLine, task_event: codec.Event, event_id: Callable[[EventRef, str], str], setup: Any,
            action: str) -> list[bytes | None]:
    """The records of one action execution (spec §5.6): initial, one per call, completed; or a tombstone."""
    if ln.status == "TOMB":
        return [None]
    fmt = setup.value_format
    if fmt == "V3" and (task_event.type == SUBAGENT_EVENT or any(o.type == SUBAGENT_EVENT for o in ln.outputs)):
        fmt = "V3+"
    v4 = fmt == "V4"
    if ln.results and not v4:
        raise CaseFileError(f"log line {ln.n}: results (subagentResultEvents) need [setup] value_format = \"V4\"")
    lineage = fmt in ("V3", "V3+", "V4")

    def encode(state: codec.ActionState, results: tuple[codec.Event, ...] = ()) -> bytes:
        if v4:   # V4 writers put the property into every record, [] included (addendum §1.2)
            from agent_inspect.recovery import with_subagent_result_events

            state = with_subagent_result_events(state, results)
        return codec.encode_action_state(state, value_format=fmt)

    out: list[bytes | None] = [encode(codec.ActionState(task_event=task_event))]
    calls: list[codec.CallResult] = []
    for c in ln.calls:
        calls.append(call_result(c, where=f"log line {ln.n}"))
        out.append(encode(codec.ActionState(task_event=task_event, call_results=tuple(calls))))
    if ln.status == "C":
        outputs = tuple(_event(o, event_id(o, f"L{ln.n}.out{i}"), setup.pipeline,
                               upstream=task_event.id if lineage else None,
                               upstream_action=action if lineage else None)
                        for i, o in enumerate(ln.outputs, start=1))
        # result events carry no lineage and are OutputEvents, for Python children too (addendum §1.1)
        results = tuple(codec.Event.new(r.type, dict(r.attributes), id=event_id(r, f"L{ln.n}.res{i}"),
                                        event_class=_OUTPUT_CLASS) for i, r in enumerate(ln.results, start=1))
        out.append(encode(codec.ActionState(task_event=task_event, output_events=outputs, completed=True), results))
    elif ln.status == "I" and ln.calls:
        raise CaseFileError(f"log line {ln.n}: status I means no calls; use P for an incomplete record with calls")
    return out
