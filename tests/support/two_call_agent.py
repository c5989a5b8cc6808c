"""The small agent the refresh-row tests restore: one input action, then a work action with two durable calls.

``CALLS`` records every durable call that really ran (clear it before a run): what a restore repeated.
"""

from __future__ import annotations

from agent_inspect.agents._python import PythonAgent

CALLS: list[str] = []


def multiply(x: int) -> int:
    CALLS.append(f"multiply({x})")
    return 6 * x


def add(x: int) -> int:
    CALLS.append(f"add({x})")
    return x + 1


def two_call_agent() -> PythonAgent:
    agent = PythonAgent()

    @agent.action("IA", listens=["_input_event"])
    def ia(event, ctx):
        ctx.send_event("WorkEvent", {"x": int(event.attributes["input"])})

    @agent.action("WA", listens=["WorkEvent"])
    def wa(event, ctx):
        y = ctx.durable_execute(multiply, event.attributes["x"])
        ctx.send_event("_output_event", {"output": ctx.durable_execute(add, y)})

    return agent
