"""What a restore does with a round held by refresh rows that the log alone cannot show, and what the tool says.

Facts (spec §9.3, §9.5; apache/flink-agents ActionExecutionOperator): a re-submitted task whose state is complete is
reused, which writes nothing; every listener of an event type gets a task for each event of it.

- A restore that reused IA and still held WA queued at the next checkpoint leaves, for that round, the same rows as a
  run that finished WA before it: the executor's restore REUSEs WA in the first and sends nothing in the second. The
  inference reads both as finished and says that it cannot tell (``ReplayPlan.notes``, ``Prediction.notes``).
- A listener that never ran anywhere in the log is not known: the plan says so instead of silently missing it.
- A Java action under K1–K1.6 gets a new action UUID per attempt; its UUIDs never run in one round, so a record of
  one answers for the others (no task inferred queued for the stale UUID).
"""

from __future__ import annotations

from typing import Any

from agent_inspect.agents._python import PythonAgent
from agent_inspect.executor import Breakpoint, Policies, ReplayExecutor, StepKind
from agent_inspect.recovery import ReplayPlan, predict
from tests.support.two_call_agent import CALLS, add, multiply, two_call_agent


def _executor(log: Any = None, agent: Any = None, **how: Any) -> ReplayExecutor:
    if log is None:
        return ReplayExecutor(agent=agent, key_format="K1.5", runtime="main", seed=7, **how)
    return ReplayExecutor(log, agent=agent, rule="original", runtime="main", policies=Policies(trust_payloads=True),
                          **how)


def _looked(ex: ReplayExecutor) -> list[tuple[int, str, str]]:
    """Run ``ex`` to the end: its LOOKUP and NOT-DISPATCHED steps."""
    ex.run()
    assert ex.failure is None
    return [(int(s.seq), s.action, str(s.outcome)) for s in ex.step_list
            if s.kind in (StepKind.LOOKUP, StepKind.NOT_DISPATCHED)]


def _rows(log: Any, seq: int) -> list[tuple[str, bool]]:
    recs = log.records[log.records["seq"] == seq]
    return list(zip(recs["state_key"].astype(str), recs["completed"].astype(bool)))


def test_a_task_queued_behind_a_reused_trigger_looks_like_a_finished_round() -> None:
    agent = two_call_agent()
    inputs = {"inputs": [("k", "1"), ("k", "2")]}
    first = _executor(agent=agent, plan=inputs)
    first.run(until=Breakpoint(kind="lookup", seq=1, action="IA"))
    first.checkpoint()
    first.run()                                   # round 1 done, then the job fails
    restored = _executor(first.to_log(), agent, restore=first.checkpoints[-1], seed=8)
    restored.run(until=Breakpoint(kind="lookup", seq=1, action="WA"))    # IA reused, WA still queued
    marker = restored.checkpoint()
    log = restored.to_log()

    straight = _executor(agent=agent, plan=inputs)                       # no restore: WA ran before the checkpoint
    straight.run(until=Breakpoint(kind="round-complete", seq=1))
    straight_marker = straight.checkpoint()
    straight_log = straight.to_log()
    assert _rows(log, 1) == _rows(straight_log, 1)                       # round 1 reads the same in both logs

    CALLS.clear()
    assert _looked(_executor(log, agent, restore=restored.checkpoints[-1], seed=9)) == [
        (1, "WA", "REUSE"), (1, "IA", "NOT-DISPATCHED")]
    assert _looked(_executor(straight_log, agent, restore=straight.checkpoints[-1], seed=9)) == []
    assert CALLS == []

    for lg, mk in ((log, marker), (straight_log, straight_marker)):
        plan = ReplayPlan.from_log(lg, markers=[mk])
        assert plan.pending == () and plan.restored_seq["k"] == 1      # read as finished: nothing re-submitted
        [note] = [n for n in plan.notes if "REUSEs it" in n]
        assert "(k, 1)" in note
        assert note in predict(lg, markers=[mk]).notes


def test_a_listener_that_never_ran_is_named_not_guessed() -> None:
    agent = two_call_agent()
    job = _executor(agent=agent, plan={"inputs": [("k", "1")]})
    job.run(until=Breakpoint(kind="lookup", seq=0, action="WA"))        # WA queued, never ran anywhere in the log
    marker = job.checkpoint()
    log = job.to_log()

    CALLS.clear()
    assert _looked(_executor(log, agent, restore=job.checkpoints[-1], seed=8)) == [
        (0, "WA", "RERUN"), (0, "IA", "NOT-DISPATCHED")]
    plan = ReplayPlan.from_log(log, markers=[marker])
    assert plan.pending == ()                                            # the log does not show WA listens
    [note] = [n for n in plan.notes if "'WorkEvent'" in n]
    assert note.startswith("no action in the log ran for 'WorkEvent' (emitted in round (k, 0))")
    pred = predict(log, markers=[marker])
    assert note in pred.notes and note not in pred.warnings              # a limit of the reading, not a finding
    html = pred._repr_html_()
    assert "<details" in html and "what the log cannot tell" in html and "&#x27;WorkEvent&#x27;" in html


def _java_agent(*calls: Any) -> PythonAgent:
    """IA (Python) sends WorkEvent; WA (a Java action) runs ``calls`` in turn on its ``x`` and outputs the last."""
    agent = PythonAgent()

    @agent.action("IA", listens=["_input_event"])
    def ia(event, ctx):
        ctx.send_event("WorkEvent", {"x": int(event.attributes["input"])})

    @agent.action("WA", listens=["WorkEvent"], java=True)
    def wa(event, ctx):
        value = event.attributes["x"]
        for call in calls:
            value = ctx.durable_execute(call, value)
        ctx.send_event("_output_event", {"output": value})

    return agent


def test_a_java_action_under_two_attempt_uuids_is_one_listener() -> None:
    agent = _java_agent(add)
    first = _executor(agent=agent, plan={"inputs": [("k", "1"), ("k", "2")]}, attempt=1)
    first.run(until=Breakpoint(kind="lookup", seq=1, action="IA"))
    first.checkpoint()
    again = _executor(first.to_log(), agent, restore=first.checkpoints[-1], seed=8, attempt=2)
    again.run()                                                          # round 1 under WA's second UUID
    marker = again.checkpoint()
    log = again.to_log()
    recs = log.records
    assert recs.loc[recs["task_event_type"] == "WorkEvent", "action_uuid"].nunique() == 2

    assert _looked(_executor(log, agent, restore=again.checkpoints[-1], seed=9, attempt=3)) == []
    plan = ReplayPlan.from_log(log, markers=[marker])
    assert plan.pending == ()                     # neither round holds a task for the other attempt's UUID
    assert _looked(_executor(log, agent, markers=[marker], seed=9, attempt=3)) == []


def test_a_pending_java_task_is_named_after_the_agents_java_listener() -> None:
    """Before K2 the log's Java action UUID is the writing JVM's (spec §4.4): the replay's agent cannot derive it,
    and a record with no outputs yet gives the log no name for it. The pending task is the agent's only Java action
    listening to its event, and the restore re-runs it (a new JVM misses its state)."""
    agent = _java_agent(multiply, add)
    for key_format in ("K1", "K1.5"):
        first = ReplayExecutor(agent=agent, plan={"inputs": [("k", "1")]}, key_format=key_format, runtime="main",
                               seed=7, attempt=1)
        first.run(until=Breakpoint(kind="persist", seq=0, action="WA", outcome="call results (1)"))
        marker = first.checkpoint()
        log = first.to_log()
        plan = ReplayPlan.from_log(log, markers=[marker], agent=agent)
        assert [(p.action, p.event.type) for p in plan.pending] == [("WA", "WorkEvent")]
        tasks = predict(log, markers=[marker], agent=agent).tasks
        outcomes = list(zip(tasks["action"], tasks["outcome"].astype(str)))
        assert outcomes[:2] == [("WA", "RERUN"), ("IA", "NOT-DISPATCHED")]
        assert ReplayPlan.from_log(log, markers=[marker]).pending[0].action.startswith("action-")   # the log's name
