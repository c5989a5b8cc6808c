"""What a replay holds between steps: the run state of one pass, checkpoints, counters, memory snapshots."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from agent_inspect._glossary import did_you_mean, plural
from agent_inspect.agents import AgentEvent
from agent_inspect.executor._steps import Step, StepKind
from agent_inspect.recovery import RemovalCauses
from agent_inspect.recovery.engine import EngineState, IdSource, JobFailed, RecordView, TaskQueue

if TYPE_CHECKING:
    from agent_inspect.store import Entry, Task

__all__ = ["Counters", "MemoryState", "MemoryByKey", "Checkpoint", "JobFailed", "RunState", "TaskQueue", "Write"]

Write = tuple[str, "Task | Entry | None", "RecordView | bytes | None"]
"""One journal write: (state key, task, value); a tombstone has neither task nor value; a checkpoint-time
refresh row (0.4+) has the cached entry and the exact bytes it repeats."""


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
    covered, by business key. Pass it as ``ReplayExecutor(log, restore=checkpoint, plan=..., ...)``.

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
