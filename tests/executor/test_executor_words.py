"""The replay executor's steps in words a user reads, as ``predict``'s tasks: a lookup has a reason only where its
decision removed or re-ran something, an eviction says what went and why, the rule's words stay in ``rule_note``."""

from __future__ import annotations

import pytest

import agent_inspect as ai
from agent_inspect.executor import Policies, ReplayExecutor, Step, StepKind
from agent_inspect.recovery import Prediction, lookup_words, predict
from tests.executor.test_executor_replay import cascade_agent, first_attempt

_REMOVALS = (StepKind.EVICTION, StepKind.INVALIDATION)


@pytest.fixture(scope="module", params=["original", "fixed"])
def production(request: pytest.FixtureRequest) -> tuple[tuple[Step, ...], Prediction]:
    log = ai.load(ai.samples.path("production"))
    markers = ai.samples.markers("production")
    ex = ReplayExecutor(log, markers=markers, rule=request.param)
    ex.run()
    return ex.step_list, predict(log, markers=markers, rule=request.param)


def test_lookups_give_the_reasons_predict_gives(production: tuple[tuple[Step, ...], Prediction]) -> None:
    steps, prediction = production
    lookups = [s for s in steps if s.kind is StepKind.LOOKUP]
    tasks = prediction.tasks[prediction.tasks["outcome"] != "NOT-DISPATCHED"]
    assert len(lookups) == len(tasks) > 600
    assert [str(s.outcome) for s in lookups] == tasks["outcome"].tolist()
    assert [s.reason for s in lookups] == [r if isinstance(r, str) else None for r in tasks["reason"]]
    assert [s.rule_note for s in lookups] == tasks["rule_note"].tolist()
    assert all(s.rule_note for s in lookups)


def test_a_quiet_reuse_has_no_reason_and_keeps_the_rules_words(production: tuple[tuple[Step, ...], Prediction]) -> None:
    steps, prediction = production
    removing = {s.task for s in steps if s.kind in _REMOVALS}
    quiet = [s for s in steps if s.kind is StepKind.LOOKUP and s.outcome == "REUSE" and s.task not in removing]
    assert len(quiet) > 100 and all(s.reason is None for s in quiet)
    if prediction.rule == "original":      # the count > 1 that used to read like a divergence
        assert all(" > 1" in (s.rule_note or "") for s in quiet)


def test_a_rerun_names_the_earlier_lookup_that_evicted_its_record(production: tuple[tuple[Step, ...], Prediction]) -> None:
    steps, _ = production
    named = [s for s in steps if s.kind is StepKind.LOOKUP and s.outcome == "RERUN" and "evicted it" in (s.reason or "")]
    assert named
    for step in named:
        assert step.reason is not None and step.reason.startswith("no cached record for this task: the lookup of ")
        assert "the lookup of task" not in step.reason, "a dispatch index means nothing to a reader"
        evictors = {s.task for s in steps if s.kind is StepKind.LOOKUP and (s.task or 0) < (step.task or 0)
                    and lookup_words(s.action, s.key, s.seq) in step.reason}
        assert evictors, "the reason names an earlier lookup by action, key and seq"
        evicted = {sk for s in steps if s.kind in _REMOVALS and s.task in evictors for sk in s.detail["state_keys"]}
        assert step.state_key in evicted


def test_an_eviction_says_what_went_and_why_in_words(production: tuple[tuple[Step, ...], Prediction]) -> None:
    steps, prediction = production
    removals = [s for s in steps if s.kind in _REMOVALS]
    assert removals
    for s in removals:
        n = s.detail["removed"]
        assert s.reason is not None and s.reason.startswith(f"{n} cached record{'s' if n != 1 else ''} ")
        assert "->" not in s.reason and " > 1" not in s.reason          # the rule's notation stays in rule_note
        assert s.rule_note and "->" in s.rule_note
        assert ("tasks run again" if n != 1 else "its task runs again") in s.reason
    if prediction.rule == "original":
        assert any("more than one cached record for its round" in s.reason for s in removals if s.reason)
    else:
        assert any("not the one the cached record was written for" in s.reason for s in removals if s.reason)


def test_the_steps_frame_has_the_rule_note_column() -> None:
    agent = cascade_agent()
    ex1, marker = first_attempt(agent, [("k", "a"), ("k", "b")])
    ex = ReplayExecutor(ex1.to_log(), agent=agent, plan={"inputs": [("k", "a"), ("k", "b")]}, markers=[marker],
                        rule="original")
    ex.run()
    frame = ex.steps
    assert list(frame.columns).index("rule_note") == list(frame.columns).index("reason") + 1
    lookups = frame[frame["kind"] == "lookup"]
    assert lookups["rule_note"].notna().all()
    assert frame.loc[frame["kind"] == "persist", "rule_note"].isna().all()


def test_a_forced_rerun_says_the_policy_ran_it_and_what_the_rule_decided() -> None:
    agent = cascade_agent()
    ex1, marker = first_attempt(agent, [("k", "a")])
    ex = ReplayExecutor(ex1.to_log(), agent=agent, plan={"inputs": [("k", "a")]}, markers=[marker], rule="fixed",
                        policies=Policies(actions={"IA": "force-rerun"}))
    ex.run()
    forced = next(s for s in ex.step_list if s.kind is StepKind.LOOKUP and s.action == "IA")
    assert forced.outcome == "RERUN" and forced.rule_note
    assert forced.reason == "run again by the force-rerun policy (the rule decided REUSE)"


def test_a_lookup_step_comes_before_the_removals_it_caused(production: tuple[tuple[Step, ...], Prediction]) -> None:
    steps, _ = production
    removals = [s for s in steps if s.kind in _REMOVALS and s.task is not None]
    assert removals
    for s in removals:
        cause = steps[s.detail["caused_by"]]
        assert cause.kind is StepKind.LOOKUP and cause.task == s.task and cause.index < s.index
        assert s.change is not None and s.change.startswith(f"removed {s.detail['removed']}: ")


def test_removed_records_are_grouped_by_round() -> None:
    from agent_inspect.executor._engine import removed_text
    from agent_inspect.store import Entry

    def entry(key: str, seq: int, n: int) -> Entry:
        return Entry(state_key=f"{key}_{seq}_{n}", business_key=key, seq=seq, event_uuid="e", action_uuid="a")

    removed = [entry("user-0001", 2, i) for i in range(3)] + [entry("user-0001", 3, i) for i in range(2)] + \
        [entry("user-0002", 2, 0)]
    assert removed_text(removed) == "removed 6: user-0001@2 ×3, @3 ×2, user-0002@2"
    assert removed_text([]) == "nothing removed"
    # past eight rounds, the ellipsis every uncounted list ends with (first_few), and the total with a separator
    many = [entry("k", s, i) for s in range(10) for i in range(121)]
    assert removed_text(many) == "removed 1,210: k@0 ×121, @1 ×121, @2 ×121, @3 ×121, @4 ×121, @5 ×121, @6 ×121, @7 ×121, …"


def test_a_fail_at_the_get_before_the_initial_write_ends_the_task_and_the_job() -> None:
    from agent_inspect.rules import NaiveRule
    from agent_inspect.store import LookupDecision, RecoverySession, Task

    class SecondGetFails(NaiveRule):
        name = "second-get-fails"

        def __init__(self) -> None:
            self.seen: set[str] = set()

        def lookup(self, session: RecoverySession, task: Task) -> LookupDecision:
            if task.state_key in self.seen:
                return LookupDecision.fail("the second get is refused")
            self.seen.add(task.state_key)
            return super().lookup(session, task)

    ex = ReplayExecutor(agent=cascade_agent(), plan={"inputs": [("k", "a")]}, key_format="K1.5", seed=1,
                        rule=SecondGetFails())
    ex.run()
    lookups = [s for s in ex.step_list if s.kind is StepKind.LOOKUP]
    assert [(s.outcome, s.detail["stage"]) for s in lookups] == [("RERUN", "first"), ("FAIL", "again")]
    assert ex.failure is not None and "the second get is refused" in ex.failure
    assert not [s for s in ex.step_list if s.kind is StepKind.PERSIST]     # no initial write after the FAIL


@pytest.mark.parametrize("member", [StepKind.ROUND_COMPLETE, ai.executor.ActionPolicy.FORCE_RERUN,
                                    ai.executor.CallPolicy.RECORDED])
def test_step_kinds_and_policies_print_as_their_values(member: object) -> None:
    value = member.value  # type: ignore[attr-defined]
    assert str(member) == f"{member}" == format(member) == value
    assert member == value and repr(member).endswith(f": {value!r}>")
