"""ExecutorOptions and the StepOutcome enum."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from agent_inspect.agents._python import PythonAgent
from agent_inspect.executor import (
    Breakpoint,
    ExecutorOptions,
    ReplayExecutor,
    StepKind,
    StepOutcome,
)


def _agent() -> PythonAgent:
    agent = PythonAgent()

    @agent.action("IA", listens=["_input_event"])
    def ia(event, ctx):
        ctx.durable_execute(str.upper, event.attributes["input"])
        ctx.send_event("_output_event", {"output": event.attributes["input"]})

    return agent


def _run(ex: ReplayExecutor) -> list[tuple[str, str | None]]:
    ex.run()
    return [(s.kind.value, s.outcome) for s in ex.step_list]


def test_options_and_keywords_build_the_same_executor():
    agent, plan = _agent(), {"inputs": [("k", "a"), ("k", "b")]}
    by_keywords = ReplayExecutor(rule="fixed", agent=agent, plan=plan, key_format="K1.5", seed=3, policies={"calls": "execute"})
    opts = ExecutorOptions(agent=agent, plan=plan, key_format="K1.5", seed=3, policies={"calls": "execute"})
    by_options = ReplayExecutor(rule="fixed", options=opts)
    assert _run(by_keywords) == _run(by_options)
    assert by_keywords.steps.equals(by_options.steps)
    assert by_options.options == opts


def test_keywords_override_options():
    opts = ExecutorOptions(agent=_agent(), plan={"inputs": [("k", "a")]}, key_format="K1.5", seed=3, fail_after=1)
    ex = ReplayExecutor(options=opts, fail_after=None, breakpoints=[Breakpoint(kind="persist")])
    assert ex.options.fail_after == 1             # None is the default: it does not override
    assert ex.options.breakpoints == (Breakpoint(kind="persist"),)
    assert ex.run() is None and ex.failure == "simulated failure after step 1"
    stop = ReplayExecutor(options=dataclasses.replace(opts, fail_after=None), breakpoints=[Breakpoint(kind="persist")])
    assert stop.run().kind is StepKind.PERSIST
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.seed = 4  # type: ignore[misc]


def test_every_keyword_is_an_option_and_documented():
    params = set(inspect.signature(ReplayExecutor).parameters) - {"log", "rule", "options"}
    fields = {f.name for f in dataclasses.fields(ExecutorOptions)}
    assert params == fields
    doc = ExecutorOptions.__doc__ or ""
    assert all(f"``{name}``" in doc for name in fields)
    assert all(f"``{name}``" in (ReplayExecutor.__doc__ or "") for name in fields)


def test_step_outcomes_are_plain_text_in_frames():
    ex = ReplayExecutor(agent=_agent(), plan={"inputs": [("k", "a")]}, key_format="K1.5", seed=3,
                        policies={"calls": "execute"})
    ex.run()
    lookups = [s for s in ex.step_list if s.kind is StepKind.LOOKUP]
    assert lookups[0].outcome is StepOutcome.RERUN and lookups[0].outcome == "RERUN"
    assert {type(v) for v in ex.steps["outcome"]} == {str}
    assert {type(v) for v in ex.report().frame["outcome"]} == {str}
    assert f"{StepOutcome.HIT}" == str(StepOutcome.HIT) == "hit"
