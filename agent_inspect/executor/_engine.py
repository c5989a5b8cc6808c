"""The replay executor: drive the recovery store and a rule task by task, like a debugger."""

from __future__ import annotations

import datetime
import random
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import greenlet

from agent_inspect._errors import ReplayError
from agent_inspect.agents import OUTPUT_EVENT, SUBAGENT_EVENT, ActionDecl, AgentEvent
from agent_inspect.executor._calls import (
    CallEvent,
    CallJournal,
    CallSlot,
    decode_recorded,
)
from agent_inspect.executor._context import ReplayContext
from agent_inspect.executor._events import IdSource, wrap_subagent
from agent_inspect.executor._memory import Memory
from agent_inspect.executor._plan import PlanView, plan_view
from agent_inspect.executor._policy import ActionPolicy, CallPolicy, Policies, as_policies
from agent_inspect.executor._record import RecordView
from agent_inspect.executor._statekeys import KeyMaker
from agent_inspect.executor._steps import STEP_COLUMNS, Breakpoint, Step, StepKind

__all__ = ["ReplayExecutor", "Counters", "MemoryState", "Checkpoint"]

_SERVED = ("hit", "hit-failed", "pending-hit")


@dataclass(frozen=True)
class Counters:
    """What the replay has done so far (derived from the steps, so ``back()`` keeps them exact)."""

    tasks: int = 0
    reused: int = 0
    resumed: int = 0
    rerun: int = 0
    bodies_executed: int = 0
    shadow_runs: int = 0
    calls_executed: int = 0
    calls_served: int = 0
    calls_reconciled: int = 0
    calls_stubbed: int = 0
    calls_denied: int = 0
    writes: int = 0
    entries_evicted: int = 0
    entries_invalidated: int = 0


@dataclass(frozen=True)
class MemoryState:
    """Short-term and sensory memory of one business key at the current step (read-only snapshots)."""

    short_term: Mapping[str, Any]
    sensory: Mapping[str, Any]


@dataclass(frozen=True)
class Checkpoint:
    """What a checkpoint captured: enough to restore a later attempt from it.

    ``marker`` is the recovery marker (end offsets of base log + journal, §6.4); ``restored_seq`` the
    ``messageSequenceNumber`` per key; ``pending`` the in-flight tasks of the round in progress as
    ``(key, seq, action, event)`` (original event ids, §9.5); ``short_term``/``sensory`` the memory
    per key; ``last_completed`` the ``lastCompletedSequenceNumber`` per key (what completing the checkpoint
    prunes); ``inputs_consumed`` how many plan inputs had started. Seqs, memory and last completed rounds
    cover every key the job knows (restored or run in this attempt), keyed by business key. Pass it as
    ``ReplayExecutor(log, restore=checkpoint, plan={"inputs": later_inputs}, ...)``.
    """

    step: int
    marker: Mapping[int, int]
    restored_seq: Mapping[str, int]
    pending: tuple[tuple[str, int, str, AgentEvent], ...]
    short_term: Mapping[str, Mapping[str, Any]]
    sensory: Mapping[str, Mapping[str, Any]]
    last_completed: Mapping[str, int]
    inputs_consumed: int


class _JobFailed(BaseException):
    """The simulated job failed (a lookup threw, a body raised, a call was denied)."""

    def __init__(self, reason: str, error: BaseException | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.error = error


@dataclass
class _Run:
    """Everything one pass from the start owns; ``reset()`` builds a new one."""

    session: Any
    ids: IdSource
    memory: dict[str, tuple[Memory, Memory]]
    steps: list[Step] = field(default_factory=list)
    writes: list[tuple[str, Any, RecordView]] = field(default_factory=list)   # (state_key, task, value)
    write_steps: list[int] = field(default_factory=list)                     # each write's PERSIST step
    overlay: dict[str, RecordView] = field(default_factory=dict)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    last_completed: dict[str, int] = field(default_factory=dict)
    call_ordinal: int = 0
    task_ordinal: int = -1
    finished: bool = False
    failure: _JobFailed | None = None
    checkpoints: list[Checkpoint] = field(default_factory=list)
    seq_of: dict[str, int] = field(default_factory=dict)          # messageSequenceNumber per key
    inputs_started: int = 0
    active: tuple[str, int, Any] | None = None                     # top-level round: key, seq, queue
    rounds: dict[tuple[str, int], None] = field(default_factory=dict)   # replayed (key, seq), in order
    looked_up: set[str] = field(default_factory=set)                    # state keys some task looked up
    current: tuple[Any, AgentEvent] | None = None                  # its task being processed


class ReplayExecutor:
    """Step through a recovery (or a dry-run replay) one store decision at a time.

    Build it from a loaded log (or a reconstruction result), the recovery ``markers``, a replay
    ``plan`` (per-key inputs after the restore, restored seqNums, restored in-flight tasks; default:
    inferred from the log), an ``agent`` (a :class:`~agent_inspect.agents.PythonAgent`, a case file's
    declarative agent, an as-recorded agent, or a flink-agents agent) and a divergence ``rule``::

        ex = ai.ReplayExecutor(log, agent=agent, rule="fixed", markers=[{0: 120}])
        ex.step(); ex.run(until=Breakpoint(kind="rerun")); ex.back()
        ex.steps            # one row per step
        ex.store, ex.memory, ex.counters

    The loaded records are a read-only base: every write goes to an overlay (see :attr:`journal`),
    memory is copy-on-write, and no source client is ever used. Bodies must have side effects only
    through their context; ``back()`` re-runs from the start to the previous step, serving durable
    calls that already ran from memory so external functions are not called twice.

    Markers: ``None`` rebuilds from the whole loaded log (as ``predict`` does), ``[]`` is a fresh start.
    K2 restore checks (spec §6.5): a rebuild window with a serializer fingerprint other than
    ``expected_fingerprint`` (default: the window's most common) or, when ``max_parallelism`` is
    given, a key group outside ``[0, max_parallelism)`` fails the restore (the job fails at the first
    lookup). ``max_parallelism`` (default 128) also sets the key groups of keys absent from the log.
    ``source_kind`` ("kafka" / "fluss", default: the log's, else "kafka") selects the original rule's
    snapshot flavour for K1 keys and the journal's layout.
    Plan keys are Flink key texts or the log's business keys; steps, memory and the store use the
    log's business key (the digest under K1.6/K2).

    Production mode: with no log the executor is the *operator* of a fresh job. :attr:`journal`
    holds its writes in upstream order (initial, call records, completed), :meth:`checkpoint`
    returns a marker and keeps a :class:`Checkpoint`, :meth:`fail_after` stops the job after a
    step, and :meth:`to_log` gives the topic as it now reads; the next attempt is
    ``ReplayExecutor(ex.to_log(), restore=ex.checkpoints[-1], plan=..., rule=...)``.
    Journal records have no timestamp unless ``clock`` is given: a base time (epoch milliseconds
    or a datetime; naive means UTC) stamps each record base + the index of its PERSIST step in
    milliseconds (increasing, gaps follow the work in between); a callable ``clock(i, step)``
    gets the journal index and the :class:`Step` that wrote the record (PERSIST, or PRUNE for a
    tombstone) and returns the time (it must be pure: the journal is rebuilt on every access).
    ``prune_tombstones`` is the Kafka store's ``kafkaActionStateTombstoneEnabled`` (#885, spec §6.6):
    completing a checkpoint also journals a tombstone for each state key it prunes.
    """

    def __init__(self, log: Any = None, *, agent: Any = None, plan: Any = None,
                 markers: Sequence[Mapping[int, int]] | None = None, rule: Any = None,
                 policies: Policies | Mapping[str, Any] | None = None,
                 key_format: str | None = None, value_format: str = "V3",
                 num_partitions: int | None = None, max_parallelism: int | None = None,
                 expected_fingerprint: str | None = None,
                 memory: Mapping[str, Mapping[str, Any]] | None = None,
                 sensory: Mapping[str, Mapping[str, Any]] | None = None,
                 breakpoints: Iterable[Breakpoint] = (), fail_after: int | None = None,
                 attempt: int | None = None, seed: int | None = None,
                 memory_decoder: Callable[[Any], Any] | None = None, restore: Checkpoint | None = None,
                 source_kind: str | None = None,
                 clock: int | datetime.datetime | Callable[[int, Step], Any] | None = None,
                 prune_tombstones: bool = False, runtime: Any = "auto") -> None:
        from agent_inspect.executor._agents import as_agent
        from agent_inspect.log import resolve_runtime

        self._log = _as_log(log)
        if agent is None:
            if self._log is None:
                raise ReplayError("no agent and no log: pass agent=... (e.g. a PythonAgent) to run a fresh job")
            from agent_inspect.agents import AsRecordedAgent

            agent = AsRecordedAgent(self._log)       # deterministic reruns as the log shows them (§15.6)
        self._agent = as_agent(agent)
        if log is not None and log is not self._log:       # a reconstruction: its rule and markers by default
            rule = getattr(log, "rule", None) if rule is None else rule
            markers = getattr(log, "markers", None) if markers is None else markers
        #: the upstream runtime the log is read as (``runtime=``: "0.3" / "0.4" / "main" / "auto"), and why
        self.runtime = resolve_runtime(runtime, self._log)
        self._rule = self.runtime.default_rule if rule is None else rule  # what that runtime ships
        restored_last_completed = dict(restore.last_completed) if restore is not None else {}
        if restore is not None:
            markers = [restore.marker] if markers is None else markers
            memory = restore.short_term if memory is None else memory
            sensory = restore.sensory if sensory is None else sensory
            plan = _restore_plan(plan, restore)
        if isinstance(markers, Mapping):
            markers = [markers]
        self._markers = None if markers is None else [dict(m) for m in markers]
        self._policies = as_policies(policies)
        self._value_format = value_format
        self._keys = KeyMaker(self._log, key_format=key_format,
                              max_parallelism=128 if max_parallelism is None else max_parallelism)
        self._restore_checks = {"expected_fingerprint": expected_fingerprint, "max_parallelism": max_parallelism}
        self._plan: PlanView = plan_view(plan, self._log, markers=self._markers)
        self._keys.register(self._plan.plan.keys)
        self._num_partitions = num_partitions
        self._source_kind = source_kind
        # lastCompletedSequenceNumber is keyed state: a checkpoint collects it for every key (§9.1), restored ones too
        self._restored_last_completed = {self._business_key(k): int(v) for k, v in restored_last_completed.items()}
        from agent_inspect.recovery import source_kind_of

        if prune_tombstones and (source_kind or source_kind_of(self._log) or "kafka") != "kafka":
            raise ReplayError("prune_tombstones is a Kafka store setting (#885); a Fluss log table gets none")
        self._prune_tombstones = prune_tombstones
        self._base_stm = {self._business_key(k): dict(v) for k, v in (memory or {}).items()}
        self._base_sensory = {self._business_key(k): dict(v) for k, v in (sensory or {}).items()}
        self.breakpoints: list[Breakpoint] = list(breakpoints)
        self._fail_after = fail_after
        self._attempt = int(self._plan.plan.attempt if attempt is None else attempt)
        # ids must never repeat across attempts (evidence compares ids), but must repeat on back()
        self._seed = random.SystemRandom().getrandbits(64) if seed is None else seed
        self._memory_decoder = memory_decoder
        self._clock = clock
        self._memo: dict[int, tuple[tuple[str, str], str, Any, BaseException | None]] = {}
        self._base_session: Any = None
        self._driver: list[tuple[int, bool, int]] = []      # checkpoints: (at step, complete, steps added)
        self.reset()

    def _business_key(self, key: str) -> str:
        try:
            return self._keys.business_key(key)
        except ReplayError:
            return key

    @classmethod
    def from_case(cls, case: Any, *, rule: Any = None, **options: Any) -> ReplayExecutor:
        """Deprecated: use :func:`agent_inspect.cases.executor_for` (case files sit above the executor)."""
        import importlib
        import warnings

        warnings.warn("ReplayExecutor.from_case moved to agent_inspect.cases.executor_for; call that instead "
                      "(this name will be removed in the next release)", DeprecationWarning, stacklevel=2)
        executor: ReplayExecutor = importlib.import_module("agent_inspect.cases").executor_for(
            case, rule=rule, **options)
        return executor

    # ------------------------------------------------------------------------------ control

    def reset(self) -> None:
        """Back to before the first step (the rebuild). Durable calls already run stay memoised."""
        self._driver = []
        self._restart()

    def _restart(self) -> None:
        self._run = _Run(session=None, ids=IdSource(hash((self._seed, self._attempt))), memory={})
        self._g = greenlet.greenlet(self._main)
        self._thread = threading.get_ident()

    def _replay_to(self, target: int) -> None:
        """Re-run from the start to ``target`` steps, re-applying the driver's checkpoints."""
        keep = [a for a in self._driver if a[0] + a[2] <= target]
        self._restart()
        self._driver = []
        while True:
            if keep and keep[0][0] == len(self._run.steps):
                self.checkpoint(complete=keep.pop(0)[1])
                continue
            if len(self._run.steps) >= target or self.step() is None:
                break

    def step(self) -> Step | None:
        """Run one step and return it; None when the replay has ended (or the job failed)."""
        if self.done:
            return None
        if self._thread != threading.get_ident():
            # a greenlet only runs on the thread that made it: rebuild this state here (deterministic)
            self._replay_to(len(self._run.steps))
        if self._fail_after is not None and len(self._run.steps) >= self._fail_after:
            self._run.failure = self._run.failure or _JobFailed(f"simulated failure after step {self._fail_after}")
            return None
        result = self._g.switch()
        if self._g.dead:
            self._run.finished = True
            return None if not isinstance(result, Step) else result
        return result

    def run(self, until: Breakpoint | Callable[[Step], bool] | None = None, *,
            max_steps: int | None = None) -> Step | None:
        """Step until ``until`` (a predicate or :class:`Breakpoint`) or a breakpoint matches, or the end.

        Returns the step it stopped at, or None when the replay ended first.
        """
        stop = _predicate(until)
        n = 0
        while True:
            s = self.step()
            if s is None:
                return None
            n += 1
            if (stop is not None and stop(s)) or any(b.matches(s) for b in self.breakpoints):
                return s
            if max_steps is not None and n >= max_steps:
                return s

    def back(self) -> Step | None:
        """Return exactly to the state after the previous step (deterministic re-execution)."""
        n = len(self._run.steps)
        if n == 0:
            return None
        target = n - 1
        for start, _, added in self._driver:       # a checkpoint's PRUNE steps go back together
            if start < target < start + added:
                target = start
        self._replay_to(target)
        return self.current

    def fail_after(self, step: int | None) -> None:
        """Make the simulated job die once ``step`` steps have run (None: never). See :meth:`checkpoint`."""
        self._fail_after = step

    def add_breakpoint(self, **where: Any) -> Breakpoint:
        """Add a :class:`Breakpoint` (``key=``, ``seq=``, ``action=``, ``kind=``, ``outcome=``, ``when=``)."""
        bp = Breakpoint(**where)
        self.breakpoints.append(bp)
        return bp

    # ------------------------------------------------------------------------------ inspection

    @property
    def done(self) -> bool:
        """True when the replay ended or the (simulated) job failed."""
        return self._run.finished or self._run.failure is not None

    @property
    def failure(self) -> str | None:
        """Why the simulated job stopped (a throwing lookup, a failing body, a denied call), else None."""
        return None if self._run.failure is None else self._run.failure.reason

    @property
    def current(self) -> Step | None:
        """The last step run."""
        return self._run.steps[-1] if self._run.steps else None

    @property
    def step_list(self) -> tuple[Step, ...]:
        return tuple(self._run.steps)

    @property
    def steps(self) -> Any:
        """The steps so far as a DataFrame (one row per step)."""
        import pandas as pd

        frame = pd.DataFrame([s.as_row() for s in self._run.steps], columns=STEP_COLUMNS)
        for col in ("index", "seq", "call_index", "task"):
            frame[col] = frame[col].astype("Int64")
        return frame.set_index("index", drop=False).rename_axis(None)

    @property
    def session(self) -> Any:
        """The recovery session (store + rule state) as of the current step. Do not modify it."""
        self._ensure_started()
        return self._run.session

    @property
    def store(self) -> Any:
        """The simulated store (``agent_inspect.recovery.Store``) as of the current step."""
        return self.session.store

    @property
    def cache(self) -> Any:
        """The simulated cache as a DataFrame: one row per cached state key, ``written`` by the replay."""
        import pandas as pd

        rows = [{"state_key": e.state_key, "business_key": e.business_key, "seq": e.seq,
                 "event_uuid": e.event_uuid, "action_uuid": e.action_uuid, "is_root": e.is_root,
                 "completed": e.completed, "pos": e.pos, "written": e.pos is None}
                for e in self.store.entries()]
        return pd.DataFrame(rows, columns=["state_key", "business_key", "seq", "event_uuid", "action_uuid",
                                           "is_root", "completed", "pos", "written"])

    @property
    def memory(self) -> Mapping[str, MemoryState]:
        """Per business key: short-term and sensory memory as of the current step."""
        out = {}
        for key in sorted(set(self._run.memory) | set(self._base_stm) | set(self._base_sensory)):
            stm, sensory = self._memory_of(key)
            out[key] = MemoryState(stm.snapshot(), sensory.snapshot())
        return out

    @property
    def outputs(self) -> Any:
        """Events sent downstream so far (reused actions send theirs again, §9.3 step 4)."""
        import pandas as pd

        return pd.DataFrame(self._run.outputs,
                            columns=["step", "key", "seq", "action", "event_id", "type", "attributes", "reused"])

    @property
    def counters(self) -> Counters:
        """Counts of what ran, derived from the steps."""
        c: dict[str, int] = dict.fromkeys(Counters.__dataclass_fields__, 0)
        for s in self._run.steps:
            kind, out = s.kind, (s.outcome or "")
            if kind is StepKind.LOOKUP and out in ("REUSE", "RESUME", "RERUN", "FAIL", "NOT-DISPATCHED"):
                c["tasks"] += 1
            if kind is StepKind.REUSE:
                c["reused"] += 1
            elif kind in (StepKind.RESUME, StepKind.RERUN) and s.call_index is None:
                if out in ("RESUME", "RERUN"):
                    c["bodies_executed"] += 1
                    c["resumed" if out == "RESUME" else "rerun"] += 1
                elif out.startswith("diff"):
                    c["shadow_runs"] += 1
            elif kind in (StepKind.RESUME, StepKind.RERUN):
                if out in _SERVED or out == "served-recorded":
                    c["calls_served"] += 1
                elif out == "execute":
                    c["calls_executed"] += 1
                elif out == "reconcile":
                    c["calls_reconciled"] += 1
                elif out == "stub":
                    c["calls_stubbed"] += 1
                elif out == "deny":
                    c["calls_denied"] += 1
            elif kind is StepKind.PERSIST:
                c["writes"] += 1
            elif kind is StepKind.EVICTION:
                c["entries_evicted"] += int(s.detail.get("removed", 0))
            elif kind is StepKind.INVALIDATION:
                c["entries_invalidated"] += int(s.detail.get("removed", 0))
        return Counters(**c)

    # ------------------------------------------------------------------------------ production mode

    @property
    def journal(self) -> Any:
        """The overlay's writes in order as a :class:`~agent_inspect.sources.RawBatch`-like journal.

        Keys are ``format_state_key`` text, values ``encode_action_state`` bytes of ``value_format``;
        partitions follow the upstream partitioner; offsets continue after the base log's end.
        """
        from agent_inspect.executor._journal import build_journal

        kind = getattr(getattr(self._log, "source", None), "kind", None) or self._source_kind or "kafka"
        return build_journal(self._run.writes, log=self._log, keys=self._keys, value_format=self._value_format,
                             num_partitions=self._partitions(), source_kind=kind, timestamps=self._timestamps())

    def _timestamps(self) -> list[int] | None:
        from agent_inspect.executor._journal import epoch_ms

        clock, run = self._clock, self._run
        if clock is None:
            return None
        if callable(clock):
            return [epoch_ms(clock(i, run.steps[n])) for i, n in enumerate(run.write_steps)]
        base = epoch_ms(clock)
        return [base + n for n in run.write_steps]

    def checkpoint(self, *, complete: bool = True) -> dict[int, int]:
        """Take a checkpoint now: the marker (end offsets of base log + journal, §6.4).

        With ``complete=True`` the checkpoint also completes: every key's finished rounds are pruned
        from the cache (§8.4), each as a PRUNE step. A prune that throws upstream (snapshot Kafka's strict
        parser, §8.3) fails the simulated job. The full state (seqNums, in-flight tasks, memory)
        is kept in :attr:`checkpoints` for ``ReplayExecutor(..., restore=checkpoint)``; a task whose
        lookup step has run counts as in flight (upstream checkpoints fall between mailbox actions,
        so take them at task boundaries, e.g. at a LOOKUP or ROUND_COMPLETE step).
        """
        from agent_inspect.executor._journal import end_offsets

        self._ensure_started()
        run = self._run
        start = len(run.steps)
        marker = end_offsets(self.journal, log=self._log, num_partitions=self._partitions())
        snapshot = {**self._restored_last_completed, **run.last_completed}
        pending: list[tuple[str, int, str, AgentEvent]] = []
        if run.active is not None:
            key, seq, queue = run.active
            todo = ([run.current] if run.current is not None else []) + [(d, e) for d, e, _ in queue]
            pending = [(key, seq, _name(d), e) for d, e in todo]
        # the operator's whole keyed state: keys without a round in this attempt keep what was restored
        seqs = {self._business_key(k): int(v) for k, v in self._plan.plan.restored_seq.items()}
        seqs.update(run.seq_of)
        mem = {k: (dict(v.short_term), dict(v.sensory)) for k, v in self.memory.items()}
        run.checkpoints.append(Checkpoint(
            step=len(run.steps), marker=marker, restored_seq=seqs, pending=tuple(pending),
            short_term={k: v[0] for k, v in mem.items()}, sensory={k: v[1] for k, v in mem.items()},
            last_completed=snapshot, inputs_consumed=run.inputs_started))
        if complete:
            for key, seq in sorted(snapshot.items()):
                result = self._run.session.prune(key, seq, key_text=self._keys.key_text(key))
                step = len(self._run.steps)
                tombstones = [e.state_key for e in result.removed] if self._prune_tombstones else []
                for state_key in tombstones:  # written as the prune runs, so a later marker covers them
                    run.writes.append((state_key, None, None))
                    run.write_steps.append(step)
                self._record(Step(step, StepKind.PRUNE, key=key, seq=seq,
                                  outcome="failed" if result.failed else "pruned",
                                  reason=result.failed or f"checkpoint complete: prune rounds <= {seq}",
                                  change=_removed_text(result.removed),
                                  detail={"removed": len(result.removed), "marker": marker,
                                          "tombstones": len(tombstones)}))
                if result.failed:
                    # pruneState throws out of notifyCheckpointComplete: the job fails (spec §8.3)
                    run.failure = run.failure or _JobFailed(f"checkpoint completion failed: {result.failed}")
                    break
        self._driver.append((start, complete, len(run.steps) - start))   # replayed by back()
        return marker

    @property
    def checkpoints(self) -> list[Checkpoint]:
        """Checkpoints taken so far (see :class:`Checkpoint`)."""
        return list(self._run.checkpoints)

    def to_log(self) -> Any:
        """The base records plus this executor's journal as a new ``ActionStateLog`` (the topic now)."""
        from agent_inspect.executor._journal import combined_log

        return combined_log(self._log, self.journal, num_partitions=self._partitions())

    def report(self) -> Any:
        """The replay-safety report (DataFrame ``.frame`` plus an escaped ``_repr_html_``)."""
        from agent_inspect.executor._report import ReplaySafetyReport

        return ReplaySafetyReport.from_steps(self._run.steps, counters=self.counters, failure=self.failure,
                                             stale_records=self.stale_records())

    def stale_records(self) -> Any:
        """Rebuilt production records whose action identity is in no action of the candidate agent.

        Under K1/K1.5 a changed module, qualname or trigger list changes the identity, so these
        records will never be looked up (their work re-runs); under K2 only a rename does (§4.4, L01).
        """
        import pandas as pd

        self._ensure_started()
        fmt = self._keys.format
        known = {self._agent.action_uuid(d.name, fmt, attempt=self._attempt) for d in self._agent.agent.actions}
        rows = [{"state_key": e.state_key, "business_key": e.business_key, "seq": e.seq,
                 "action_uuid": e.action_uuid, "completed": e.completed, "pos": e.pos}
                for e in self._base_session.store.entries() if e.action_uuid not in known]
        return pd.DataFrame(rows, columns=["state_key", "business_key", "seq", "action_uuid", "completed", "pos"])

    def __repr__(self) -> str:
        state = "failed" if self.failure else "done" if self.done else "paused"
        return f"ReplayExecutor({len(self._run.steps)} steps, {state}, rule={self._rule!r})"

    def _repr_html_(self) -> str:
        from agent_inspect._html import escape, frame_html

        cur = self.current
        head = (f"<p><b>ReplayExecutor</b> — {len(self._run.steps)} steps, "
                f"{'done' if self.done else 'paused'}"
                f"{', failed: ' + escape(self.failure) if self.failure else ''}</p>")
        if cur is not None:
            head += f"<p>current: {escape(cur.kind.value)} {escape(cur.key)} seq {escape(cur.seq)} " \
                    f"{escape(cur.action)} → {escape(cur.outcome)}</p>"
        return head + frame_html(self.steps.tail(20), caption="last steps")

    # ------------------------------------------------------------------------------ engine

    def _ensure_started(self) -> None:
        if self._run.session is None and not self._run.steps:
            self.step()

    def _partitions(self) -> int:
        if self._num_partitions is not None:
            return self._num_partitions
        if self._log is not None and getattr(self._log, "source", None) is not None:
            ends = getattr(self._log.source, "end_offsets", None) or {}
            if ends:
                return max(ends) + 1
            if len(self._log.records):
                return int(self._log.records["partition"].max()) + 1
        return 1

    def _record(self, step: Step) -> Step:
        self._run.steps.append(step)
        return step

    def _emit(self, kind: StepKind, **fields: Any) -> Step:
        step = self._record(Step(len(self._run.steps), kind, **fields))
        if greenlet.getcurrent() is self._g:
            self._g.parent.switch(step)
        return step

    def _main(self) -> None:
        plan = PlanView(self._plan.plan, business_key=self._business_key)   # seq counters belong to this run
        try:
            self._rebuild()
            for key, seq, tasks in plan.restored_rounds():
                self._round(self._keys.business_key(key), seq, tasks, restored=True)
            for key, event in plan.inputs:
                self._run.inputs_started += 1
                seq = plan.next_seq(key)
                ev = event if event.id is not None else event.with_id(self._run.ids.new())
                tasks = []
                if self._plan.plan.begin_event:
                    # agent-run.begin-event: the begin event's tasks are queued before the input's (§9.2)
                    begin = self._agent.begin_event(ev)
                    if begin is not None:
                        begin = begin if begin.id is not None else begin.with_id(self._run.ids.new())
                        tasks += [(d, begin) for d in self._agent.listeners(begin)]
                tasks += [(d, ev) for d in self._agent.listeners(ev)]
                self._round(self._keys.business_key(key), seq, tasks, input_event=ev)
            self._not_dispatched()
        except _JobFailed as failed:
            self._run.failure = failed

    def _rebuild(self) -> None:
        from agent_inspect.executor._rebuild import rebuild_session

        if self._base_session is None:
            self._base_session = rebuild_session(self._log, self._rule, self._markers,
                                                 source_kind=self._source_kind, **self._restore_checks)
        session = self._base_session.copy()
        self._run.session = session
        rebuild_events = [e for e in session.events if e.step == "rebuild"]
        failed = session.restore_failure
        self._emit(StepKind.REBUILD, outcome="restore-failed" if failed else "rebuilt",
                   reason=(f"upstream fails this restore: {failed}" if failed else
                           f"{len(self._markers or [])} marker(s), rule {session.rule.name}"),
                   change=f"{len(session.store)} entries cached",
                   detail={"entries": len(session.store), "cache_events": len(rebuild_events)})
        for ev in rebuild_events:
            if ev.op == "delete":
                continue
            self._cache_event_step(ev, during="rebuild")

    def _not_dispatched(self) -> None:
        """One step per cached record of a replayed round that no task looked up (as ``predict``)."""
        store = self._run.session.store
        names: dict[str, str] | None = None
        for key, seq in self._run.rounds:
            for entry in sorted(store.entries_at(key, seq), key=lambda e: (e.pos is None, e.pos or 0)):
                if entry.state_key in self._run.looked_up:
                    continue
                if names is None:
                    names = self._action_names()
                self._emit(StepKind.NOT_DISPATCHED, key=key, seq=seq,
                           action=names.get(entry.action_uuid, entry.action_uuid[:8]),
                           event_type=entry.task_event_type, event_id=entry.task_event_id,
                           fingerprint=entry.event_uuid, state_key=entry.state_key, outcome="NOT-DISPATCHED",
                           reason="cached record of a replayed round that no task looked up",
                           detail={"pos": entry.pos})

    def _action_names(self) -> dict[str, str]:
        fmt, names = self._keys.format, {}
        for d in self._agent.agent.actions:
            names[self._agent.action_uuid(d.name, fmt, attempt=self._attempt)] = d.name
            names.setdefault(self._agent.action_uuid(d.name, fmt, attempt=0), d.name)
        return names

    def _cache_event_step(self, ev: Any, *, during: str, task: int | None = None,
                          action: str | None = None) -> None:
        kind = StepKind.INVALIDATION if ev.op == "invalidate" else StepKind.EVICTION
        self._emit(kind, key=ev.business_key, seq=ev.seq, action=action, outcome=ev.op,
                   reason=ev.reason, change=_removed_text(ev.removed), task=task,
                   detail={"removed": len(ev.removed), "during": during, "divergence_id": ev.divergence_id,
                           "state_keys": tuple(e.state_key for e in ev.removed),
                           "positions": ev.positions})

    def _memory_of(self, key: str) -> tuple[Memory, Memory]:
        mem = self._run.memory.get(key)
        if mem is None:
            mem = (Memory(self._base_stm.get(key)), Memory(self._base_sensory.get(key)))
            self._run.memory[key] = mem
        return mem

    # -- rounds and tasks ------------------------------------------------------------------------

    def _round(self, key: str, seq: int, tasks: Sequence[tuple[Any, AgentEvent]], *,
               restored: bool = False, input_event: AgentEvent | None = None) -> None:
        queue: deque[tuple[Any, AgentEvent, bool]] = deque()
        for decl, ev in tasks:
            if restored and ev.type == SUBAGENT_EVENT:
                # §11.4: child tasks are dropped on resume; their root caller re-issues the call
                self._emit(StepKind.LOOKUP, key=key, seq=seq, action=_name(decl), event_type=ev.type,
                           event_id=ev.id, outcome="NOT-DISPATCHED", task=self._next_task(),
                           reason="restored child task dropped on resume (§11.4)",
                           detail={"restored": True})
                continue
            queue.append((decl, ev, restored))
        if queue or not restored:
            self._run.rounds[(key, seq)] = None
        self._run.seq_of[key] = seq
        self._run.active = (key, seq, queue)
        self._dispatch(key, seq, queue, collector=None)
        self._run.active = self._run.current = None
        stm, sensory = self._memory_of(key)
        cleared = len(sensory)
        sensory.clear()
        self._run.last_completed[key] = seq
        self._emit(StepKind.ROUND_COMPLETE, key=key, seq=seq, outcome="complete",
                   event_type=input_event.type if input_event else None,
                   event_id=input_event.id if input_event else None,
                   reason="task queue empty", change=f"sensory memory cleared ({cleared} paths)")

    def _dispatch(self, key: str, seq: int, queue: deque[tuple[Any, AgentEvent, bool]], *,
                  collector: list[Any] | None) -> None:
        while queue:
            decl, ev, restored = queue.popleft()
            if collector is None:
                self._run.current = (decl, ev)
            n_steps = len(self._run.steps)
            outs = self._task(key, seq, decl, ev, restored=restored)
            reused = any(s.kind is StepKind.REUSE for s in self._run.steps[n_steps:])
            for out in outs:
                self._route(key, seq, out, queue, collector, reused=reused)

    def _route(self, key: str, seq: int, ev: AgentEvent, queue: deque[tuple[Any, AgentEvent, bool]],
               collector: list[Any] | None, *, reused: bool = False) -> None:
        if ev.type == SUBAGENT_EVENT and ev.attributes.get("delegateType") == OUTPUT_EVENT:
            if collector is not None:
                collector.append(dict(ev.attributes.get("delegateAttributes") or {}))
                return
        if ev.type == OUTPUT_EVENT or (ev.type == SUBAGENT_EVENT
                                       and ev.attributes.get("delegateType") == OUTPUT_EVENT):
            self._run.outputs.append({"step": len(self._run.steps) - 1, "key": key, "seq": seq,
                                      "action": ev.upstream_action, "event_id": ev.id, "type": ev.type,
                                      "attributes": dict(ev.attributes), "reused": reused})
            return
        for decl in self._agent.listeners(ev):
            queue.append((decl, ev, False))

    def _next_task(self) -> int:
        self._run.task_ordinal += 1
        return self._run.task_ordinal

    def _task(self, key: str, seq: int, decl: Any, event: AgentEvent, *, restored: bool) -> list[AgentEvent]:
        from agent_inspect.store import Outcome, Task

        task_no = self._next_task()
        name = _name(decl)
        known = self._agent.has(name)
        common = dict(key=key, seq=seq, action=name, event_type=event.type, event_id=event.id,
                      scope=event.scope, task=task_no)
        if not known:
            # a restored in-flight task whose action the candidate agent does not have (stale logic, #1069)
            self._emit(StepKind.LOOKUP, **common, outcome="NOT-DISPATCHED",
                       reason=f"action {name!r} is not in the candidate agent (stale logic of a restored task)",
                       detail={"restored": restored, "stale_logic": True})
            return []
        decl = self._agent.decl(name)
        fp = event.fingerprint
        auuid = self._agent.action_uuid(name, self._keys.format, attempt=self._attempt)
        sk = self._keys.state_key(key, seq, fp, auuid)
        self._run.looked_up.add(sk)
        t = Task(business_key=key, seq=seq, state_key=sk, event_uuid=fp, action_uuid=auuid, event_id=event.id,
                 event_type=event.type, is_root=event.is_root, key_format=self._keys.format,
                 key_text=self._keys.key_text(key), action=name)
        common.update(fingerprint=fp, state_key=sk)
        decision = self._lookup(t, task_no, name, during="lookup")
        policy = self._policies.for_action(name)
        detail = {"restored": restored, "policy": policy.value, "rule_outcome": decision.outcome.value,
                  "stale_logic": False}
        if decision.outcome is Outcome.FAIL:
            self._emit(StepKind.LOOKUP, **common, outcome="FAIL", reason=decision.reason, detail=detail)
            raise _JobFailed(f"lookup of {name} at ({key}, {seq}) failed: {decision.reason}")
        record = self._read(decision.entry) if decision.entry is not None else None
        outcome = decision.outcome.value
        forced = policy is ActionPolicy.FORCE_RERUN and outcome != "RERUN"
        shown = "RERUN" if forced else outcome
        self._emit(StepKind.LOOKUP, **common, outcome=shown,
                   reason=decision.reason + (" (policy force-rerun)" if forced else ""), detail=detail)
        if outcome == "REUSE" and not forced:
            outs = self._reuse(t, decl, event, record, common)
            if policy is ActionPolicy.DIFF:
                self._shadow(t, decl, event, record, common)
            return outs
        prod = record if forced else None
        return self._execute(t, decl, event, None if forced else record, common, served_from=prod)

    def _lookup(self, t: Any, task_no: int, name: str, *, during: str) -> Any:
        decision = self._run.session.lookup(t)
        for ev in decision.events:
            self._cache_event_step(ev, during=during, task=task_no, action=name)
        return decision

    def _read(self, entry: Any) -> RecordView:
        if entry.pos is None:
            view = self._run.overlay.get(entry.state_key)
            if view is None and entry.value is not None:
                view = entry.value if isinstance(entry.value, RecordView) else \
                    RecordView.from_state(entry.value, memory_decoder=self._memory_decoder)
            if view is None:
                raise ReplayError(f"no value for replay write {entry.state_key}; this is a bug, please report it")
            return view
        return RecordView.from_state(self._log.value(entry.pos), memory_decoder=self._memory_decoder)

    def _reuse(self, t: Any, decl: ActionDecl, event: AgentEvent, record: RecordView,
               common: dict[str, Any]) -> list[AgentEvent]:
        stm, sensory = self._memory_of(t.business_key)
        for path, value in record.short_term:      # short-term first, then sensory (§9.3, §12)
            stm.set(path, value)
        for path, value in record.sensory:
            sensory.set(path, value)
        outs = [_rebind(o, event.id, decl.name) for o in record.outputs]
        paths = [p for p, _ in record.short_term] + [p for p, _ in record.sensory]
        self._emit(StepKind.REUSE, **common, outcome="REUSE", reason="completed record: body skipped, "
                   "memory updates applied, outputs re-emitted",
                   change=f"memory set {paths}; outputs {[o.type for o in outs]}" if paths or outs else "nothing",
                   detail={"outputs": tuple(o.id for o in outs), "memory_paths": tuple(paths)})
        return outs

    def _execute(self, t: Any, decl: ActionDecl, event: AgentEvent, record: RecordView | None,
                 common: dict[str, Any], *, served_from: RecordView | None) -> list[AgentEvent]:
        resume = record is not None and not record.completed
        kind = StepKind.RESUME if resume else StepKind.RERUN
        if record is None:
            initial = RecordView(task_event=event)
            self._persist(t, initial, "initial", common)
            self._lookup(t, common["task"], decl.name, during="re-get after the initial write")
        stm, sensory = self._memory_of(t.business_key)
        task_no = common["task"]
        prod_calls = served_from.calls if served_from is not None else ()
        journal = CallJournal(
            record.calls if resume else (),
            persist=lambda results: self._persist(
                t, RecordView(task_event=event, calls=results), f"call results ({len(results)})", common),
            report=lambda ce: self._call_step(kind, ce, common),
            run=self._call_runner(prod_calls),
            decode=self._decoder(),
            java=decl.java)
        ctx = ReplayContext(self, key=t.business_key, seq=t.seq, action=decl.name, event=event, calls=journal,
                            short_term=stm, sensory=sensory, subcall=_subcall(event))
        self._emit(kind, **common, outcome=kind.value.upper(),
                   reason=(f"incomplete record with {len(record.calls)} call result(s): body re-runs"
                           if resume else "no usable record: body runs from scratch"),
                   detail={"recorded_calls": len(record.calls) if resume else 0})
        try:
            self._agent.run_action(decl.name, ctx)
        except ReplayError as exc:
            raise _JobFailed(str(exc), exc) from None
        except Exception as exc:  # noqa: BLE001 - a failing body fails the simulated job, like upstream
            self._emit(kind, **common, outcome="failed", reason=f"body raised {type(exc).__name__}: {exc}")
            raise _JobFailed(f"action {decl.name} at ({t.business_key}, {t.seq}) raised {exc!r}", exc) from None
        self._lookup(t, task_no, decl.name, during="get at completion")
        done = RecordView(task_event=event, short_term=tuple(ctx.short_term_updates),
                          sensory=tuple(ctx.sensory_updates), outputs=tuple(ctx.outputs), completed=True)
        paths = [p for p, _ in done.short_term] + [p for p, _ in done.sensory]
        self._persist(t, done, "completed", common,
                      extra=f"; memory set {paths}; outputs {[o.type for o in done.outputs]}")
        return list(ctx.outputs)

    def _shadow(self, t: Any, decl: ActionDecl, event: AgentEvent, record: RecordView,
                common: dict[str, Any]) -> None:
        """``diff`` policy: run the body on copies of memory, compare with the production record."""
        stm, sensory = self._memory_of(t.business_key)
        shadow_stm, shadow_sensory = Memory(stm.snapshot()), Memory(sensory.snapshot())
        journal = CallJournal((), run=self._call_runner(record.calls), decode=self._decoder(), java=decl.java)
        ctx = ReplayContext(self, key=t.business_key, seq=t.seq, action=decl.name, event=event, calls=journal,
                            short_term=shadow_stm, sensory=shadow_sensory, subcall=_subcall(event))
        error = None
        try:
            self._agent.run_action(decl.name, ctx)
        except Exception as exc:  # noqa: BLE001 - a failing shadow run is a difference, not a job failure
            error = f"{type(exc).__name__}: {exc}"
        diffs = _compare(record, ctx, error)
        self._emit(StepKind.RERUN, **common, outcome="diff-equal" if not diffs else "diff-changed",
                   reason="policy diff: body run on a copy of memory and compared with the production record",
                   change="; ".join(diffs) if diffs else "outputs and memory updates equal",
                   detail={"diff": tuple(diffs), "shadow": True})

    def _persist(self, t: Any, value: RecordView, what: str, common: dict[str, Any], *, extra: str = "") -> None:
        from agent_inspect.store import Entry

        calls = value.calls
        entry = Entry(state_key=t.state_key, business_key=t.business_key, seq=t.seq, event_uuid=t.event_uuid,
                      action_uuid=t.action_uuid, key_format=t.key_format, key_text=t.key_text,
                      is_root=t.is_root, completed=value.completed, task_event_id=t.event_id,
                      task_event_type=t.event_type, output_event_ids=tuple(o.id or "" for o in value.outputs),
                      call_count=len(calls), calls_pending=sum(c.status == "PENDING" for c in calls),
                      calls_succeeded=sum(c.status == "SUCCEEDED" for c in calls),
                      calls_failed=sum(c.status == "FAILED" for c in calls),
                      pos=None, attempt=self._attempt, value=value)
        self._run.session.write(entry)
        self._run.overlay[t.state_key] = value
        self._run.writes.append((t.state_key, t, value))
        self._run.write_steps.append(len(self._run.steps))
        self._emit(StepKind.PERSIST, **common, outcome=what, reason="written to the overlay (never to a source)",
                   change=f"put {t.state_key}{extra}", detail={"journal_index": len(self._run.writes) - 1})

    def _call_step(self, kind: StepKind, ce: CallEvent, common: dict[str, Any]) -> None:
        self._emit(kind, **common, outcome=ce.outcome, call_index=ce.index, function_id=ce.function_id,
                   reason=_call_reason(ce), change=f"call results {ce.results_before} → {ce.results_after}",
                   detail={"args_digest": ce.args_digest, "status": ce.status, "recorded": ce.recorded})

    def _decoder(self) -> Callable[[CallSlot], Any]:
        trust = self._policies.trust_payloads
        return lambda slot: decode_recorded(slot, trust_pickles=trust)

    def _call_runner(self, prod_calls: Sequence[CallSlot]) -> Callable[..., tuple[str, Any]]:
        policies = self._policies
        decode = self._decoder()

        def run(fid: str, digest: str, call: Callable[[], Any], index: int) -> tuple[str, Any]:
            if getattr(call, "_agent_inspect_subagent", False):
                return "execute", call()
            mode = policies.call_policy
            if mode is CallPolicy.EXECUTE:
                return self._memoised(fid, digest, call)
            if mode is CallPolicy.RECORDED and index < len(prod_calls):
                slot = prod_calls[index]
                if slot.identity == (fid, digest) and slot.status != "PENDING":
                    if slot.status == "FAILED":
                        raise decode(slot)
                    return "served-recorded", decode(slot)
            has_stub, value = policies.stub_for(fid, digest)
            if has_stub and mode in (CallPolicy.STUB, CallPolicy.RECORDED):
                return "stub", value
            raise ReplayError(f"durable call {fid} (args digest {digest!r}) at index {index} was denied by "
                              f"the replay call policy {mode.value!r}; add a stub for it or use calls='execute'")

        return run

    def _memoised(self, fid: str, digest: str, call: Callable[[], Any]) -> tuple[str, Any]:
        n = self._run.call_ordinal
        self._run.call_ordinal += 1
        hit = self._memo.get(n)
        if hit is not None and hit[0] == (fid, digest):
            _, outcome, value, error = hit
            if error is not None:
                raise error
            return outcome, value
        try:
            value = call()
        except Exception as exc:
            self._memo[n] = ((fid, digest), "execute", None, exc)
            raise
        self._memo[n] = ((fid, digest), "execute", value, None)
        return "execute", value

    def _subagent_runner(self, ctx: ReplayContext, scope: str, session_id: str, call_id: str,
                         event_type: str, attributes: Mapping[str, Any]) -> Callable[[], Any]:
        def run() -> Any:
            boot = wrap_subagent(scope, session_id, call_id, event_type, attributes, event_id=self._run.ids.new(),
                                 upstream_event_id=ctx.event.id, upstream_action=ctx.action)
            collected: list[Any] = []
            queue = deque((d, boot, False) for d in self._agent.listeners(boot))
            self._dispatch(ctx.key, ctx.seq, queue, collector=collected)
            return collected

        run._agent_inspect_subagent = True  # type: ignore[attr-defined]
        return run

    # -- ids used by contexts ------------------------------------------------------------------------

    @property
    def _ids(self) -> IdSource:
        return self._run.ids


def _restore_plan(plan: Any, cp: Checkpoint) -> Any:
    from agent_inspect.executor._plan import as_plan
    from agent_inspect.recovery import PendingTask

    base = as_plan(plan if plan is not None else {"inputs": []}, None)
    restored = {**dict(cp.restored_seq), **dict(base.restored_seq)}
    pending = tuple(PendingTask(k, s, a, e) for k, s, a, e in cp.pending) + tuple(base.pending)
    return type(base)(inputs=base.inputs, restored_seq=restored, pending=pending, keys=base.keys,
                      begin_event=base.begin_event, attempt=base.attempt)


def _as_log(log: Any) -> Any:
    if log is None:
        return None
    inner = getattr(log, "log", None)           # a Reconstruction carries the log it was built from
    if inner is not None and hasattr(inner, "value") and hasattr(log, "rule"):
        return inner
    if hasattr(log, "records") and hasattr(log, "value"):
        return log
    raise ReplayError(f"cannot replay from {type(log).__name__}; pass an ActionStateLog or a reconstruction")


def _predicate(until: Any) -> Callable[[Step], bool] | None:
    if until is None:
        return None
    if isinstance(until, Breakpoint):
        return until.matches
    if isinstance(until, (StepKind, str)):
        kind = StepKind(until)
        return lambda s: s.kind is kind
    if callable(until):
        return until
    raise ReplayError("run(until=...) takes a Breakpoint, a step kind or a predicate on Step")


def _name(decl: Any) -> str:
    return decl if isinstance(decl, str) else decl.name


def _subcall(event: AgentEvent) -> tuple[str, str, str] | None:
    if event.type != SUBAGENT_EVENT:
        return None
    a = event.attributes
    return (str(a.get("targetScope")), str(a.get("sessionId")), str(a.get("callId")))


def _rebind(ev: AgentEvent, upstream_id: str | None, action: str) -> AgentEvent:
    return AgentEvent(ev.type, ev.attributes, ev.id, ev.event_class, upstream_id, action)


def _removed_text(removed: Sequence[Any]) -> str:
    if not removed:
        return "nothing removed"
    keys = ", ".join(f"{e.business_key}@{e.seq}" for e in removed[:5])
    more = f" (+{len(removed) - 5} more)" if len(removed) > 5 else ""
    return f"removed {len(removed)}: {keys}{more}"


def _call_reason(ce: CallEvent) -> str:
    text = {
        "hit": "recorded result replayed (identity matches at this index)",
        "hit-failed": "recorded failure re-raised (identity matches at this index)",
        "pending-hit": "completion-only call on a PENDING slot: hit with null payloads (§9.4)",
        "mismatch": f"non-deterministic call: recorded {ce.recorded} at this index; results cut here",
        "truncate": f"reconcilable call on a different slot {ce.recorded}: results cut and persisted",
        "pending": "PENDING slot appended before running the call",
        "execute": "no recorded result: the call runs",
        "reconcile": "PENDING slot with the same identity: the reconciler runs instead of the call",
        "stub": "served by a stub (replay call policy)",
        "served-recorded": "served the production record's result (replay call policy)",
        "deny": "denied by the replay call policy: the body gets a ReplayError and the job stops",
    }
    return text.get(ce.outcome, ce.outcome)


def _compare(record: RecordView, ctx: ReplayContext, error: str | None) -> list[str]:
    diffs = []
    if error:
        diffs.append(f"body raised {error}")
    prod = [(o.type, dict(o.attributes)) for o in record.outputs]
    new = [(o.type, dict(o.attributes)) for o in ctx.outputs]
    if prod != new:
        diffs.append(f"outputs differ: production {prod} vs replay {new}")
    for label, old, cur in (("short-term", record.short_term, ctx.short_term_updates),
                            ("sensory", record.sensory, ctx.sensory_updates)):
        if [p for p, _ in old] != [p for p, _ in cur]:
            diffs.append(f"{label} memory paths differ: {[p for p, _ in old]} vs {[p for p, _ in cur]}")
    return diffs
