"""A ``diff`` shadow run changes nothing: its sub-agent calls dispatch no child task into the replay."""

from __future__ import annotations

import agent_inspect as ai


def _run(**options: object) -> ai.ReplayExecutor:
    ex = ai.ReplayExecutor(ai.load(ai.samples.path("production")), markers=ai.samples.markers("production"),
                           **options)
    ex.run()
    return ex


def test_a_shadow_runs_sub_agent_calls_dispatch_no_child_task() -> None:
    plain, shadowed = _run(), _run(policies={"default_action": "diff"})
    cols = ["key", "seq", "action", "event_type", "outcome"]
    # the child tasks a shadow's sub-agent call dispatched were looked up in the replay and listed as its tasks
    assert shadowed.report().frame[cols].equals(plain.report().frame[cols])
    assert shadowed.counters.tasks == plain.counters.tasks == 633
    assert shadowed.counters.writes == plain.counters.writes
    callers = [s for s in shadowed.step_list if s.detail.get("shadow") and s.detail["subagents_not_called"]]
    assert [(s.key, s.seq, s.action) for s in callers][:1] == [("user-0017", 2, "review")]
    assert len(callers) == 5
    # no recorded result to hand the body (it got None, and the shadow compared what followed): not compared
    assert all((s.change or "").startswith("not compared: the body called sub-agent reviewer, whose result the record "
                                           "does not hold, and a shadow run dispatches no child task") for s in callers)
    assert all(str(s.outcome) == "diff-unavailable" for s in callers)
    report = shadowed.report().frame
    unavailable = report[report["diff"].astype(str).str.startswith("not compared")]
    assert len(unavailable) == 5 and not unavailable["safe"].any()
    assert unavailable["risks"].str.contains("diff: not compared").all()
    assert not unavailable["risks"].str.contains("disagrees").any()
    assert shadowed.counters.shadow_runs == plain.counters.reused == 169      # one per reused task, these included


def test_a_sub_agent_call_is_no_external_call_under_any_call_policy() -> None:
    """A sub-agent call leaves no job (its child round runs and counts its own calls): it is counted as a sub-agent
    call, not an executed one, so stubbing every call runs no external call and leaves every task replay-safe."""
    plain = _run()
    stubbed = _run(policies={"calls": "stub", "stubs": {"*": "stubbed"}})
    assert (plain.counters.calls_executed, plain.counters.calls_subagent) == (382, 9)
    assert (stubbed.counters.calls_executed, stubbed.counters.calls_subagent, stubbed.counters.calls_stubbed) == \
        (0, 9, 382)
    report = stubbed.report()
    assert report.unsafe.empty and int(report.frame["calls_subagent"].sum()) == 9
    # the steps stay "execute": the same calls predict's ledger names, labelled as sub-agent calls there
    subagent = [s for s in stubbed.step_list if s.detail.get("subagent")]
    assert len(subagent) == 9 and {str(s.outcome) for s in subagent} == {"execute"}
    assert {s.detail["subagent"] for s in subagent} == {"reviewer"}
