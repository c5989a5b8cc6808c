"""Under K1.6/K2 steps carry the key's digest: a breakpoint or ``counters_for`` given the Flink key text reads it
as that digest (they never matched: ``run()`` ran to the end and ``counters_for`` counted nothing)."""

from __future__ import annotations

import agent_inspect as ai


def _k2_job() -> ai.ReplayExecutor:
    sample = ai.samples.scenario("N04")                       # its plan sends inputs of key text "k"
    return ai.ReplayExecutor(agent=sample.agent, plan=sample.plan, key_format="K2", seed=1)


def test_a_breakpoint_at_a_key_text_stops_on_a_digest_keyed_replay() -> None:
    ex = _k2_job()
    digest = ex._engine.keys.business_key("k")
    assert digest != "k"
    ex.add_breakpoint(key="k", kind="lookup")
    step = ex.run()
    assert step is not None and step.key == digest and step.kind is ai.executor.StepKind.LOOKUP
    ex.breakpoints.clear()
    ex.reset()
    step = ex.run(until=ai.executor.Breakpoint(key="k", kind="persist"))
    assert step is not None and step.kind is ai.executor.StepKind.PERSIST


def test_counters_for_a_key_text_count_its_digests_steps() -> None:
    ex = _k2_job()
    ex.run()
    assert ex.counters_for("k") == ex.counters_for(ex._engine.keys.business_key("k")) != ai.executor.Counters()
    assert ex.counters_for("k").tasks == ex.counters.tasks == 4


def test_a_business_key_still_matches_as_given() -> None:
    log = ai.load(ai.samples.path("production"))
    ex = ai.ReplayExecutor(log, markers=ai.samples.markers("production"))
    ex.add_breakpoint(key="user-0001", outcome="rerun")
    step = ex.run()
    assert step is not None and step.key == "user-0001"
