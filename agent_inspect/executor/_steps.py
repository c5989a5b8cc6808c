"""The step model of the replay executor: what one step records, breakpoints over steps, and what a replay holds
between steps (the run state of one pass, checkpoints, counters, memory snapshots)."""

from __future__ import annotations

import enum
import numbers
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, TypeVar

from agent_inspect._errors import ReplayError
from agent_inspect._glossary import did_you_mean, plural
from agent_inspect.agents import AgentEvent
from agent_inspect.recovery import PendingTask, RemovalCauses, ReplayPlan
from agent_inspect.recovery.engine import EngineState, IdSource, JobFailed, RecordView

if TYPE_CHECKING:
    from agent_inspect.log import ActionStateLog, RuntimeInfo
    from agent_inspect.store import Entry, Task

__all__ = ["StepKind", "step_kind", "StepOutcome", "Step", "Breakpoint", "STEP_COLUMNS", "SERVED_CALLS", "SHADOW_OUTCOMES",
           "call_counter", "CALL_COUNTERS", "Counters", "MemoryState", "MemoryByKey", "Checkpoint", "JobFailed",
           "RunState", "Write"]


class StepKind(enum.StrEnum):
    """What a step did. Durable calls inside a body are RESUME or RERUN steps with a ``call_index``; one
    NOT_DISPATCHED step per cached record of a replayed round that no task looked up, as ``predict`` lists them.

    For example::

        ex = ai.ReplayExecutor(log, markers=markers)
        ex.run(until=ai.executor.StepKind.EVICTION)     # stop at the first eviction
        ex.current.kind is ai.executor.StepKind.EVICTION or ex.done
    """

    REBUILD = "rebuild"
    LOOKUP = "lookup"
    EVICTION = "eviction"
    INVALIDATION = "invalidation"
    REUSE = "reuse"
    RESUME = "resume"
    RERUN = "rerun"
    PERSIST = "persist"
    ROUND_COMPLETE = "round-complete"
    PRUNE = "prune"
    NOT_DISPATCHED = "not-dispatched"


def step_kind(kind: StepKind | str) -> StepKind:
    """``kind`` as a :class:`StepKind`; an unknown text raises a ``ReplayError`` naming the kinds."""
    try:
        return StepKind(kind)
    except ValueError:
        raise ReplayError(f"unknown step kind {kind!r}; use one of "
                          f"{', '.join(k.value for k in StepKind)} (or ai.executor.StepKind)") from None


class StepOutcome(enum.StrEnum):
    """The outcome text of a step (a ``str`` enum, so it compares as its text). Cache steps carry the store's op
    text (``evict``, …) and a PERSIST of call results ``call results (n)``: those stay plain strings.

    For example::

        ex = ai.ReplayExecutor(log, markers=markers)
        ex.run()
        (ex.steps["outcome"] == ai.executor.StepOutcome.RERUN).sum()   # a str enum: compares as its text
    """

    # rebuild
    REBUILT = "rebuilt"
    RESTORE_FAILED = "restore-failed"
    # lookup decisions and body kinds
    REUSE = "REUSE"
    RESUME = "RESUME"
    RERUN = "RERUN"
    FAIL = "FAIL"
    NOT_DISPATCHED = "NOT-DISPATCHED"
    # a body or a prune that failed the job
    FAILED = "failed"
    # policy ``diff``: a shadow run compared with the production record
    DIFF_EQUAL = "diff-equal"
    DIFF_CHANGED = "diff-changed"
    DIFF_UNAVAILABLE = "diff-unavailable"   # the body called a sub-agent whose result the record does not hold
    # durable calls (§9.4) and the replay call policy (§12)
    HIT = "hit"
    HIT_FAILED = "hit-failed"
    PENDING_HIT = "pending-hit"
    MISMATCH = "mismatch"
    TRUNCATE = "truncate"
    PENDING = "pending"
    EXECUTE = "execute"
    RECONCILE = "reconcile"
    RESUBMIT = "resubmit"           # main: a PENDING sub-agent caller slot re-submits the call (addendum §1.1)
    STUB = "stub"
    SERVED_RECORDED = "served-recorded"
    DENY = "deny"
    # writes, rounds, checkpoints
    INITIAL = "initial"
    COMPLETED = "completed"
    COMPLETE = "complete"
    PRUNED = "pruned"
    REFRESH = "refresh"             # 0.4+: a retained state re-appended at checkpoint time (addendum §2.2)


SERVED_CALLS = frozenset({StepOutcome.HIT, StepOutcome.HIT_FAILED, StepOutcome.PENDING_HIT,
                          StepOutcome.SERVED_RECORDED})
"""Call outcomes that served a result without running the call."""
SHADOW_OUTCOMES = frozenset({StepOutcome.DIFF_EQUAL, StepOutcome.DIFF_CHANGED, StepOutcome.DIFF_UNAVAILABLE})
"""Outcomes of a ``diff`` policy's shadow run."""
CALL_COUNTERS: dict[str, str] = {
    StepOutcome.EXECUTE: "calls_executed", StepOutcome.RESUBMIT: "calls_resubmitted",
    StepOutcome.RECONCILE: "calls_reconciled", StepOutcome.STUB: "calls_stubbed", StepOutcome.DENY: "calls_denied",
    **dict.fromkeys(SERVED_CALLS, "calls_served")}
"""The counter (and safety-report column) each call outcome adds to. A re-submission is no executed call: the
child's own lookup decides whether it runs again (addendum §1.1; case S09)."""


def call_counter(step: Step) -> str | None:
    """:data:`CALL_COUNTERS` of a call step's outcome, but a sub-agent call that runs is ``calls_subagent``: no call
    that leaves the job (its child's row counts the calls that do)."""
    out = "" if step.outcome is None else str(step.outcome)
    if out == StepOutcome.EXECUTE and step.detail.get("subagent"):
        return "calls_subagent"
    return CALL_COUNTERS.get(out)


@dataclass(frozen=True)
class Step:
    """One step: where (key, seq, action, event), what (kind, outcome), why (reason), and the change.

    ``reason`` is for readers (:func:`agent_inspect.recovery.user_reason`, as ``predict``'s tasks); ``rule_note``
    keeps the rule's own words. ``change`` says what the step did to the simulated store or memory; ``detail``
    holds structured extras (call identity, outputs, …).

    For example::

        ex = ai.ReplayExecutor(log, markers=markers)
        step = ex.step()                                # the rebuild, then one step per decision
        step = ex.step()
        step.kind, step.key, step.action, step.outcome, step.reason
    """

    index: int
    kind: StepKind
    key: str | None = None
    seq: int | None = None
    action: str | None = None
    event_type: str | None = None
    event_id: str | None = None
    fingerprint: str | None = None
    outcome: str | None = None
    reason: str | None = None
    rule_note: str | None = None
    change: str | None = None
    state_key: str | None = None
    call_index: int | None = None
    function_id: str | None = None
    scope: str | None = None
    task: int | None = None
    detail: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def as_row(self) -> dict[str, Any]:
        row = {name: getattr(self, name) for name in STEP_COLUMNS}
        row["kind"] = self.kind.value
        if self.outcome is not None:
            row["outcome"] = str(self.outcome)      # plain text in frames, as before the enum
        return row


STEP_COLUMNS = [f.name for f in fields(Step) if f.name != "detail"]


@dataclass(frozen=True)
class Breakpoint:
    """Stop at a step matching every given field (None = any). ``when`` is an extra predicate.

    ``kind`` accepts a :class:`StepKind` or its text; ``outcome`` compares case-insensitively.

    For example::

        ex = ai.ReplayExecutor(log, markers=markers)
        ex.add_breakpoint(key="user-0001", outcome="rerun")    # or ex.run(until=ai.executor.Breakpoint(...))
        step = ex.run()
        step.key, step.action, step.outcome
    """

    key: str | None = None
    seq: int | None = None
    action: str | None = None
    kind: StepKind | str | None = None
    outcome: str | None = None
    when: Callable[[Step], bool] | None = None

    def __post_init__(self) -> None:
        if self.kind is not None:
            step_kind(self.kind)            # an unknown kind fails here, not at the first step run() takes
        if self.outcome is not None:
            _check_outcome(self.outcome)    # as would an outcome no step carries: it would never stop a run
        if self.seq is not None:
            # a seq of another type ("3" from a text box) equals no step's seq: it would never stop a run
            if isinstance(self.seq, bool) or not isinstance(self.seq, numbers.Integral):
                raise ReplayError(f"breakpoint seq takes a round number (an int) or None (any round), got {self.seq!r}")
            object.__setattr__(self, "seq", int(self.seq))

    def matches(self, step: Step) -> bool:
        return ((self.key is None or step.key == self.key) and (self.seq is None or step.seq == self.seq)
                and (self.action is None or step.action == self.action)
                and (self.kind is None or step.kind == step_kind(self.kind))
                and (self.outcome is None or (step.outcome or "").lower() == self.outcome.lower())
                and (self.when is None or bool(self.when(step))))


#: the store's cache operations, the outcome text of EVICTION / INVALIDATION steps (``CacheEvent.op``)
CACHE_OPS = ("evict", "invalidate", "remove", "cross-key", "prune", "delete", "supersede", "rebuild")
_CALL_RESULTS = re.compile(r"call results(?: \(\d+\))?", re.IGNORECASE)


def _check_outcome(outcome: object) -> None:
    """A breakpoint's ``outcome`` that some step can carry (any case), else a ``ReplayError`` naming the closest."""
    known = [o.value.lower() for o in StepOutcome] + list(CACHE_OPS)
    text = outcome.lower() if isinstance(outcome, str) else None
    if text is not None and (text in known or _CALL_RESULTS.fullmatch(text)):
        return
    hint = (f"; {outcome!r} is a step kind: Breakpoint(kind={text!r}) stops there"
            if text in {k.value for k in StepKind} else did_you_mean([text or repr(outcome)], known)
            or f" (outcomes: {', '.join(dict.fromkeys(known))}, or 'call results (n)')")
    raise ReplayError(f"breakpoint outcome {outcome!r} is no step's outcome, so it would never stop a run{hint}")


Write = tuple[str, "Task | Entry | None", "RecordView | bytes | None"]
"""One journal write: (state key, task, value); a tombstone has neither task nor value; a checkpoint-time
refresh row (0.4+) has the cached entry and what it repeats (the logged bytes, or the replay's record)."""


@dataclass(frozen=True)
class Counters:
    """What the replay has done so far (derived from the steps, so ``back()`` keeps them exact).

    For example::

        ex = ai.ReplayExecutor(log, markers=markers)
        ex.run()
        ex.counters.reused, ex.counters.rerun, ex.counters_for("user-0001")
    """

    tasks: int = 0
    reused: int = 0
    resumed: int = 0
    rerun: int = 0
    #: tasks whose lookup failed (FAIL: upstream throws there and the job restarts); tasks = reused + resumed +
    #: rerun + failed
    failed: int = 0
    #: cached records of a replayed round that no task looked up (``predict``'s NOT-DISPATCHED tasks; not in tasks)
    not_dispatched: int = 0
    #: restored in-flight tasks the restore dropped unlooked-up: stale logic, or a sub-agent child on resume (§11.4);
    #: ``predict`` warns of them; not in tasks
    dropped: int = 0
    bodies_executed: int = 0
    shadow_runs: int = 0
    calls_executed: int = 0
    calls_served: int = 0
    calls_reconciled: int = 0
    calls_resubmitted: int = 0
    #: sub-agent calls sent again as new calls: no call that leaves the job (the child's round runs; its calls
    #: count as they run), so not in ``calls_executed``, whatever the replay call policy
    calls_subagent: int = 0
    calls_stubbed: int = 0
    calls_denied: int = 0
    writes: int = 0
    entries_evicted: int = 0
    entries_invalidated: int = 0


@dataclass(frozen=True)
class MemoryState:
    """Short-term and sensory memory of one business key at the current step (read-only snapshots).

    For example::

        ex = ai.ReplayExecutor(log, markers=markers)
        ex.run(max_steps=40)
        state = ex.memory["user-0029"]                  # one MemoryState per business key
        dict(state.short_term), dict(state.sensory)
    """

    short_term: Mapping[str, Any]
    sensory: Mapping[str, Any]


_V = TypeVar("_V")


class _NoMemory(KeyError):
    """A KeyError (``get()`` and ``in`` rely on it) that says why and names the closest keys when shown: the close
    match is worked out then, not on every miss of ``get()`` or ``in`` (milliseconds each over a thousand keys)."""

    def __init__(self, key: str, states: Mapping[str, Any] | None = None) -> None:
        super().__init__(key)   # args (key,): it pickles, and reads as the bare KeyError did
        self.states: Mapping[str, Any] = {} if states is None else states

    def __str__(self) -> str:
        key = self.args[0]
        return (f"no memory of key {key!r} as of this step: the replay has not reached it yet, or it is not a key of "
                f"the log{did_you_mean([key], self.states)} ({plural(len(self.states), 'key')} with memory so far)")


class MemoryByKey(Mapping[str, _V]):
    """Memory per business key, also found by a Flink key text (under K1.6/K2, ``memory["user-0001"]`` is its
    digest's, as breakpoints read a key)."""

    def __init__(self, states: Mapping[str, _V], business_key: Callable[[str], str]) -> None:
        self._states, self._business_key = states, business_key

    def __getitem__(self, key: str) -> _V:
        if key in self._states:
            return self._states[key]
        business = self._business_key(key)
        if business != key and business in self._states:
            return self._states[business]
        raise _NoMemory(key, self._states)

    def __iter__(self) -> Iterator[str]:
        return iter(self._states)

    def __len__(self) -> int:
        return len(self._states)

    def __repr__(self) -> str:
        return repr(dict(self._states))


@dataclass(frozen=True)
class Checkpoint:
    """What a checkpoint captured: enough to restore a later attempt from it.

    ``marker``: end offsets of base log + journal (§6.4); ``restored_seq`` / ``last_completed``: the
    ``messageSequenceNumber`` / ``lastCompletedSequenceNumber`` per key; ``pending``: the in-flight tasks as
    ``(key, seq, action, event)`` (original event ids, §9.5); ``short_term`` / ``sensory``: memory per key (found
    by key text too, as ``ex.memory``); ``inputs_consumed``: plan inputs started. Every key the job knows is
    covered, by business key. Pass it as ``ReplayExecutor(log, restore=checkpoint, plan=..., ...)``, or as the
    ``markers=`` of any verb (``ai.predict(ex.to_log(), markers=taken)``): like a read Flink checkpoint, it restores
    its seqNums and in-flight tasks over the log's inputs after its marker.

    For example::

        ex = ai.ReplayExecutor(log, markers=markers)
        ex.run(max_steps=50); ex.checkpoint()          # the marker: {partition: end offset}
        taken = ex.checkpoints[-1]
        taken.marker, taken.restored_seq["user-0001"]  # pass as ReplayExecutor(..., restore=taken)
    """

    step: int
    marker: Mapping[int, int]
    restored_seq: Mapping[str, int]
    pending: tuple[tuple[str, int, str, AgentEvent], ...]
    short_term: Mapping[str, Mapping[str, Any]]
    sensory: Mapping[str, Mapping[str, Any]]
    last_completed: Mapping[str, int]
    inputs_consumed: int

    # a plan source (agent_inspect.codec.PlanSource), as a read Flink checkpoint is: every verb restores from it

    @property
    def path(self) -> str:
        """Where it was taken, in words (a plan source names where it was read)."""
        return f"the executor's checkpoint of step {self.step}"

    @property
    def provenance(self) -> str:
        return f"from {self.path}"

    def recovery_markers(self) -> list[dict[int, int]]:
        """Its marker, as the one ``{partition: offset}`` map of the markers."""
        return [dict(self.marker)]

    def holds_plan(self) -> bool:
        return True

    def plan_words(self) -> str:
        return (f"from {self.path}: its seqNums and in-flight tasks ({plural(len(self.pending), 'task')}) over the "
                "log's inputs after its marker")

    def replay_plan(self, log: ActionStateLog, *, runtime: str | RuntimeInfo = "auto", kafka_pending: str | None = None,
                    refresh: Collection[int] | None = None, agent: object | None = None) -> ReplayPlan:
        """The log's inferred plan after the marker, restored from this checkpoint: the checkpoint holds the operator's
        state of every key the job knew, so its seqNums win (an input of a round it had already consumed is not
        replayed) and its pending tasks replace the ones the log infers for those keys."""
        return self.restored_over(ReplayPlan.from_log(log, markers=self.recovery_markers(), runtime=runtime,
                                                      kafka_pending=kafka_pending, refresh=refresh, agent=agent))

    def restored_over(self, plan: ReplayPlan) -> ReplayPlan:
        """``plan`` (a log's, inferred) restored from this checkpoint, as :meth:`replay_plan` does."""
        held = set(map(str, self.restored_seq)) | {str(k) for k, *_ in self.pending}
        restored = plan.restored_at(self.restored_seq, source=self.path)
        pending = tuple(PendingTask(k, s, a, e) for k, s, a, e in self.pending) + \
            tuple(p for p in plan.pending if str(p.key) not in held)
        return replace(restored, pending=pending)


@dataclass
class RunState(EngineState):
    """Everything one pass from the start owns (the engine's state plus the steps); a restart builds a new one."""

    ids: IdSource = field(default_factory=lambda: IdSource(0))
    steps: list[Step] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)
    write_steps: list[int] = field(default_factory=list)                     # each write's PERSIST step
    overlay: dict[str, RecordView] = field(default_factory=dict)
    outputs: list[dict[str, Any]] = field(default_factory=list)
    finished: bool = False
    checkpoints: list[Checkpoint] = field(default_factory=list)
    body_kind: dict[int, StepKind] = field(default_factory=dict)   # per task: RESUME or RERUN, once its body runs
    causes: RemovalCauses = field(default_factory=RemovalCauses)   # what removed each cached record, in words
