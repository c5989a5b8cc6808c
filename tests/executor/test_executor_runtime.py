"""The replay executor under the upstream runtimes (issue #12 items 3, 4, 10): the same behaviours as the
predictor, step by step."""

from __future__ import annotations

from pathlib import Path

from agent_inspect.cases import build_case, executor_for, load_cases
from agent_inspect.executor import ReplayExecutor, StepKind

# every case file of the repository by id ("S09", "S09/0.3", …)
BY_ID = {c.id: c for c in load_cases(Path(__file__).resolve().parents[2] / "cases")}


def _lookups(ex: ReplayExecutor) -> list[tuple[str, str]]:
    return [(s.action, s.outcome) for s in ex.step_list if s.kind in (StepKind.LOOKUP, StepKind.NOT_DISPATCHED)]


def _calls(ex: ReplayExecutor) -> list[tuple[str, str]]:
    return [(s.function_id, s.outcome) for s in ex.step_list if s.call_index is not None]


def test_pending_caller_slot_is_resubmitted_under_main():
    ex = executor_for(BY_ID["S09"], rule="fixed")
    ex.run()
    assert _lookups(ex) == [("P", "RESUME"), ("CA", "REUSE")]
    assert ("s0#s0-1", "resubmit") in _calls(ex)          # the PENDING slot re-submits the call
    old = executor_for(BY_ID["S09/0.3"], rule="fixed")
    old.run()
    assert _lookups(old) == [("P", "RESUME"), ("CA", "NOT-DISPATCHED")]
    assert ("s0#s0-1", "pending-hit") in _calls(old)


def test_fresh_internal_call_reserves_a_pending_slot_first():
    ex = executor_for(BY_ID["S08"], rule="fixed")       # the caller has no slot yet: it reserves one
    ex.run()
    steps = ex.step_list
    pending = next(i for i, s in enumerate(steps) if s.function_id == "s0#s0-1" and s.outcome == "pending")
    child = next(i for i, s in enumerate(steps) if s.kind is StepKind.LOOKUP and s.action == "CA")
    done = next(i for i, s in enumerate(steps) if s.function_id == "s0#s0-1" and s.outcome == "execute")
    assert pending < child < done
    old = executor_for(BY_ID["S08/0.3"], rule="fixed")
    old.run()
    assert ("s0#s0-1", "pending") not in _calls(old)


def test_reused_child_answers_with_its_result_events():
    ex = executor_for(BY_ID["S08"], rule="fixed")
    ex.run()
    assert _lookups(ex) == [("P", "RESUME"), ("CA", "REUSE"), ("CA2", "NOT-DISPATCHED")]
    reuse = next(s for s in ex.step_list if s.kind is StepKind.REUSE and s.action == "CA")
    assert reuse.detail["outputs"] == ()              # the forwarded CE envelope is not sent again
    # the caller's call result (journaled before P completes) is the stored result event's payload
    from agent_inspect.codec import unpickle_payload

    log = ex.to_log()
    results = [c for p in log.records.index for c in (log.value(int(p)).call_results or ())
               if c.function_id == "s0#s0-1" and c.status == "SUCCEEDED"]
    assert [unpickle_payload(c.result_payload, i_trust_this_payload=True) for c in results] == [[{"output": "LGTM"}]]


def test_refresh_rows_bring_the_pending_state_back():
    ex = executor_for(BY_ID["N15"], rule="original")
    ex.run()
    assert _lookups(ex)[0] == ("WA", "RESUME")
    assert ("multiply", "hit") in _calls(ex) and ("multiply", "execute") not in _calls(ex)
    old = executor_for(BY_ID["N15/0.3"], rule="original")
    old.run()
    assert _lookups(old)[0] == ("WA", "RERUN") and ("multiply", "execute") in _calls(old)


def test_result_events_survive_the_executor_journal():
    ex = executor_for(BY_ID["S10"], rule="fixed")
    ex.run()
    log = ex.to_log()
    from agent_inspect.history import subagent_result_events

    child = [p for p in log.records.index if log.records.at[p, "task_event_type"] == "InternalSubagentCallEvent"
             and log.records.at[p, "completed"]]
    assert child and [e.attrs() for e in subagent_result_events(log.value(int(child[-1])))] == [{"output": "LGTM"}]


def test_not_dispatched_is_decided_when_the_round_ends():
    built = build_case(BY_ID["N17"])
    ex = ReplayExecutor(built.log, agent=built.agent, plan=built.plan, markers=list(built.markers), rule="original")
    ex.run()
    nd = [(s.action, s.seq) for s in ex.step_list if s.kind is StepKind.NOT_DISPATCHED]
    assert nd == [("CA", 7)]


def test_branch_aware_begin_task_after_its_round_root():
    ex = executor_for(BY_ID["N16"], rule="branch-aware")
    ex.run()
    assert [o for _, o in _lookups(ex)] == ["REUSE"] * 4


def test_a_resubmitted_subagent_call_is_counted_as_resubmitted_everywhere():
    # S12 under main: one terminal slot replays, three PENDING slots re-submit their calls (addendum §1.1). A
    # re-submission is not an executed call (S09: "s0#s0-1 not executed"): the child's own lookup decides
    # whether the sub-agent runs again, and its row counts what it runs
    from agent_inspect.fleet import key_frame
    from agent_inspect.recovery import normalize_markers, predict

    case = BY_ID["S12"]
    ex = executor_for(case, rule="original")
    ex.run()
    report = ex.report()
    caller = report.frame[report.frame["action"] == "P"].iloc[0]
    assert (caller["calls_resubmitted"], caller["calls_executed"], caller["calls_served"]) == (3, 0, 1)
    assert caller["safe"] and "3 sub-agent calls re-submitted" in report._repr_html_()
    assert (ex.counters.calls_resubmitted, ex.counters.calls_executed) == (3, 0)
    built = build_case(case)
    pred = predict(built.log, plan=built.plan, agent=built.agent, rule="original", markers=built.markers)
    row = pred.tasks[pred.tasks["action"] == "P"].iloc[0]
    assert (row["calls_resubmitted"], row["calls_executed"]) == (3, 0) and not pred.calls_executed()
    # the fleet scan and predict over the same log, agent and plan (as recorded) count the same calls
    as_recorded = predict(built.log, rule="original", markers=built.markers)
    keys = key_frame(built.log, rules=("original",), markers=normalize_markers(list(built.markers)))
    assert keys["original_calls"].sum() == as_recorded.tasks["calls_executed"].sum() == 0
    assert as_recorded.tasks["calls_resubmitted"].sum() >= 1


def test_a_resubmitted_call_whose_child_reruns_counts_the_child_calls():
    ex = executor_for(BY_ID["S10"], rule="original")    # the child has no record: it runs once, review once
    ex.run()
    frame = ex.report().frame.set_index(["action", "outcome"])
    assert frame.loc[("P", "RESUME"), "calls_resubmitted"] == 1 and frame.loc[("P", "RESUME"), "calls_executed"] == 0
    assert frame.loc[("CA", "RERUN"), "calls_executed"] == 1
    assert ex.counters.calls_executed == sum(BY_ID["S10"].expect_calls["original"].values()) == 1


def _with_calls(case_id: str, **policies: object) -> ReplayExecutor:
    case = BY_ID[case_id]
    built = build_case(case)
    ex = ReplayExecutor(built.log, agent=built.agent, plan=built.plan, markers=list(built.markers), rule="fixed",
                        runtime=case.setup.runtime, kafka_pending=case.setup.kafka_pending, policies=policies)
    ex.run()
    return ex


def test_a_dry_run_runs_sub_agents_and_stubs_or_denies_their_calls():
    """The call policy governs calls that leave the job (#1069), not the dispatch of a sub-agent's child round:
    under ``stub`` the child runs with its own ``review`` call stubbed, under ``deny`` it is that call, not the
    sub-agent call, that is refused (before, both stopped at the sub-agent call and no child ran)."""
    for case_id, resubmitted in (("S10", True), ("S10/0.3", False), ("S03", False)):
        stubbed = _with_calls(case_id, calls="stub", stubs={"*": "stubbed"})
        produced = _with_calls(case_id, calls="execute")
        assert stubbed.failure is None and produced.failure is None
        assert _lookups(stubbed) == _lookups(produced)      # the same tasks, the children's included
        sub_agent_calls = [(f, o) for f, o in _calls(stubbed) if "#" in f]
        assert sub_agent_calls == [(f, o) for f, o in _calls(produced) if "#" in f]
        assert (stubbed.counters.calls_resubmitted > 0) == resubmitted
        # every call that leaves the job, and only those: a sub-agent call is counted apart from them
        assert stubbed.counters.calls_stubbed == produced.counters.calls_executed
        assert stubbed.counters.calls_subagent == sum(o == "execute" for f, o in sub_agent_calls)
    denied = _with_calls("S10", calls="deny")
    assert denied.failure is not None and "durable call review " in str(denied.failure)
    assert denied.counters.calls_denied == 1 and denied.counters.calls_resubmitted == 0
