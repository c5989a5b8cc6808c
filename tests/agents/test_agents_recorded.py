"""AsRecordedAgent: bodies read back from the log (the deterministic-rerun assumption, spec §15.6)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from agent_inspect.agents import AgentEvent, AsRecordedAgent
from agent_inspect.cases import build_case, builtin, load_cases, run_case
from agent_inspect.recovery import ReplayPlan, predict

ROOT = Path(__file__).resolve().parents[2]
BY_ID = {c.id: c for c in load_cases(ROOT / "cases")}
BUILTIN = {c.id: c for c in builtin()}


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


def test_building_the_agent_reads_only_the_values_its_columns_do_not_answer():
    import agent_inspect as ai

    log = ai.load(ai.samples.path("production"))
    agent = AsRecordedAgent(log)
    # an initial record (no call, no output) of a plain event is known from its columns: its value is not decoded
    r = log.records
    plain = ~r["task_event_type"].isin(["InternalSubagentCallEvent", "_agent_run_begin_event"])
    initial = r.index[~r["completed"].astype(bool) & (r["call_count"] == 0) & plain]
    assert len(initial) and not set(initial) & set(log._cache)
    assert agent.actions == AsRecordedAgent(ai.load(ai.samples.path("production"))).actions


# the bundled cases (every variant) whose declared agent does, under each of the case's rules, what the log recorded
AGREE = ["N01", "N02", "N03", "N04", "N05", "N07", "N08", "N09", "N09/snapshot-fluss-k1", "N09/snapshot-kafka-k1",
         "N10", "N11", "N13", "N14", "N14/0.4", "N14/0.4-fluss", "N14/0.4-kafka-marker", "N14/main", "N16", "N17",
         "G01", "G03", "G04", "G05", "G09", "G10", "G11",
         "P01", "P01/snapshot-fluss-k1", "P01/snapshot-kafka-k1", "P02", "P02/snapshot-fluss-k1",
         "P02/snapshot-kafka-k1", "P03/k2", "P04", "P04/k1.5-max-parallelism-1", "P04/k1.6", "P04/k2", "P05",
         "P05/snapshot-fluss-k1", "P05/snapshot-kafka-k1",
         "L01", "L01/k1", "L01/k2", "L01/k2-module-qualname-triggers-changed",
         "S01", "S02", "S03", "S05", "S06", "S08", "S08/0.3", "S09", "S09/0.3", "S09/0.4", "S10/0.3", "S11",
         "S11/0.3", "S12", "S12/0.3", "R01", "R01/0.4", "R01/main-fluss"]

_NEW_INPUT = "the replay sends an input the log never saw (In(B)): what its body emits is in no record"
_CODE_CHANGED = "the action's code changed between attempts (stale logic): the new code's action UUID is in no record"
_JAVA_UUID = "a Java action's hash-based UUID is new in every JVM (spec §4.4); the log shows only the old one"
# the rest: what the declared agent knows and no record holds (each must still differ; a fix moves it to AGREE)
INHERENT = {
    "N15": _NEW_INPUT, "N15/0.3": _NEW_INPUT, "N15/main": _NEW_INPUT, "G02": _NEW_INPUT, "G08": _NEW_INPUT,
    "P03": _JAVA_UUID, "P03/k1": _JAVA_UUID,
    "L01/k1-module-changed": _CODE_CHANGED, "L01/k1-qualname-changed": _CODE_CHANGED,
    "L01/k1-triggers-changed": _CODE_CHANGED, "L01/k2-renamed": _CODE_CHANGED,
    "S10": "the child of the PENDING slot never wrote and no record names a sub-agent: its scope and body (the "
           "call review) are only in the checkpoint's queued task",
}
_COMPARED = ["key", "seq", "outcome", "event_type", "fingerprint", "body_ran", "calls_executed", "calls_replayed",
             "calls_resubmitted", "state_key", "entry_pos"]


def _with_recorded_names(built, case, agent):
    """The case's plan with its restored tasks naming actions as ``agent`` does (the declared names are in no
    record; ``ReplayPlan.from_log`` names them so)."""
    fmt = case.setup.key_format
    mine = {agent.action_uuid(d.name, fmt): d.name for d in agent.actions}
    pending = tuple(replace(t, action=mine.get(built.agent.action_uuid(t.action, fmt), t.action))
                    for t in built.plan.pending)
    return replace(built.plan, pending=pending)


def _both(case_id, rule):
    """(declared, as-recorded) predictions of the bundled case ``case_id`` under ``rule``."""
    case = BUILTIN[case_id]
    built = build_case(case)
    declared = run_case(case, rule, built=built).prediction
    agent = AsRecordedAgent(built.log)
    recorded = predict(built.log, plan=_with_recorded_names(built, case, agent), agent=agent, rule=rule,
                       markers=built.markers, runtime=case.setup.runtime, kafka_pending=case.setup.kafka_pending)
    return declared, recorded


def _same(declared, recorded):
    a, b = (p.tasks[_COMPARED].reset_index(drop=True) for p in (declared, recorded))
    return (a.equals(b) and declared.calls_executed() == recorded.calls_executed()
            and declared.crashed == recorded.crashed)


def _rules(case_ids):
    return [(cid, rule) for cid in case_ids for rule in (list(BUILTIN[cid].expect) or ["fixed"])]


@pytest.mark.parametrize(("case_id", "rule"), _rules(AGREE))
def test_as_recorded_agent_predicts_like_the_declared_one(case_id, rule):
    declared, recorded = _both(case_id, rule)
    a, b = (p.tasks[_COMPARED].reset_index(drop=True) for p in (declared, recorded))
    pd.testing.assert_frame_equal(b, a)
    assert recorded.calls_executed() == declared.calls_executed()
    assert recorded.crashed == declared.crashed


@pytest.mark.parametrize("case_id", sorted(INHERENT))
def test_what_the_log_cannot_hold_still_differs(case_id):
    """Each case here differs for the reason given; once the as-recorded agent predicts it, move it to AGREE."""
    assert INHERENT[case_id]
    assert not all(_same(*_both(case_id, rule)) for _, rule in _rules([case_id]))


def test_every_bundled_case_is_classified():
    with_log = {cid for cid, case in BUILTIN.items() if case.log}
    assert with_log == set(AGREE) | set(INHERENT) and not set(AGREE) & set(INHERENT)


@pytest.mark.parametrize("case_id", ["N10", "N16"])
def test_a_begin_event_is_read_back_from_its_round(case_id):
    """agent-run.begin-event: the run sends the begin event its round recorded (N16: the latest of two attempts'),
    under a fresh id, so the begin action's task is looked up and reused as the declared agent's is."""
    built = build_case(BUILTIN[case_id])
    agent = AsRecordedAgent(built.log)
    recs = built.log.records
    kind = recs["task_event_type"]
    for seq in (5, 6):
        root = built.log.value(int(recs.index[(recs["seq"] == seq) & (kind == "_input_event")][0])).task_event
        recorded = recs[(recs["seq"] == seq) & (kind == "_agent_run_begin_event")].index[-1]
        begin = agent.begin_event(AgentEvent(root.type, root.attrs()))      # a fresh id: found by its attributes
        assert begin is not None and begin.id is None and begin.type == "_agent_run_begin_event"
        assert begin.fingerprint == recs.at[recorded, "event_uuid"]
        assert begin.attributes == built.log.value(int(recorded)).task_event.attrs()
        assert agent.begin_event(AgentEvent(root.type, {"input": "other"}, root.id)) is begin   # or by its id
    assert agent.begin_event(AgentEvent("_input_event", {"input": "never seen"})) is None
    rows = predict(built.log, plan=built.plan, agent=agent, rule="fixed", markers=built.markers).tasks
    assert rows["event_type"].tolist()[:2] == ["_agent_run_begin_event", "_input_event"]
    assert set(rows["outcome"]) == {"REUSE"}


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


@pytest.mark.parametrize("case_id", ["N10", "N16"])
def test_the_default_plan_sends_begin_events_when_the_log_shows_them(case_id):
    """With no plan and no agent, ``predict`` runs the begin action's tasks the log shows (they were NOT-DISPATCHED)."""
    case = BUILTIN[case_id]
    built = build_case(case)
    assert ReplayPlan.from_log(built.log).begin_event
    assert not ReplayPlan.from_log(build_case(BUILTIN["N01"]).log).begin_event
    cols = ["seq", "event_type", "fingerprint", "outcome", "body_ran", "entry_pos"]
    for rule in case.expect:
        declared = run_case(case, rule, built=built).prediction
        pd.testing.assert_frame_equal(predict(built.log, markers=built.markers, rule=rule).tasks[cols],
                                      declared.tasks[cols])


def test_one_key_sending_the_same_input_twice_gets_each_rounds_own_begin_event():
    """agent-run.begin-event, In(A) twice: round 6 recorded Begin(m1), not round 5's Begin(m0). Found by the input's
    attributes alone, both rounds got m0: round 6's begin task reran and its recorded one was left NOT-DISPATCHED."""
    import tomllib

    from agent_inspect.agents import RoundBeginEvents
    from agent_inspect.cases import parse_case

    (case,) = parse_case(tomllib.loads('''
        id = "X-begin-twice"
        name = "same input twice with begin events"
        category = "normal"
        summary = "one key sends In(A) twice; each round recorded its own begin event"
        replay = ["k:In(A)", "k:In(A)"]
        log = [
          { att = 1, key = "k", seq = 5, action = "BA", event = "Begin(m0)#g1", status = "C" },
          { att = 1, key = "k", seq = 5, action = "IA", event = "In(A)#a1", status = "C" },
          { att = 1, key = "k", seq = 6, action = "BA", event = "Begin(m1)#g2", status = "C" },
          { att = 1, key = "k", seq = 6, action = "IA", event = "In(A)#a2", status = "C" },
        ]
        [setup]
        begin_event = true
        [agent]
        actions = [{ name = "BA", triggers = ["_agent_run_begin_event"] }, { name = "IA", triggers = ["_input_event"] }]
        [expect]
        fixed = "A.BA=REUSE A.IA=REUSE A.BA=REUSE A.IA=REUSE"
    '''))
    built = build_case(case)
    agent = AsRecordedAgent(built.log)
    assert isinstance(agent, RoundBeginEvents)
    recs = built.log.records
    begins = recs[recs["task_event_type"] == "_agent_run_begin_event"].groupby("seq")["event_uuid"].last()
    root = AgentEvent("_input_event", {"input": "A"})
    assert [agent.begin_event_of_round(root, "k", s).fingerprint for s in (5, 6)] == [begins[5], begins[6]]
    for plan in (built.plan, None):       # the case's plan (fresh input ids) and the log's own
        rows = predict(built.log, plan=plan, agent=agent, rule="fixed", markers=built.markers).tasks
        assert rows["outcome"].tolist() == ["REUSE"] * 4
        assert rows.loc[rows["event_type"] == "_agent_run_begin_event", "fingerprint"].tolist() == begins.tolist()


def test_a_recorded_failed_call_the_record_goes_past_is_caught():
    """production_v4's chat record holds gpt-large FAILED then the gpt-mini fallback: the body caught the failure,
    so replaying it as recorded resumes (as predict says) instead of failing the simulated job."""
    import agent_inspect as ai

    log, markers = ai.load(ai.samples.path("production_v4")), ai.samples.markers("production_v4")
    ex = ai.ReplayExecutor(log, markers=markers)
    ex.run()
    assert ex.failure is None
    calls = [(s.function_id, str(s.outcome)) for s in ex.step_list if s.call_index is not None]
    assert calls == [("route:support-router", "hit"), ("chat:support-router:gpt-large", "hit-failed"),
                     ("chat:support-router:gpt-mini", "hit")]
    tasks = predict(log, markers=markers).tasks
    got = [(s.key, s.seq, s.action, str(s.outcome)) for s in ex.step_list if s.kind in ("lookup", "not-dispatched")]
    assert got == [(str(b), int(q), str(a), str(o)) for b, q, a, o in
                   zip(tasks["business_key"], tasks["seq"], tasks["action"], tasks["outcome"])]


def test_a_recorded_failed_last_call_still_fails_the_body():
    built = build_case(BY_ID["N04"])
    agent = AsRecordedAgent(built.log)

    class Ctx:
        business_key = key = "k"
        seq = 1
        event = AgentEvent("_input_event", {})

        def durable_execute(self, fid, digest, call):
            raise RuntimeError("recorded failure")

    agent._scripts[("k", 1, agent._uuid_of["IA"], Ctx.event.fingerprint)] = [("call", ("f", "d", True))]
    with pytest.raises(RuntimeError):
        agent.run_action("IA", Ctx())
    agent._scripts[("k", 1, agent._uuid_of["IA"], Ctx.event.fingerprint)] = [("call", ("f", "d", True)),
                                                                               ("send", ("Out", {}))]
    sent = []
    Ctx.send_event = lambda self, t, a: sent.append(t)
    agent.run_action("IA", Ctx())
    assert sent == ["Out"]
