"""One engine, two drivers: on random multi-attempt histories the replay executor and the static
predictor (same Store and rules, independent dispatch loops) decide every task identically."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_inspect.agents._declarative import Behaviour, Call, DeclarativeAgent, Emit, SubagentCall
from agent_inspect.agents._protocol import ActionDecl
from agent_inspect.executor import KeyMaker, ReplayExecutor, StepKind, as_plan
from agent_inspect.recovery._plan import ReplayPlan
from agent_inspect.recovery._predict import predict

VALUES = ("A", "B", "C")


def agent() -> DeclarativeAgent:
    actions = [ActionDecl("IA", ("_input_event",), module="m", qualname="M.IA"),
               ActionDecl("IB", ("_input_event",), module="m", qualname="M.IB"),
               ActionDecl("WA", ("WorkEvent",), module="m", qualname="M.WA"),
               ActionDecl("P", ("_input_event",), module="m", qualname="M.P"),
               ActionDecl("CA", ("_input_event",), module="m", qualname="M.CA", scope="child")]
    behaviours = {
        "IA": [Behaviour((Emit("WorkEvent", {"x": v}),), "_input_event", {"input": v}) for v in VALUES],
        "IB": [Behaviour(())],
        "WA": [Behaviour((Call("m.ask", "d"),))],
        # a sub-agent call for input C only (§11): the child's output becomes P's call result
        "P": [Behaviour((SubagentCall("child", "s0", "s0-1", "_input_event", {"input": "c"}),),
                        "_input_event", {"input": "C"})],
        "CA": [Behaviour((Call("m.review", "r"), Emit("_output_event", {"output": "ok"})))],
    }
    return DeclarativeAgent(actions, behaviours)


inputs = st.lists(st.tuples(st.sampled_from(["k", "j"]), st.sampled_from(VALUES)), min_size=1, max_size=4)


@settings(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(first=inputs, second=inputs, fail_at=st.integers(min_value=2, max_value=60),
       rule=st.sampled_from(["original", "naive", "fixed", "lookup-only", "branch-aware"]))
def test_executor_and_predictor_agree(first, second, fail_at, rule):
    a = agent()
    ex1 = ReplayExecutor(agent=a, plan={"inputs": first}, key_format="K1.5", seed=11)
    ex1.step()
    marker = ex1.checkpoint()
    ex1.run(max_steps=fail_at)                     # the job dies here (or finishes)
    log = ex1.to_log()
    keys = KeyMaker(log, key_format="K1.5")
    base = as_plan({"inputs": second})
    plan = ReplayPlan(inputs=base.inputs, keys={k: keys.identity(k) for k, _ in second}, attempt=1)
    ex = ReplayExecutor(log, agent=a, plan=plan, markers=[marker], rule=rule, seed=12)
    ex.run()
    # dispatched tasks in order, then the cached records of replayed rounds no task looked up
    got = [(s.key, s.seq, s.action, s.outcome, s.state_key) for s in ex.step_list
           if s.kind in (StepKind.LOOKUP, StepKind.NOT_DISPATCHED)]
    t = predict(log, plan=plan, agent=a, rule=rule, markers=[marker]).tasks
    want = [(str(b), int(s), str(n), str(o), str(k)) for b, s, n, o, k in
            zip(t["business_key"], t["seq"], t["action"], t["outcome"], t["state_key"])]
    assert got == want
