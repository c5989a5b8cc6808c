"""A Python agent whose action names, event types, memory paths and function ids carry script probes."""

from __future__ import annotations

from typing import Any

from _widget_logs import IMG, SCRIPT

from agent_inspect.agents import PythonAgent
from agent_inspect.executor import ReplayExecutor, StepKind

CALLS: list[str] = []


def ask(question: str) -> str:
    CALLS.append(question)
    return question.upper()


ask.__qualname__ = f"ask{IMG}"


def probe_agent() -> PythonAgent:
    agent = PythonAgent()

    @agent.action(f"plan{SCRIPT}", listens=["_input_event"])
    def plan(event: Any, ctx: Any) -> None:
        ctx.short_term.set(f"seen{IMG}", event.attributes["input"])
        ctx.send_event(f"Work{IMG}", {"x": event.attributes["input"]})

    @agent.action("act", listens=[f"Work{IMG}"])
    def act(event: Any, ctx: Any) -> None:
        answer = ctx.durable_execute(ask, event.attributes["x"])
        ctx.sensory.set(f"scratch{SCRIPT}", answer)
        ctx.send_event("_output_event", {"output": answer})

    return agent


INPUTS = [(f"k{IMG}", f"a {SCRIPT}"), (f"k{IMG}", "b"), ("other", "c")]


def recovery_executor(rule: str = "fixed") -> ReplayExecutor:
    """Attempt 1 runs all inputs and fails after the last durable call; the executor replays attempt 2."""
    agent = probe_agent()
    first = ReplayExecutor(agent=agent, plan={"inputs": INPUTS}, key_format="K1.5", seed=1)
    first.step()                                          # the (empty) rebuild
    marker = first.checkpoint()
    calls = [0]

    def last_call(step: Any) -> bool:
        if step.kind is StepKind.PERSIST and (step.outcome or "").startswith("call"):
            calls[0] += 1
        return calls[0] == len(INPUTS)

    first.run(until=last_call)
    return ReplayExecutor(first.to_log(), agent=agent, plan={"inputs": INPUTS}, markers=[marker], rule=rule, seed=2)


def subagent_log() -> Any:
    """A production attempt with a sub-agent call that fails after the child of the second input completed."""
    child = PythonAgent()

    @child.action(f"review{IMG}", listens=["_input_event"])
    def review(event: Any, ctx: Any) -> None:
        ctx.send_event("_output_event", {"output": ctx.durable_execute(ask, event.attributes["input"])})

    agent = PythonAgent()

    @agent.action("caller", listens=["_input_event"])
    def caller(event: Any, ctx: Any) -> None:
        result = ctx.call_subagent(f"reviewer{SCRIPT}", "_input_event", {"input": f"check {event.attributes['input']}"})
        ctx.send_event("_output_event", {"output": result})

    agent.subagent(f"reviewer{SCRIPT}", child)
    ex = ReplayExecutor(agent=agent, plan={"inputs": [(f"k{IMG}", "a"), (f"k{IMG}", "b")]}, key_format="K1.5", seed=1)
    ex.run(until=lambda s: s.kind is StepKind.PERSIST and s.action == f"review{IMG}" and s.outcome == "completed"
           and s.seq == 1)
    return ex.to_log()
