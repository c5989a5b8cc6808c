"""``predict`` never makes a durable call of the agent it is given, and a recorded failure reaches a body in
``predict`` as it does in a live replay (upstream re-raises it, spec §9.4): so ``predict`` and the executor
take the same path through a body that does not get past a failed call."""

from __future__ import annotations

from typing import Any

import agent_inspect as ai
from agent_inspect.agents import PythonAgent
from agent_inspect.executor import ReplayExecutor
from tests.support.outcomes import by_state_key

MADE: list[str] = []


def tool() -> str:
    MADE.append("tool")
    return "ok"


def broken() -> None:
    MADE.append("broken")
    raise ValueError("tool down")


def _agent(call: Any, *, catch: bool = False) -> PythonAgent:
    """IA sends two work events; WA makes ``call`` (catching its failure when ``catch``) and outputs."""
    agent = PythonAgent()

    @agent.action("IA", listens=["_input_event"])
    def ia(event: Any, ctx: Any) -> None:
        ctx.send_event("WorkEvent", {"n": 1})
        ctx.send_event("WorkEvent", {"n": 2})

    @agent.action("WA", listens=["WorkEvent"])
    def wa(event: Any, ctx: Any) -> None:
        try:
            ctx.durable_execute(call)
        except Exception:
            if not catch:
                raise
        ctx.send_event("_output_event", {"done": event.attributes["n"]})

    return agent


def _job(agent: PythonAgent) -> tuple[Any, dict[int, int]]:
    job = ReplayExecutor(agent=agent, plan={"inputs": [("k", "A")]}, key_format="K1.5", seed=3)
    marker = job.checkpoint()
    job.run()
    return job.to_log(), marker


def test_predict_never_makes_a_call_of_the_agent_it_is_given() -> None:
    agent = _agent(tool)
    log, _ = _job(agent)
    MADE.clear()
    tasks = ai.predict(log, agent=agent, markers=[]).tasks      # a fresh start: every task re-runs
    assert list(tasks["outcome"].astype(str)) == ["RERUN"] * 3 and int(tasks["calls_executed"].sum()) == 2
    assert MADE == []                                             # counted as made, never made


def test_a_recorded_failure_the_body_does_not_get_past_fails_predict_as_the_executor() -> None:
    log, marker = _job(_agent(broken))                            # production died in WA's first task
    assert int(log.records["calls_failed"].sum()) == 1
    for agent in (None, _agent(broken)):                          # read back from the log, and the job's own code
        pred = ai.predict(log, markers=[marker], agent=agent)
        executor = ai.ReplayExecutor(log, markers=[marker], agent=agent)
        executor.run()
        lookups = executor.steps[executor.steps["kind"] == "lookup"]
        assert by_state_key(pred.tasks) == by_state_key(lookups)
        assert list(pred.tasks["outcome"].astype(str)) == ["REUSE", "RESUME"]   # the second WA is never sent
        assert pred.crashed and executor.failure is not None


def test_a_body_that_catches_a_recorded_failure_goes_on_in_predict_as_in_the_executor() -> None:
    log, marker = _job(_agent(broken))
    agent = _agent(broken, catch=True)                            # new code catches the failure and goes on
    pred = ai.predict(log, markers=[marker], agent=agent)
    executor = ai.ReplayExecutor(log, markers=[marker], agent=agent)
    executor.run()
    lookups = executor.steps[executor.steps["kind"] == "lookup"]
    assert by_state_key(pred.tasks) == by_state_key(lookups)
    assert list(pred.tasks["outcome"].astype(str)) == ["REUSE", "RESUME", "RERUN"]
    assert not pred.crashed and executor.failure is None


def test_a_declared_failure_reaches_the_body_in_predict_as_in_the_executor() -> None:
    """A case file's agent declares its calls (a result or a failure): ``predict`` makes them, so a declared failure
    the body does not catch fails the predicted job where the executor's does."""
    from agent_inspect.agents import ActionDecl, Behaviour, Call, DeclarativeAgent, DeclaredCalls, Emit

    actions = [ActionDecl("IA", ("_input_event",)), ActionDecl("WA", ("WorkEvent",))]
    agent = DeclarativeAgent(actions, {
        "IA": [Behaviour((Emit("WorkEvent", {"n": 1}), Emit("WorkEvent", {"n": 2})))],
        "WA": [Behaviour((Call("m.fetch", "d", raises="ValueError"), Emit("_output_event", {"done": True})))]})
    assert isinstance(agent, DeclaredCalls) and not isinstance(_agent(tool), DeclaredCalls)
    job = ReplayExecutor(agent=agent, plan={"inputs": [("k", "A")]}, key_format="K1.5", seed=3)
    job.run()
    log = job.to_log()                                              # production died in WA's first task
    pred = ai.predict(log, agent=agent, markers=[])                 # a fresh start: WA fails again
    executor = ai.ReplayExecutor(log, agent=agent, markers=[])
    executor.run()
    assert by_state_key(pred.tasks) == by_state_key(executor.steps[executor.steps["kind"] == "lookup"])
    assert list(pred.tasks["outcome"].astype(str)) == ["RERUN", "RERUN"]
    assert pred.crashed and executor.failure is not None


def test_a_body_that_fails_on_a_result_predict_does_not_give_it_says_so() -> None:
    """``predict`` gives a body of the agent's own code no call results (``None``, payloads stay inert): a body
    that reads one fails there, and the warning says the failure may be ``predict``'s, not the job's."""
    agent = PythonAgent()

    @agent.action("IA", listens=["_input_event"])
    def ia(event: Any, ctx: Any) -> None:
        answer = ctx.durable_execute(tool)
        ctx.send_event("_output_event", {"answer": answer.upper()})   # None.upper() under predict

    log, _ = _job(agent)
    pred = ai.predict(log, agent=agent, markers=[])
    assert pred.crashed
    [warning] = [w for w in pred.warnings if w.startswith("the replayed job fails")]
    assert "AttributeError" in warning and "may be predict's failure, not the job's" in warning
    executor = ai.ReplayExecutor(log, agent=agent, markers=[], policies={"calls": "stub", "stubs": {"*": "ok"}})
    executor.run()
    assert executor.failure is None


def test_the_scan_flags_the_key_whose_body_crashes_the_job() -> None:
    """A body failing on a re-raised recorded failure crashes the job with no FAIL lookup: the key frame's
    ``<rule>_crashed`` still names the key (it looked for a FAIL row only)."""
    from agent_inspect.fleet import key_frame

    log, marker = _job(_agent(broken))
    pred = ai.predict(log, markers=[marker])
    assert pred.crashed and "FAIL" not in set(pred.tasks["outcome"].astype(str))
    keys = key_frame(log, rules=("original",), markers=marker).set_index("business_key")
    assert bool(keys.loc["k", "original_crashed"]) and int(keys.loc["k", "original_resumed"]) == 1
