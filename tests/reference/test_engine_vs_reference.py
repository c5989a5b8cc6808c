"""The recovery engine against the reference model (tests/reference/model.py), which shares none of its code.

On every case file the model covers, and on random multi-attempt histories written by the executor's
production mode, ``predict`` and the replay executor's production mode must decide every dispatched task as
the model does (outcome, and how many cached records its lookups removed).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_inspect.agents._declarative import Behaviour, Call, DeclarativeAgent, Emit
from agent_inspect.agents._protocol import ActionDecl
from agent_inspect.cases import build_case, load_cases
from agent_inspect.executor import KeyMaker, ReplayExecutor, StepKind, as_plan
from agent_inspect.recovery import ReplayPlan, predict
from tests.reference import model

ROOT = Path(__file__).resolve().parents[2]
CASES = [c for c in load_cases(ROOT / "cases") if c.log]


def _engine(log, plan, agent, rule, markers) -> list[model.TaskOutcome]:
    tasks = predict(log, plan=plan, agent=agent, rule=rule, markers=markers).tasks
    tasks = tasks[tasks["outcome"] != "NOT-DISPATCHED"]
    return [model.TaskOutcome(str(k), int(s), str(a), str(o), int(r)) for k, s, a, o, r in
            zip(tasks["business_key"], tasks["seq"], tasks["action"], tasks["outcome"], tasks["removed"])]


def _covered() -> list[tuple[object, str]]:
    runs = []
    for case in CASES:
        built = build_case(case)
        for rule in model.RULES:
            try:
                model.predict(built.log, built.plan, built.agent, rule, list(built.markers))
            except model.Unsupported:
                continue
            runs.append((case, rule))
    return runs


COVERED = _covered()


def test_the_model_covers_a_real_part_of_the_case_matrix():
    assert len({c.id for c, _ in COVERED}) >= 15, sorted({c.id for c, _ in COVERED})


@pytest.mark.parametrize(("case", "rule"), COVERED, ids=[f"{c.id}-{r}" for c, r in COVERED])
def test_case_engine_agrees_with_the_reference(case, rule):
    built = build_case(case)
    want = model.predict(built.log, built.plan, built.agent, rule, list(built.markers))
    assert _engine(built.log, built.plan, built.agent, rule, list(built.markers)) == want


VALUES = ("A", "B", "C")


def _agent() -> DeclarativeAgent:
    actions = [ActionDecl("IA", ("_input_event",), module="m", qualname="M.IA"),
               ActionDecl("IB", ("_input_event",), module="m", qualname="M.IB"),
               ActionDecl("WA", ("WorkEvent",), module="m", qualname="M.WA")]
    behaviours = {
        "IA": [Behaviour((Emit("WorkEvent", {"x": v}),), "_input_event", {"input": v}) for v in VALUES],
        "IB": [Behaviour((Emit("_output_event", {"seen": True}),))],
        "WA": [Behaviour((Call("m.ask", "d"), Emit("_output_event", {"done": True})))],
    }
    return DeclarativeAgent(actions, behaviours)


inputs = st.lists(st.tuples(st.sampled_from(["k", "j"]), st.sampled_from(VALUES)), min_size=1, max_size=4)


@settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(first=inputs, second=inputs, fail_at=st.integers(min_value=2, max_value=60),
       checkpoint_at=st.integers(min_value=1, max_value=20), rule=st.sampled_from(model.RULES))
def test_random_recoveries_engine_and_executor_agree_with_the_reference(first, second, fail_at, checkpoint_at, rule):
    agent = _agent()
    job = ReplayExecutor(agent=agent, plan={"inputs": first}, key_format="K1.5", seed=11)
    job.run(max_steps=checkpoint_at)
    marker = job.checkpoint()
    job.run(max_steps=fail_at)                     # the job dies here (or finishes)
    log = job.to_log()
    keys = KeyMaker(log, key_format="K1.5")
    plan = ReplayPlan(inputs=as_plan({"inputs": second}).inputs,
                      keys={k: keys.identity(k) for k, _ in second}, attempt=1)
    want = model.predict(log, plan, agent, rule, [marker])
    assert _engine(log, plan, agent, rule, [marker]) == want
    replay = ReplayExecutor(log, agent=agent, plan=plan, markers=[marker], rule=rule, seed=12)
    replay.run()
    lookups = [(s.key, s.seq, s.action, str(s.outcome)) for s in replay.step_list if s.kind is StepKind.LOOKUP]
    assert lookups == [(t.business_key, t.seq, t.action, t.outcome) for t in want]
