"""A production job across attempts: the replay executor as the operator, the topic as a log.

Each attempt is a :class:`~agent_inspect.executor.ReplayExecutor` in production mode. Attempt 1
starts fresh; a later attempt restores one of the checkpoints taken so far (its marker, seqNums,
memory and in-flight tasks) and replays the source from that checkpoint's position. What every
attempt wrote is appended to the topic with deterministic timestamps.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Job", "CheckpointInfo", "AttemptInfo", "BASE_TIME_MS", "TOPIC"]

#: 2026-09-14T08:00:00Z: every sample's clock starts here, so timestamps never depend on the run.
BASE_TIME_MS = 1_789_372_800_000
TOPIC = "flink-agents-action-state"
_RESTART_GAP_MS = 47_000


@dataclass(frozen=True)
class CheckpointInfo:
    """One checkpoint a sample's job took: its id, attempt, marker and source position."""

    id: int
    attempt: int
    marker: Mapping[int, int]
    source_position: int          # how many source inputs had started when it was taken
    in_flight: int = 0            # tasks of a round in progress, restored with their original event ids


@dataclass(frozen=True)
class AttemptInfo:
    """One attempt of a sample's job: where it restored from, the rule it ran, what it wrote."""

    attempt: int
    restored_from: int | None     # checkpoint id, None for a fresh start
    rule: str | None
    records: int
    ended: str                    # "failed" or "finished"
    note: str = ""


@dataclass
class _Saved:
    info: CheckpointInfo
    checkpoint: Any               # the executor's Checkpoint: the job's whole keyed state


class Job:
    """Drive a job attempt by attempt; the topic so far is :attr:`log`.

    ``source`` is the ordered input stream ``[(key, input value), ...]``; an attempt replays it from
    its restore position (it may be edited between attempts to model a changed source order).
    ``operator_rule`` is the store's lookup rule during a fresh start (restores name their own).
    ``runtime`` is the upstream runtime the operator is ("0.3": the spec's model, nothing kept across a
    checkpoint; "0.4"/"main": retained states are re-appended at every checkpoint, and main writes V4).
    """

    def __init__(self, agent: Any, source: Sequence[tuple[str, Any]], *, key_format: str, seed: int,
                 num_partitions: int = 1, value_format: str = "V3",
                 restored_seq: Mapping[str, int] | None = None, operator_rule: str = "original",
                 runtime: str = "0.3") -> None:
        self.agent = agent
        self.runtime = runtime
        self.operator_rule = operator_rule
        self.source: list[tuple[str, Any]] = list(source)
        self.key_format = key_format
        self.value_format = value_format
        self.num_partitions = num_partitions
        self._seed = seed
        self._clock = random.Random(seed)
        self._now = BASE_TIME_MS
        self._initial_seq = dict(restored_seq or {})
        self._rows: list[tuple[int, int, int, bytes, bytes | None]] = []
        self._saved: list[_Saved] = []
        self.attempts: list[AttemptInfo] = []
        self.log: Any = None

    @property
    def checkpoints(self) -> tuple[CheckpointInfo, ...]:
        return tuple(s.info for s in self._saved)

    def restore_point(self, checkpoint: int) -> dict[str, Any]:
        """What a restore of ``checkpoint`` starts from: markers, seqNums, in-flight tasks, short-term
        memory and the replayed inputs."""
        saved = self._saved[checkpoint - 1]
        pending = [(k, s, a, {"type": e.type, "attributes": dict(e.attributes), "id": e.id})
                   for k, s, a, e in saved.checkpoint.pending]
        return {"checkpoint": checkpoint, "markers": [dict(saved.info.marker)],
                "restored_seq": dict(sorted(saved.checkpoint.restored_seq.items())), "pending": pending,
                "short_term": {k: dict(v) for k, v in sorted(saved.checkpoint.short_term.items())},
                "replay": [(k, v) for k, v in self.source[saved.info.source_position:]]}

    def run(self, *, restore: int | None = None, rule: str = "original",
            stop: Callable[[Any], bool] | None = None, fails: bool = False, checkpoint_every: int = 0,
            checkpoint_when: Callable[[Any], bool] | None = None,
            checkpoint_at_start: bool | None = None, inputs: int | None = None, note: str = "") -> Any:
        """Run one attempt; returns its executor.

        ``restore``: the checkpoint id to restore (None: fresh start). ``stop(step)``: the job dies
        right after the step for which it returns True; otherwise it runs to the end of the source
        (or of ``inputs`` source inputs) and then dies when ``fails``. ``checkpoint_every``: a
        completed checkpoint after every n finished rounds, plus one at the start when
        ``checkpoint_at_start`` (default: on fresh starts only), plus one right after each step for
        which ``checkpoint_when(step)`` is True (e.g. mid-round, with tasks in flight).
        """
        from agent_inspect.executor import Policies, ReplayExecutor, StepKind, json_envelope_decoder

        attempt = len(self.attempts) + 1
        if restore is None:
            start, seqs, stm, sensory, checkpoint = 0, dict(self._initial_seq), {}, {}, None
        else:
            saved = self._saved[restore - 1]
            start, checkpoint = saved.info.source_position, saved.checkpoint
            cp = saved.checkpoint
            seqs = dict(cp.restored_seq)
            stm = {k: dict(v) for k, v in cp.short_term.items()}
            sensory = {k: dict(v) for k, v in cp.sensory.items()}
        stream = self.source[start:] if inputs is None else self.source[start:start + inputs]
        # the operator reads its own payloads back (pickles it wrote; memory as JSON envelopes)
        ex = ReplayExecutor(self.log, agent=self.agent, rule=rule if restore is not None else self.operator_rule,
                            restore=checkpoint, markers=None if checkpoint is not None else [],
                            plan={"inputs": stream, "restored_seq": seqs},
                            memory=stm, sensory=sensory, key_format=self.key_format,
                            value_format=self.value_format, num_partitions=self.num_partitions,
                            seed=self._seed * 1000 + attempt, attempt=attempt,
                            policies=Policies(trust_payloads=True), memory_decoder=json_envelope_decoder,
                            runtime=self.runtime)
        ex.step()                                                   # the rebuild
        if checkpoint_at_start or (checkpoint_at_start is None and restore is None):
            self._checkpoint(ex, attempt, start)
        rounds = 0
        ended = "finished"
        while True:
            s = ex.step()
            if s is None:
                if ex.failure:
                    ended = "failed"
                break
            if checkpoint_when is not None and checkpoint_when(s):    # before stop: a job may die right after
                self._checkpoint(ex, attempt, start)
            if stop is not None and stop(s):
                ended = "failed"
                break
            if s.kind is StepKind.ROUND_COMPLETE and s.event_id is not None:
                rounds += 1
                if checkpoint_every and rounds % checkpoint_every == 0:
                    self._checkpoint(ex, attempt, start)
        if fails:
            ended = "failed"
        written = self._append(ex)
        self.attempts.append(AttemptInfo(attempt, restore, rule if restore is not None else self.operator_rule, written,
                                         ended, note))
        return ex

    def _checkpoint(self, ex: Any, attempt: int, start: int) -> None:
        marker = ex.checkpoint()                                     # completes: prunes finished rounds
        cp = ex.checkpoints[-1]
        info = CheckpointInfo(len(self._saved) + 1, attempt, dict(marker), start + cp.inputs_consumed,
                              len(cp.pending))
        self._saved.append(_Saved(info, cp))

    def _append(self, ex: Any) -> int:
        from agent_inspect.log import ActionStateLog
        from agent_inspect.sources import RawBatch, SourceInfo

        journal = ex.journal
        if self._rows:
            self._now += _RESTART_GAP_MS
        for p, off, key, value in zip(journal.partition, journal.offset, journal.key, journal.value):
            self._now += self._clock.randint(3, 900)
            self._rows.append((p, off, self._now, key, value))
        batch = RawBatch()
        for p, off, ts, key, value in self._rows:
            batch.append(p, off, ts, key, value)
        ends = {p: 0 for p in range(self.num_partitions)}
        for p, off, *_ in self._rows:
            ends[p] = max(ends[p], off + 1)
        source = SourceInfo(kind="kafka", location=f"kafka://localhost:9092/{TOPIC}", topic=TOPIC,
                            start_offsets={p: 0 for p in range(self.num_partitions)}, end_offsets=ends)
        self.log = ActionStateLog.from_raw([batch], source)
        return len(journal)
