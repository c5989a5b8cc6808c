"""The replay plan: what arrives after the restore (spec §9.5, §12 "Input")."""

from __future__ import annotations

import functools
import weakref
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from agent_inspect._bulk import once_per_log
from agent_inspect._errors import RecoveryError
from agent_inspect._glossary import first_few, plural, shown_text
from agent_inspect.agents import BEGIN_EVENT, INPUT_EVENT, AgentEvent
from agent_inspect.codec import parse_state_key, state_key_writer
from agent_inspect.log import resolve_runtime
from agent_inspect.recovery._events import agent_event
from agent_inspect.recovery._rebuild import normalize_markers, source_kind_of, window_mask
from agent_inspect.recovery._refresh import RetainedRounds, check_moved_marker, refresh_positions, retained_rounds
from agent_inspect.store import runtime_model

if TYPE_CHECKING:
    from agent_inspect.log import ActionStateLog, RuntimeInfo

__all__ = ["KeyIdentity", "ReplayInput", "PendingTask", "ReplayPlan"]


@dataclass(frozen=True)
class KeyIdentity:
    """How one Flink key appears in state keys: the log's ``business_key`` plus the key segments.

    For example::

        plan = ai.ReplayPlan.from_log(log, markers=markers)
        identity = plan.keys["user-0001"]                  # the business key plus its key segments
        identity.key_format, identity.key_group, identity.state_key("uuid-e", "uuid-a", 1)
    """

    business_key: str
    key_format: str = "K1.5"
    key_text: str | None = None
    key_group: int | None = None
    key_digest: str | None = None
    serializer_fingerprint: str | None = None

    def state_key(self, seq: int, event_uuid: str, action_uuid: str) -> str:
        """The state key the operator computes for (seq, event fingerprint, action) of this key."""
        return self.state_keys()(seq, event_uuid, action_uuid)

    def state_keys(self) -> Callable[[int, str, str], str]:
        """:meth:`state_key` as a function of ``(seq, event_uuid, action_uuid)``, the key's segments checked once."""
        return state_key_writer(self.key_format, key_text=self.key_text, key_group=self.key_group,
                                key_digest=self.key_digest, serializer_fingerprint=self.serializer_fingerprint)


@dataclass(frozen=True)
class ReplayInput:
    """One input replayed by the source for Flink key ``key`` (a fresh event id per attempt, §9.5).

    ``seq``: the seqNum it takes when the plan knows it (a log's round after one whose root record is missing:
    its own seq); None takes the key's next one.

    For example::

        plan = ai.ReplayPlan.from_log(log, markers=markers)
        first = plan.inputs[0]                             # one replayed input: key, event and label
        first.key, first.event.type, first.display
    """

    key: str
    event: AgentEvent
    label: str | None = None
    seq: int | None = None

    @functools.cached_property
    def display(self) -> str:
        """The input as a round's label shows it (worked out once: every rule's run labels the same rounds)."""
        if self.label:
            return shown_text(self.label)
        value = self.event.attributes.get("input") if self.event.type == INPUT_EVENT else None
        return shown_text(value) if isinstance(value, str) else (self.event.id or self.event.type)


@dataclass(frozen=True)
class PendingTask:
    """A restored in-flight task (Flink ``actionTasks`` state): re-submitted with its original event id.

    For example::

        event = ai.agents.AgentEvent("_input_event", {"input": "where is my order"}, id="evt-1")
        task = ai.recovery.PendingTask("user-0001", 3, "chat", event)   # re-submitted before user-0001's inputs
        plan = ai.ReplayPlan(inputs=(), restored_seq={"user-0001": 2}, pending=(task,))
    """

    key: str
    seq: int
    action: str
    event: AgentEvent


@dataclass(frozen=True)
class ReplayPlan:
    """Per-key inputs after the restore, restored seqNums and restored pending tasks.

    ``inputs`` are in arrival order (all keys interleaved); each key's first input gets ``restored_seq[key] + 1``.
    ``pending`` tasks run before any input of their key. ``keys`` maps a plan key to its :class:`KeyIdentity`
    (default: from the log's records). ``begin_event`` switches on ``agent-run.begin-event``; ``attempt`` is the
    replay's attempt number; ``notes``: what :meth:`from_log` could not tell from the log.

    For example::

        plan = ai.ReplayPlan.from_log(log, markers=markers)   # or ai.checkpoint.read(DIR).replay_plan(log)
        plan.inputs[:2], plan.seq_of(plan.inputs[0].key), plan.notes
        ai.predict(log, markers=markers, plan=plan)
    """

    inputs: tuple[ReplayInput, ...] = ()
    restored_seq: Mapping[str, int] = field(default_factory=dict)
    pending: tuple[PendingTask, ...] = ()
    keys: Mapping[str, KeyIdentity] = field(default_factory=dict)
    begin_event: bool = False
    attempt: int = 1_000_000
    notes: tuple[str, ...] = ()

    def __repr__(self) -> str:
        # one line: the fields hold every input event (tens of kB on a production log); they stay attributes
        pending = list(dict.fromkeys(t.key for t in self.pending))
        shown = f" ({first_few(pending, 3, counted=False)})" if pending else ""
        parts = [f"{plural(len(self.inputs), 'input')} of {plural(len({i.key for i in self.inputs}), 'key')}",
                 plural(len(self.pending), "pending task") + shown,
                 f"restored seqNums of {plural(len(self.restored_seq), 'key')}"]
        if self.begin_event:
            parts.append("begin events")
        if self.notes:
            parts.append(plural(len(self.notes), "note"))
        return f"ReplayPlan({', '.join(parts)})"

    def seq_of(self, key: str) -> int:
        """The restored seqNum of ``key`` (-1 when unknown: the key's first input gets seq 0)."""
        return int(self.restored_seq.get(key, -1))

    def restored_at(self, restored_seq: Mapping[str, int], *, source: str = "the checkpoint") -> ReplayPlan:
        """This plan restored at ``restored_seq`` (per key, the ``messageSequenceNumber`` a checkpoint holds),
        whose seqNums win. A key's inputs this plan numbers at or before its restored seqNum are dropped: the
        checkpoint had consumed those rounds, and the source replays only what came after it (spec §9.5). That
        happens when the markers reach back before the checkpoint (a 0.4+ Kafka marker moved back to the oldest
        retained state, or an older checkpoint's markers); a note (naming ``source``) says how many, in place of
        :meth:`from_log`'s note that the log alone cannot tell them apart.

        For example::

            plan = ai.ReplayPlan.from_log(log, markers=markers)      # user-0001's window starts at round 1
            restored = plan.restored_at({"user-0001": 1})             # a checkpoint that had consumed round 1
            restored.seq_of("user-0001"), restored.notes              # 1; round 1's input is not replayed
        """
        restored = {**self.restored_seq, **{str(k): int(v) for k, v in restored_seq.items()}}
        seen: dict[str, int] = {}
        inputs, dropped = [], Counter[str]()
        for item in self.inputs:
            n = seen[item.key] = seen.get(item.key, 0) + 1
            if (item.seq if item.seq is not None else self.seq_of(item.key) + n) > restored.get(item.key, -1):
                inputs.append(item)
            else:
                dropped[item.key] += 1
        # the moved-marker note says the log cannot tell consumed rounds apart: these seqNums just did
        notes = tuple(n for n in self.notes if not n.startswith(_MOVED_MARKER))
        if dropped:
            keys = sorted(dropped)
            shown = first_few((f"{k} ≤ seq {restored[k]}" for k in keys), 3)
            notes += (f"{plural(sum(dropped.values()), 'input')} of {plural(len(keys), 'key')} ({shown}) not "
                      f"replayed: the markers reach back before {source}, which had consumed those rounds",)
        return replace(self, inputs=tuple(inputs), restored_seq=restored, notes=notes)

    @classmethod
    def from_log(cls, log: ActionStateLog, *, business_keys: Any = None, markers: Any = None,
                 runtime: str | RuntimeInfo = "auto", kafka_pending: str | None = None,
                 refresh: Collection[int] | None = None, agent: object | None = None) -> ReplayPlan:
        """Infer the plan from the log's own later attempt.

        Per business key: each round in the window is replayed with the input of the root record written *last*
        at that seq, and restored seq = lowest seq − 1. ``markers`` bound the window as a restore does (spec §8.4,
        §9.5): inputs before the merged marker offset were committed by the checkpoint. None (or ``[]``) takes
        the whole log. From 0.4 on (``runtime``; ``refresh``: :func:`~agent_inspect.recovery.refresh_positions`),
        a round held only through refresh rows is not replayed when it was finished at the checkpoint; else its
        queued tasks and incomplete states become ``pending``, in re-submit order. ``_agent_run_begin_event``
        records switch ``begin_event`` on. A pending task names ``agent``'s action with the UUID its records show
        (§9.5 step 2), else the log's name for it; before K2 a Java action's UUID is the writing JVM's (§4.4).
        """
        plan = cls._inferred(log, business_keys, markers, runtime, kafka_pending, refresh, agent)
        return replace(plan, notes=plan.notes + _moved_marker_notes(log, plan, markers, runtime, kafka_pending),
                       begin_event=bool((log.records["task_event_type"] == BEGIN_EVENT).any()))

    @classmethod
    def _inferred(cls, log: ActionStateLog, business_keys: Any, markers: Any, runtime: str | RuntimeInfo,
                  kafka_pending: str | None, refresh: Collection[int] | None, agent: object | None) -> ReplayPlan:
        """:meth:`from_log` but the begin-event setting."""
        recs = log.records
        if business_keys is not None:
            recs = recs[recs["business_key"].isin(list(business_keys))]
        start = normalize_markers(markers)
        if start is not None:   # the rebuild's window
            recs = recs[window_mask(recs, markers)]
        retained = _retained(log, recs, runtime, kafka_pending, refresh)
        readable = (~recs["tombstone"].fillna(False).astype(bool) & recs["error"].isna()).to_numpy()
        roots = recs[readable & recs["is_root"].fillna(False).to_numpy(dtype=bool)]   # one copy of the frame, not two
        held = {*retained.finished, *retained.pending} if retained else set()
        if held:
            # a boolean array, not a list: an empty list would select no columns of a frame with no roots
            roots = roots[np.array([(str(b), int(q)) not in held for b, q in zip(roots["business_key"], roots["seq"])],
                                   dtype=bool)]
        name_of = _action_names(log, agent)
        root_seqs = set(zip(roots["business_key"].astype(str).tolist(), roots["seq"].astype("int64").tolist()))
        first_root: dict[str, int] = {}      # per key, its first replayed round's seq
        for bk, seq in root_seqs:
            first_root[bk] = min(seq, first_root.get(bk, seq))
        in_flight = _in_flight(log, recs[readable], held | root_seqs, name_of, first_root) if start is not None else ()
        if roots.empty:
            if retained or in_flight:
                return _retained_plan(log, retained, {}, in_flight=in_flight, name_of=name_of)
            if start is not None:
                return cls(inputs=(), restored_seq={}, keys={})   # nothing arrived after the checkpoint
            raise _no_inputs(log)
        frame = pd.DataFrame({"bk": roots["business_key"].astype(str).to_numpy(),
                              "seq": roots["seq"].astype("int64").to_numpy(), "pos": roots.index.to_numpy()})
        grouped = frame.groupby(["bk", "seq"], sort=False)
        rounds = grouped["pos"].agg(["min", "max"]).reset_index()      # first and latest root record per round
        # keys in the order their first root was read; the columns as Python lists (a cell costs a microsecond)
        restored = {bk: first_root[bk] - 1 for bk in dict.fromkeys(rounds["bk"].tolist())}
        # across keys, rounds arrive in the order their first root was written; within a key, by seq
        slots = rounds.sort_values("min", kind="stable")
        by_seq = rounds.sort_values(["bk", "seq"], kind="stable")
        key_rounds: dict[str, list[tuple[int, int]]] = {}    # per key, (seq, latest root position) by seq
        for bk, seq, pos in zip(by_seq["bk"].tolist(), by_seq["seq"].tolist(), by_seq["max"].tolist()):
            key_rounds.setdefault(bk, []).append((seq, pos))
        next_root = {bk: iter(seq_pos) for bk, seq_pos in key_rounds.items()}
        gaps = _missing_rounds(key_rounds, held)
        inputs = tuple(ReplayInput(bk, _event_of(log, pos).with_id(None), seq=seq if bk in gaps else None)
                       for bk in slots["bk"].tolist() for seq, pos in (next(next_root[bk]),))
        notes = _missing_rounds_note(gaps)
        if retained or in_flight:
            return _retained_plan(log, retained, restored, inputs, in_flight=in_flight, name_of=name_of, notes=notes)
        return cls(inputs=inputs, restored_seq=restored, keys=identities_from_log(log, restored), notes=notes)


_MOVED_MARKER = "kafka_pending='marker':"


def _moved_marker_notes(log: ActionStateLog, plan: ReplayPlan, markers: Any, runtime: str | RuntimeInfo,
                        kafka_pending: str | None) -> tuple[str, ...]:
    """What a plan inferred under ``kafka_pending="marker"`` cannot tell (addendum §2.3): the marker a 0.4+ Kafka
    writer moved back to its oldest retained state bounds the rebuild, not the inputs the checkpoint consumed."""
    if kafka_pending != "marker":           # the default ("refresh") marks the consumed inputs: nothing to say
        return ()
    start = normalize_markers(markers)
    info = resolve_runtime(runtime, log)
    model = runtime_model(info, kafka_pending=kafka_pending)
    if start is None or not model.keeps_pending or model.refresh_rows(source_kind_of(log)):
        return ()
    check_moved_marker(log, info, markers)   # refresh rows after the markers: not a log such a writer writes
    if not plan.inputs:
        return ()
    return (f"{_MOVED_MARKER} a writer that moves the marker back to its oldest retained state leaves no "
            f"mark of the inputs the checkpoint consumed, so the {plural(len(plan.inputs), 'input')} of the rounds "
            "whose root records lie after the markers are replayed here; the restore replays none whose input came "
            "before the checkpoint, only re-submits such a round's queued tasks and does not dispatch its finished "
            "ones (spec §9.5 steps 2–3, addendum §2.2); a checkpoint's plan tells them apart "
            "(ai.checkpoint.read(DIR).replay_plan(log))",)


def _no_inputs(log: ActionStateLog) -> RecoveryError:
    """Why no replay input can be inferred: a log of no records, or of only bad ones, is a source to check (a
    ReplayPlan would not help); a log of readable records without a root record needs its inputs given."""
    records, source = log.records, getattr(log, "source", None)      # a log-like object may have no source
    location, kind = getattr(source, "location", None), getattr(source, "kind", "source")
    where = f" from {kind} {location}" if location else ""
    if not len(records):    # the words of the loaders' empty source (log.summary(), the CLI's)
        return RecoveryError(f"the log holds no records{where}: nothing to replay; the source is empty (the wrong "
                             "file, topic or offsets, or a dump that failed?)")
    if records["error"].notna().all():
        said = f"the log holds {plural(len(records), 'record')}{where}, none readable"
        return RecoveryError(f"{said} (see log.errors): nothing to replay; check the source",
                             cli=f"{said} (agent-inspect summary shows why the first do not decode): nothing to "
                                 "replay; check the source")
    said = "the log holds no root (_input_event) records to infer replay inputs from"
    return RecoveryError(f"{said}; pass a ReplayPlan with the inputs",
                         cli=f"{said}; give the inputs in Python, as a ReplayPlan")


def _retained(log: ActionStateLog, window: pd.DataFrame, runtime: str | RuntimeInfo, kafka_pending: str | None,
              refresh: Collection[int] | None) -> RetainedRounds:
    """The rounds ``window`` (the log's records after the markers) holds only through refresh rows."""
    if refresh is None:
        if getattr(log, "raw", None) is None:
            return RetainedRounds()
        refresh = refresh_positions(log, resolve_runtime(runtime, log), kafka_pending=kafka_pending)
    if not refresh:
        return RetainedRounds()
    records = log.records
    return retained_rounds(records, refresh, records.index.isin(window.index), getattr(log, "value", None))


def _missing_rounds(key_rounds: Mapping[str, list[tuple[int, int]]],
                    held: Collection[tuple[str, int]]) -> dict[str, tuple[int, list[int]]]:
    """Per key, how many seqs between its first and last replayed round no root record shows, and the first few:
    each input took the next seq (spec §9.2), so such a round's root was dropped (compaction, a damaged line).
    ``key_rounds`` lists each key's distinct round seqs in order. Counted, not listed: a damaged seq may leave a
    gap of billions."""
    gaps: dict[str, tuple[int, list[int]]] = {}
    held_seqs: dict[str, set[int]] = {}
    for k, s in held:
        held_seqs.setdefault(k, set()).add(s)
    for bk, seq_pos in key_rounds.items():
        low, high = seq_pos[0][0], seq_pos[-1][0]
        if len(seq_pos) <= high - low:
            have = {seq for seq, _ in seq_pos} | held_seqs.get(bk, set())
            count = high - low - sum(1 for s in have if low <= s < high)
            if count:
                first = list(islice((s for s in range(low, high) if s not in have), _SHOWN))
                gaps[bk] = (count, first)
    return gaps


_SHOWN = 3


def _missing_rounds_note(gaps: Mapping[str, tuple[int, list[int]]]) -> tuple[str, ...]:
    if not gaps:
        return ()
    total = sum(count for count, _ in gaps.values())
    rounds = first_few([f"{k}@{s}" for k in sorted(gaps) for s in gaps[k][1]][:_SHOWN], _SHOWN, total=total)
    return (f"{plural(total, 'round')} ({rounds}) of the window {'have' if total != 1 else 'has'} no root "
            "record in the log (compacted away or unreadable): not replayed, as its input is unknown; the key's "
            "later rounds keep their own seqNums",)


def _in_flight(log: ActionStateLog, window: pd.DataFrame, replayed: set[tuple[str, int]],
               name_of: Callable[[str, int, str], str], first_root: Mapping[str, int]) -> tuple[PendingTask, ...]:
    """The tasks the checkpoint held in flight: of a round whose input came before the markers but whose tasks
    wrote after them, those whose trigger no task of the window emitted (re-submitted first, spec §9.5 step 2).
    A rootless round after one of its key's replayed rounds (``first_root``) is no such round: its root is missing."""
    tasks = window[~window["is_root"].fillna(False).astype(bool)]
    if tasks.empty:
        return ()
    keys, seqs = tasks["business_key"].astype(str).tolist(), tasks["seq"].astype("int64").tolist()
    rounds: dict[tuple[str, int], list[int]] = {}
    for pos, bk, seq in zip(tasks.index.tolist(), keys, seqs):
        if (bk, seq) not in replayed and seq < first_root.get(bk, seq + 1):
            rounds.setdefault((bk, seq), []).append(pos)
    pending = []
    for (bk, seq), positions in rounds.items():
        rows = tasks.loc[positions]
        emitted = {eid for outs in rows["output_event_ids"] for eid in (outs or ())}
        first = rows.drop_duplicates("state_key")
        for pos, trigger, action_uuid in zip(first.index.tolist(), first["task_event_id"].astype(object),
                                             first["action_uuid"].astype(object)):
            if trigger not in emitted:
                event = _event_of(log, pos)
                pending.append(PendingTask(bk, seq, name_of(str(action_uuid), pos, event.type), event))
    return tuple(pending)


def _retained_plan(log: ActionStateLog, retained: RetainedRounds, restored: dict[str, int],
                   inputs: tuple[ReplayInput, ...] = (), *, in_flight: tuple[PendingTask, ...] = (),
                   name_of: Callable[[str, int, str], str], notes: tuple[str, ...] = ()) -> ReplayPlan:
    """The plan with the rounds the checkpoint held: restored seqs raised to them, their tasks pending in re-submit
    order (``notes``: the inferred plan's own, after the held rounds')."""
    from agent_inspect.recovery._refresh import queued_event

    restored = dict(restored)
    # sorted: ``finished`` is a set, and the keys it adds must not come in hash-seed order
    for bk, seq in (*sorted({*retained.finished, *retained.pending}), *((t.key, t.seq) for t in in_flight)):
        restored[bk] = max(restored.get(bk, -1), seq)
    pending, recs = list(in_flight), log.records
    for (bk, seq), positions in retained.pending.items():
        tasks = [(t, str(recs.at[t, "action_uuid"]), _event_of(log, t)) if isinstance(t, int)
                 else (t.pos, t.action_uuid, agent_event(queued_event(log.value, t)))
                 for t in retained.order.get((bk, seq), positions)]
        pending += [PendingTask(bk, seq, name_of(action_uuid, pos, event.type), event)
                    for pos, action_uuid, event in tasks]
    return ReplayPlan(inputs=inputs, restored_seq=restored, pending=tuple(pending),
                      keys=identities_from_log(log, restored), notes=retained.notes + _in_flight_note(in_flight) + notes)


def _in_flight_note(in_flight: tuple[PendingTask, ...]) -> tuple[str, ...]:
    if not in_flight:
        return ()
    rounds = sorted({(t.key, t.seq) for t in in_flight})
    shown = first_few((f"{k}@{s}" for k, s in rounds), 3)
    return (f"{plural(len(in_flight), 'task')} of {plural(len(rounds), 'round')} ({shown}) "
            f"{'were' if len(in_flight) != 1 else 'was'} in flight at the "
            "checkpoint: the input came before the markers, the records after; re-submitted with the original events",)


def _action_names(log: ActionStateLog, given: object | None = None) -> Callable[[str, int, str], str]:
    """``name_of(action_uuid, pos, event_type)``: ``given``'s action of that UUID, else the log's name for it.
    Before K2 a Java action's UUID is the JVM's (spec §4.4): an unknown one is ``given``'s only Java listener."""
    from agent_inspect.agents import AsRecordedAgent, FlinkAgentAdapter, is_flink_agent

    if given is not None and not hasattr(given, "action_uuid") and is_flink_agent(given):
        given = FlinkAgentAdapter(given)
    agent = given if hasattr(given, "actions") and hasattr(given, "action_uuid") else None
    recs = log.records
    fallback = str(recs["key_format"].dropna().iloc[0]) if recs["key_format"].notna().any() else "K1.5"
    recorded: dict[str, dict[str, str]] = {}     # per key format: {action UUID: name}, as the log names them
    replayed: dict[str, dict[str, str]] = {}     # per key format: {action UUID: name}, as ``agent`` derives them
    agent_names = {d.name for d in agent.actions} if agent is not None else set()

    def names_in(fmt: str) -> tuple[dict[str, str], dict[str, str]]:
        if fmt not in recorded:
            as_recorded = AsRecordedAgent.of(log)
            recorded[fmt] = {as_recorded.action_uuid(d.name, fmt): d.name for d in as_recorded.actions}
            replayed[fmt] = {agent.action_uuid(d.name, fmt): d.name for d in agent.actions} if agent else {}
        return recorded[fmt], replayed[fmt]

    def java_listener(event_type: str) -> str | None:
        listeners = [d.name for d in (agent.actions if agent is not None else ())
                     if getattr(d, "java", False) and event_type in d.triggers]
        return listeners[0] if len(listeners) == 1 else None

    def name_of(action_uuid: str, pos: int, event_type: str) -> str:
        fmt = recs.at[pos, "key_format"] if pos in recs.index else None
        fmt = str(fmt) if isinstance(fmt, str) else fallback
        in_log, in_agent = names_in(fmt)
        if action_uuid in in_agent:   # the replay's agent names the action it re-submits (spec §9.5 step 2)
            return in_agent[action_uuid]
        if in_log.get(action_uuid) in agent_names:
            return in_log[action_uuid]    # the log names it as the agent does
        java = java_listener(event_type) if fmt != "K2" else None
        if java is not None:
            return java
        if action_uuid not in in_log:
            raise RecoveryError(f"record {pos} names an action the log does not show; pass a ReplayPlan")
        return in_log[action_uuid]

    return name_of


def _event_of(log: ActionStateLog, pos: int) -> AgentEvent:
    state = log.value(pos)
    ev = state.task_event if state is not None else None
    if ev is None:
        raise RecoveryError(f"record {pos} has no task event; pass a ReplayPlan with the inputs")
    return agent_event(ev)


def key_identity(business_key: str, state_key: str) -> KeyIdentity:
    """The :class:`KeyIdentity` of ``business_key`` as one of its state keys shows it."""
    parsed = parse_state_key(state_key)
    return KeyIdentity(business_key=business_key, key_format=parsed.format, key_text=parsed.key_text,
                       key_group=parsed.key_group, key_digest=parsed.key_digest,
                       serializer_fingerprint=parsed.serializer_fingerprint)


def identities_from_log(log: ActionStateLog, keys: Iterable[str]) -> dict[str, KeyIdentity]:
    """The key segments of the business keys ``keys`` of ``log``, each from its last readable record."""
    last = last_state_keys(log)
    return {k: key_identity(k, last[k]) for k in keys if k in last}


def last_state_keys(log: ActionStateLog) -> dict[str, str]:
    """Each business key's state key in its last readable record: how the job addresses that key (a log may mix
    key formats across keys). Worked out once per log: the plan and every run's key maker read it."""
    def make() -> dict[str, str]:
        recs = log.records
        ok = recs["error"].isna().to_numpy() if "error" in recs.columns else slice(None)
        last = recs["state_key"][ok].groupby(recs["business_key"][ok], observed=True, sort=False).last()
        return {str(k): str(v) for k, v in zip(last.index.tolist(), last.tolist())}

    return once_per_log(_LAST_STATE_KEYS, log, make)


_LAST_STATE_KEYS: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()
