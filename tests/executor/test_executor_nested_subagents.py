"""Nested sub-agents: a child that calls its own sub-agent (spec §11.4 point 4, §11.5 nesting)."""

from __future__ import annotations

from agent_inspect.agents import PythonAgent
from agent_inspect.executor import ReplayExecutor, StepKind


def nested_agent() -> PythonAgent:
    checker = PythonAgent()

    @checker.action("check", listens=["_input_event"])
    def check(event, ctx):
        ctx.send_event("_output_event", {"output": "ok:" + event.attributes["input"]})

    reviewer = PythonAgent()

    @reviewer.action("review", listens=["_input_event"])
    def review(event, ctx):
        verdict = ctx.call_subagent("checker", "_input_event", {"input": event.attributes["input"]})
        ctx.send_event("_output_event", {"output": verdict})

    reviewer.subagent("checker", checker)

    root = PythonAgent()

    @root.action("caller", listens=["_input_event"])
    def caller(event, ctx):
        result = ctx.call_subagent("reviewer", "_input_event", {"input": event.attributes["input"]})
        ctx.send_event("_output_event", {"output": result})

    root.subagent("reviewer", reviewer)
    return root


def test_grandchild_runs_on_its_own_call_and_returns_its_output():
    ex = ReplayExecutor(agent=nested_agent(), plan={"inputs": [("k", "diff")]}, key_format="K1.5", seed=3)
    ex.run()
    assert ex.done and ex.failure is None
    ran = [(s.action, s.scope) for s in ex.step_list if s.kind is StepKind.RERUN and s.call_index is None]
    assert ran == [("caller", None), ("review", "reviewer"), ("check", "checker")]
    log = ex.to_log()
    scopes = {}
    for pos in range(len(log.records)):
        value = log.value(pos)
        scope = log.records["subagent_scope"].iloc[pos]
        if value.completed and isinstance(scope, str):
            scopes[scope] = value.task_event
    # the grandchild's task event is the inner call's bootstrap, not the outer call's
    assert scopes["checker"].id != scopes["reviewer"].id
    assert scopes["checker"].attrs()["targetScope"] == "checker"
    outer = [o for o in ex.outputs["attributes"]]
    assert outer == [{"output": [{"output": [{"output": "ok:diff"}]}]}]
