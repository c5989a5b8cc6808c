"""The "again" get of §9.3: a rule whose lookup reads the store alone is not asked twice on an unchanged store."""

from __future__ import annotations

import agent_inspect as ai
from agent_inspect.recovery import TaskLookups
from agent_inspect.rules import OriginalRule
from agent_inspect.store import Entry, LookupDecision, RecoverySession, Task


class _Seen(TaskLookups):
    __slots__ = ("seen",)

    def looked_up(self, decision: LookupDecision) -> None:
        self.seen.append((self.stage, decision))


class _Counting(OriginalRule):
    """Its own lookup (the original's, counted): the flag of the class defining lookup is what counts."""

    name = "counting"

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def lookup(self, session: RecoverySession, task: Task) -> LookupDecision:
        self.calls += 1
        return super().lookup(session, task)


def _start(rule: OriginalRule) -> _Seen:
    session = ai.recovery.rebuild(ai.load(ai.samples.path("G01")), rule)
    known = next(iter(session.store.entries()))
    task = Task(known.business_key, known.seq + 100, f"{known.state_key}-new", known.event_uuid, known.action_uuid)
    core = _Seen(session, task)
    core.seen = []
    core.get()
    core.start(lambda: Entry(task.state_key, task.business_key, task.seq, task.event_uuid, task.action_uuid))
    return core


def test_the_again_get_repeats_the_first_decision_for_a_rule_that_reads_the_store_alone():
    core = _start(OriginalRule())
    assert [stage for stage, _ in core.seen] == ["first", "again", "bind"]
    (_, first), (_, again), (_, bind) = core.seen
    assert again is first and first.entry is None and bind.entry is not None


def test_a_subclass_with_its_own_lookup_is_asked_every_get():
    rule = _Counting()
    assert OriginalRule.repeatable_lookup and not ai.store.RecoverySession(rule).repeatable_lookup
    core = _start(rule)
    assert [stage for stage, _ in core.seen] == ["first", "again", "bind"] and rule.calls == 3
    assert core.seen[1][1] is not core.seen[0][1]
