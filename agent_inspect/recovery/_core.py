"""The operator's store decisions for one task (spec §9.3), the one sequence the task loops share.

Step 1 ``get``; a REUSE ends there. Otherwise, when nothing is cached, ``get`` again, ``put`` the initial record
if there is still none and ``get`` to bind the context; the body runs (the driver's business); then ``get`` and
``put`` the completed record. Every ``get`` may evict (§8.2); a FAIL anywhere ends the task.
"""

from __future__ import annotations

from collections.abc import Callable

from agent_inspect.store import Entry, LookupDecision, Outcome, RecoverySession, Task

__all__ = ["TaskFailed", "TaskLookups"]

#: the members as module constants: reading one off the enum class costs about 60 ns (a lookup or two per get)
_FAIL = Outcome.FAIL


class TaskFailed(Exception):
    """A lookup FAILed: upstream the task throws (and the job restarts in a loop)."""

    def __init__(self, decision: LookupDecision, stage: str) -> None:
        super().__init__(decision.reason)
        self.decision = decision
        #: which get failed: "first", "again" (before the initial write), "bind" (after it), "complete"
        self.stage = stage


class TaskLookups:
    """The gets and puts of one task against ``session``; a driver overrides :meth:`looked_up` and :meth:`write` to
    see every decision (before a FAIL is raised as :class:`TaskFailed`) and what is written.

    For example::

        session = ai.recovery.rebuild(log, "original", markers)
        entry = next(iter(session.store.entries()))
        task = ai.store.Task(entry.business_key, entry.seq, entry.state_key, entry.event_uuid, entry.action_uuid)
        decision = ai.recovery.TaskLookups(session, task).get()   # the engine's first get of this task
        decision.outcome, decision.reason
    """

    __slots__ = ("session", "task", "stage", "decided")

    def __init__(self, session: RecoverySession, task: Task) -> None:
        self.session, self.task = session, task
        #: the stage of the get under way (see :class:`TaskFailed`), for :meth:`looked_up`
        self.stage = "first"
        #: the last get's decision
        self.decided: LookupDecision | None = None

    def looked_up(self, decision: LookupDecision) -> None:
        """Every decision, before a FAIL is raised (a hook: the default does nothing)."""

    def write(self, entry: Entry) -> object:
        """Put a record (the default: ``session.write``)."""
        return self.session.write(entry)

    def get(self, stage: str = "first", *, pos: int | None = None) -> LookupDecision:
        self.stage = stage
        decision = self.decided = self.session.lookup(self.task, pos=pos)
        self.looked_up(decision)
        if decision.outcome is _FAIL:
            raise TaskFailed(decision, stage)
        return decision

    def start(self, initial: Callable[[], Entry]) -> None:
        """Before a body that found nothing cached: get again, put the initial record if still none, get."""
        if self.get_again().entry is None:
            self.write(initial())
        self.get("bind")

    def get_again(self) -> LookupDecision:
        """The "again" get right after the first: when the first removed nothing and the rule's lookup reads the
        store alone (:attr:`~agent_inspect.store.DivergenceRule.repeatable_lookup`), the store is as the first
        get left it, so its decision is reported again instead of asked for."""
        first, session = self.decided, self.session
        if first is None or not session.repeatable_lookup or first.events or first.divergences:
            return self.get("again")
        self.stage = "again"
        session.step, session.trigger_pos = "lookup", None   # as the get would leave them
        self.looked_up(first)
        return first

    def complete(self, completed: Entry) -> None:
        """After the body: get, then put the completed record."""
        self.get("complete")
        self.write(completed)
