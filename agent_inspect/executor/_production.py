"""Production mode: the engine as the operator of a job, with a journal of raw records, checkpoints (markers +
keyed state) and the topic after it."""

from __future__ import annotations

import datetime
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_inspect._errors import ReplayError
from agent_inspect.agents import AgentEvent
from agent_inspect.codec import encode_action_state, kafka_partition
from agent_inspect.executor._engine import Engine, removed_text
from agent_inspect.executor._options import Clock
from agent_inspect.executor._steps import Checkpoint, JobFailed, MemoryByKey, Step, StepKind, StepOutcome
from agent_inspect.log import ActionStateLog
from agent_inspect.raw import RawBatch, SourceInfo

if TYPE_CHECKING:
    from agent_inspect.recovery.engine import RecordView
    from agent_inspect.store import Entry

__all__ = ["Production", "end_offsets", "epoch_ms", "JOURNAL_LOCATION"]


@dataclass
class Production:
    """The journal of the engine's writes, checkpoints (markers + keyed state), and ``to_log``;
    ``restored_last_completed``: per business key, restored ones too, as a checkpoint collects them (§9.1)."""

    engine: Engine
    value_format: str
    num_partitions: int | None
    clock: Clock | None
    prune_tombstones: bool
    restored_last_completed: Mapping[str, int]

    def journal(self) -> RawBatch:
        """The writes (:data:`Write`) as a ``RawBatch`` in write order, stamped by the clock if one is given.

        Partition per the upstream Kafka partitioner (§6.3); offsets continue after the base log's end. Fluss rows also
        carry ``agent_key``; the Kafka partitioner stands in for Fluss's bucket function (every row of a key still lands
        in one bucket, in write order).
        """
        writes, num_partitions, value_format = self.engine.run.writes, self.partitions(), self.value_format
        timestamps = self._timestamps()
        nxt = _base_ends(self.engine.log)
        fluss = self.engine.source_kind == "fluss"
        batch = RawBatch(agent_key=[] if fluss else None)
        stamps = timestamps if timestamps is not None else [None] * len(writes)
        for (sk, task, view), ts in zip(writes, stamps, strict=True):
            p = kafka_partition(sk, num_partitions) if num_partitions > 1 else 0
            off = nxt.get(p, 0)
            nxt[p] = off + 1
            if task is None or view is None:  # a prune's tombstone (Kafka only)
                batch.append(p, off, ts, sk.encode("utf-8"), None, None)
                continue
            # a checkpoint-time refresh row (0.4+) of a logged state repeats its bytes; a replay's own is encoded again
            value = view if isinstance(view, bytes) else \
                encode_action_state(view.to_state(value_format=value_format), value_format=value_format)
            agent_key = (task.key_text if task.key_format not in ("K1.6", "K2") else task.business_key) if fluss \
                else None
            batch.append(p, off, ts, sk.encode("utf-8"), value, agent_key)
        return batch

    def _timestamps(self) -> list[int] | None:
        clock, run = self.clock, self.engine.run
        if clock is None:
            return None
        if callable(clock):
            return [epoch_ms(clock(i, run.steps[n])) for i, n in enumerate(run.write_steps)]
        base = epoch_ms(clock)
        return [base + n for n in run.write_steps]

    def partitions(self) -> int:
        """The topic's partition count: as given, else one past the last partition the base log knows."""
        if self.num_partitions is not None:
            return self.num_partitions
        ends = _base_ends(self.engine.log)
        if ends and max(ends) >= _MOST_INFERRED_PARTITIONS:   # one marker entry a partition: 2^31 exhausts memory
            raise ReplayError(f"the log names partition {max(ends):,}, more than a topic holds (a damaged record?); "
                              "pass num_partitions= (the topic's partition or bucket count) to write the replay's "
                              "records")
        return max(ends) + 1 if ends else 1

    def checkpoint(self, *, complete: bool = True) -> dict[int, int]:
        """Take a checkpoint now (once the replay has started) and return its marker; ``complete`` also prunes
        finished rounds (§8.4)."""
        e, run = self.engine, self.engine.run
        marker = end_offsets(self.journal(), log=e.log, num_partitions=self.partitions())
        marker = self._keep_pending(marker)
        snapshot = {**self.restored_last_completed, **run.last_completed}
        pending: list[tuple[str, int, str, AgentEvent]] = []
        if run.active is not None:
            key, seq, queue = run.active
            current = [run.current] if run.current is not None else []
            queued = [(d, ev) for d, ev, *_ in queue]
            # a task that has written is mid-body: upstream it suspended and was re-queued behind the tasks
            # queued before it (addActionTask appends to the FIFO actionTasks); one that has only been looked up
            # is still at the head (the lookup and the first write are one mailbox action)
            todo = queued + current if current and _has_written(run.steps) else current + queued
            pending = [(key, seq, d if isinstance(d, str) else d.name, ev) for d, ev in todo]
        # the operator's whole keyed state: keys without a round in this attempt keep what was restored
        seqs = {e.keys.business_key(k): int(v) for k, v in e.plan.restored_seq.items()}
        seqs.update(run.seq_of)
        mem = e.memory_states()
        run.checkpoints.append(Checkpoint(
            step=len(run.steps), marker=marker, restored_seq=seqs, pending=tuple(pending),
            short_term=MemoryByKey({k: dict(v.short_term) for k, v in mem.items()}, e.keys.business_key),
            sensory=MemoryByKey({k: dict(v.sensory) for k, v in mem.items()}, e.keys.business_key),
            last_completed=snapshot, inputs_consumed=run.inputs_started))
        if complete:
            self._complete(snapshot, marker)
        return marker

    def _keep_pending(self, marker: dict[int, int]) -> dict[int, int]:
        """0.4+ keeps every retained state across the checkpoint (#1158, #1175; addendum §2): as refresh rows,
        or (Kafka, ``kafka_pending="marker"``) by moving the marker back; 0.3 does neither (spec §8.4)."""
        e, run = self.engine, self.engine.run
        model = e.recovery.model
        if not model.keeps_pending:
            return marker
        retained = e.session.store.entries()
        if not model.refresh_rows(e.source_kind):
            return self._moved_back(marker, retained)
        for entry in retained:
            value = self._last_value(entry)
            if value is None:
                continue
            step = len(run.steps)
            run.writes.append((entry.state_key, entry, value))
            run.write_steps.append(step)
            run.steps.append(Step(step, StepKind.PERSIST, key=entry.business_key, seq=entry.seq,
                                  event_type=entry.task_event_type, event_id=entry.task_event_id,
                                  state_key=entry.state_key, outcome=StepOutcome.REFRESH,
                                  reason="checkpoint-time refresh of a retained state: re-appended byte-identical "
                                         "after the marker, so restoring this checkpoint brings it back "
                                         "(addendum §2.2)",
                                  change=f"put {entry.state_key} (unchanged)",
                                  detail={"journal_index": len(run.writes) - 1, "marker": dict(marker),
                                          "completed": entry.completed}))
        return marker

    def _last_value(self, entry: Entry) -> bytes | RecordView | None:
        """The value a retained entry was last written with: the logged bytes, or the replay's record (which the
        journal encodes to the bytes it wrote for it)."""
        e = self.engine
        if entry.pos is not None:
            return None if e.log is None else e.log.raw.value[entry.pos]
        return e.run.overlay.get(entry.state_key)

    def _moved_back(self, marker: dict[int, int], retained: list[Entry]) -> dict[int, int]:
        """Kafka under ``kafka_pending="marker"``: the marker per partition moves back to the oldest write of
        a retained state, so the rebuild reads it again (no refresh rows)."""
        e = self.engine
        journal = self.journal()
        last: dict[str, tuple[int, int]] = {}
        for p, off, key in zip(journal.partition, journal.offset, journal.key, strict=True):
            if key is not None:
                last[key.decode("utf-8")] = (int(p), int(off))
        recs = e.log.records if e.log is not None else None
        moved = dict(marker)
        for entry in retained:
            if entry.pos is not None and recs is not None:
                at: tuple[int, int] | None = (int(recs.at[entry.pos, "partition"]), int(recs.at[entry.pos, "offset"]))
            else:
                at = last.get(entry.state_key)
            if at is not None:
                moved[at[0]] = min(moved.get(at[0], at[1]), at[1])
        return moved

    def _complete(self, snapshot: Mapping[str, int], marker: Mapping[int, int]) -> None:
        e, run = self.engine, self.engine.run
        for key, seq in sorted(snapshot.items()):
            result = e.session.prune(key, seq, key_text=e.keys.key_text(key))
            step = len(run.steps)
            tombstones = [x.state_key for x in result.removed] if self.prune_tombstones else []
            for state_key in tombstones:  # written as the prune runs, so a later marker covers them
                run.writes.append((state_key, None, None))
                run.write_steps.append(step)
            run.steps.append(Step(step, StepKind.PRUNE, key=key, seq=seq,
                                  outcome=StepOutcome.FAILED if result.failed else StepOutcome.PRUNED,
                                  reason=result.failed or f"checkpoint complete: prune rounds <= {seq}",
                                  change=removed_text(result.removed),
                                  detail={"removed": len(result.removed), "marker": marker,
                                          "tombstones": len(tombstones)}))
            if result.failed:
                # pruneState throws out of notifyCheckpointComplete: the job fails (spec §8.3)
                run.failure = run.failure or JobFailed(f"checkpoint completion failed: {result.failed}")
                break

    def to_log(self) -> ActionStateLog:
        """The base records followed by the journal, decoded as one ``ActionStateLog``."""
        log, journal, num_partitions = self.engine.log, self.journal(), self.partitions()
        batches = [journal] if log is None else [log.raw, journal]
        src = getattr(log, "source", None)
        starts: dict[int, int] = dict(getattr(src, "start_offsets", None) or {})
        for p in range(num_partitions):   # every partition/bucket of the topic, as a source reports it (the base
            starts.setdefault(p, 0)       # log's own are in starts; the journal writes only to these)
        ends = end_offsets(journal, log=log, num_partitions=num_partitions)
        kind = getattr(src, "kind", None) or ("fluss" if journal.agent_key is not None else "kafka")
        source = SourceInfo(kind=kind, location=getattr(src, "location", JOURNAL_LOCATION),
                            topic=getattr(src, "topic", None), start_offsets=starts, end_offsets=ends,
                            file_format=getattr(src, "file_format", None),
                            options={**dict(getattr(src, "options", {}) or {}), "replay_journal": True})
        return ActionStateLog.from_raw(batches, source)


# Above this partition number a log's partitions are not taken as the topic's partition count (pass it instead).
_MOST_INFERRED_PARTITIONS = 1 << 16


def _has_written(steps: list[Step]) -> bool:
    """Whether the task of the last LOOKUP step has persisted a state since."""
    for i in range(len(steps) - 1, -1, -1):
        if steps[i].kind is StepKind.LOOKUP:
            task = steps[i].task
            return any(s.kind is StepKind.PERSIST and s.task == task for s in steps[i + 1:])
    return False


JOURNAL_LOCATION = "agent_inspect:replay-journal"
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def epoch_ms(t: Any) -> int:
    """Milliseconds since the epoch of an int (taken as is) or a datetime (naive means UTC)."""
    if isinstance(t, datetime.datetime):
        if t.tzinfo is None:
            t = t.replace(tzinfo=datetime.UTC)
        return int((t - _EPOCH) // datetime.timedelta(milliseconds=1))
    if isinstance(t, bool) or not isinstance(t, numbers.Integral):
        raise ReplayError(f"a journal clock gives epoch milliseconds (int) or a datetime, not {t!r}")
    return int(t)


def _base_ends(log: Any) -> dict[int, int]:
    """Per partition the base log knows (its source's ends and its records'), the next offset to write."""
    if log is None:
        return {}
    ends = dict(getattr(getattr(log, "source", None), "end_offsets", None) or {})
    recs = log.records
    if len(recs):
        for p, off in recs.groupby("partition", observed=True)["offset"].max().items():
            ends[int(p)] = max(ends.get(int(p), 0), int(off) + 1)
    return {int(p): int(o) for p, o in ends.items()}


def end_offsets(journal: Any, *, log: Any, num_partitions: int) -> dict[int, int]:
    """The recovery marker now: per partition, the next offset to be written (§6.4)."""
    ends = _base_ends(log)
    for p in range(num_partitions):
        ends.setdefault(p, 0)
    for p, off in zip(journal.partition, journal.offset):
        ends[p] = max(ends.get(p, 0), off + 1)
    return dict(sorted(ends.items()))

