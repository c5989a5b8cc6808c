"""AsRecordedAgent: bodies read back from the log (the deterministic-rerun assumption, spec §15.6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_inspect.agents import AgentEvent, AsRecordedAgent
from agent_inspect.cases import build_case, load_cases, run_case
from agent_inspect.recovery import predict

ROOT = Path(__file__).resolve().parents[2]
BY_ID = {c.id: c for c in load_cases(ROOT / "cases")}


def test_actions_read_from_the_log():
    built = build_case(BY_ID["N04"])
    agent = AsRecordedAgent(built.log)
    names = [d.name for d in agent.actions]
    assert names[0] == "IA"                                   # named by upstreamActionName on its outputs
    assert names[1].startswith("action-")                      # WA emits nothing, so its name is unknown
    assert [d.triggers for d in agent.actions] == [("_input_event",), ("WorkEvent",)]
    assert agent.action_uuid("IA", "K1.5") == built.log.records.loc[0, "action_uuid"]
    assert [d.name for d in agent.listeners(AgentEvent("WorkEvent", {"x": "b"}))] == [names[1]]


def test_sub_agent_scopes_are_read_from_wrappers():
    agent = AsRecordedAgent(build_case(BY_ID["S03"]).log)
    scoped = {d.scope for d in agent.actions if d.scope}
    assert scoped == {"child"}
    assert {t for d in agent.actions if d.scope for t in d.triggers} == {"_input_event", "CE"}


# cases whose declared bodies do exactly what the log recorded
AGREE = ["N01", "N02", "N03", "N04", "N05", "N07", "N08", "N09", "N11", "G01", "G03", "G04", "G05", "G09",
         "G10", "P01", "P02", "P04", "L01", "S01", "S02", "S03", "S05", "S06"]


@pytest.mark.parametrize("case_id", AGREE)
@pytest.mark.parametrize("rule", ["original", "fixed"])
def test_as_recorded_agent_predicts_like_the_declared_one(case_id, rule):
    case = BY_ID[case_id]
    built = build_case(case)
    declared = run_case(case, rule, built=built).prediction
    recorded = predict(built.log, plan=built.plan, agent=AsRecordedAgent(built.log), rule=rule, markers=built.markers)
    cols = ["key", "seq", "outcome", "event_type", "fingerprint", "body_ran"]
    assert recorded.tasks[cols].equals(declared.tasks[cols])
    assert recorded.calls_executed() == declared.calls_executed()


@pytest.mark.parametrize("case_id", ["S12", "S12/0.3"])
@pytest.mark.parametrize("rule", ["original", "fixed"])
def test_a_pending_call_whose_child_never_wrote_is_resubmitted_with_its_input_unknown(case_id, rule):
    """S12: a batch of four sub-agent calls, one finished, one child completed, two never started. On main the
    caller re-submits the two: their children run now, although no record holds their bootstrap (addendum
    §1.1); as 0.3 reads it the PENDING slots are null hits and no child runs."""
    case = BY_ID[case_id]
    built = build_case(case)
    declared = run_case(case, rule, built=built).prediction
    recorded = predict(built.log, plan=built.plan, agent=AsRecordedAgent(built.log), rule=rule,
                       markers=built.markers, runtime=case.setup.runtime)
    cols = ["seq", "outcome", "body_ran"]
    assert recorded.tasks[cols].equals(declared.tasks[cols])
    assert recorded.calls_executed() == declared.calls_executed()
    reruns = recorded.tasks[recorded.tasks["outcome"] == "RERUN"]
    assert len(reruns) == (2 if case_id == "S12" else 0)
    # their input is not in the log: the re-submitted envelopes name the call and carry no delegate attributes
    caller = built.log.records.iloc[0]                      # P's record, holding the four slots
    script = AsRecordedAgent(built.log)._script("k", 5, str(caller["action_uuid"]), str(caller["event_uuid"]))
    calls = [args for op, args in script if op == "subagent"]
    assert [(c[3], c[4]) for c in calls] == [("s0", "s0-1"), ("s0", "s0-2"), ("s0", "s0-3"), ("s0", "s0-4")]
    assert [c[2] for c in calls[2:]] == [{}, {}] and {c[0] for c in calls} == {"child"}
