"""Loose ends a new user trips over: ``run(max_steps=0)``, breakpoints at unknown keys, ``memory`` by key text,
``ai.inspect`` of a safety report, the ``diff`` policy with an agent that replays no memory."""

from __future__ import annotations

import pytest

import agent_inspect as ai
from agent_inspect import ReplayError


def _n04() -> ai.ReplayExecutor:
    log = ai.load(ai.samples.path("N04"))
    return ai.ReplayExecutor(log, markers=ai.samples.markers("N04"), seed=1)


def test_max_steps_zero_runs_no_step() -> None:
    ex = _n04()
    assert ex.run(max_steps=0) is None and ex.step_list == ()
    ex.step()
    ex.step()
    assert ex.run(max_steps=0) is ex.current and len(ex.step_list) == 2
    assert ex.run(max_steps=1) is ex.current and len(ex.step_list) == 3
    import numpy as np

    assert ex.run(max_steps=np.int64(2)) is ex.current and len(ex.step_list) == 5   # a numpy count will do


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_max_steps_must_be_a_count(bad: object) -> None:
    ex = _n04()
    with pytest.raises(ReplayError, match=r"max_steps=.*>= 0.*None"):
        ex.run(max_steps=bad)  # type: ignore[arg-type]
    assert ex.step_list == ()


def _production() -> ai.ReplayExecutor:
    log = ai.load(ai.samples.path("production"))
    return ai.ReplayExecutor(log, markers=ai.samples.markers("production"), seed=1)


def test_a_breakpoint_at_a_key_the_log_lacks_names_the_closest_keys() -> None:
    ex = _production()
    with pytest.raises(ReplayError, match=r"'user-00001'.*never stop.*did you mean 'user-0001'"):
        ex.add_breakpoint(key="user-00001")
    assert ex.breakpoints == []
    with pytest.raises(ReplayError, match="user-00001"):
        ex.run(until=ai.executor.Breakpoint(key="user-00001"))
    ex.breakpoints.append(ai.executor.Breakpoint(key="nobody", kind="lookup"))
    with pytest.raises(ReplayError, match="'nobody'"):
        ex.run()
    ex.breakpoints.clear()
    with pytest.raises(ReplayError, match="'user-00001'"):
        ai.ReplayExecutor(ai.load(ai.samples.path("N04")), markers=ai.samples.markers("N04"),
                          breakpoints=[ai.executor.Breakpoint(key="user-00001")])


def test_a_breakpoint_at_a_known_key_is_kept() -> None:
    ex = _production()
    ex.add_breakpoint(key="user-0001", outcome="rerun")
    step = ex.run()
    assert step is not None and step.key == "user-0001"
    k2 = ai.ReplayExecutor(ai.load(ai.samples.path("production_v4")), markers=ai.samples.markers("production_v4"))
    k2.add_breakpoint(key="user-0001", kind="lookup")    # a digest-keyed log: the key text is the digest's
    with pytest.raises(ReplayError, match="'user-0099'"):
        k2.add_breakpoint(key="user-0099")


def test_a_fresh_job_checks_breakpoints_against_its_plan() -> None:
    sample = ai.samples.scenario("N04")
    ex = ai.ReplayExecutor(agent=sample.agent, plan=sample.plan, key_format="K2", seed=1)
    ex.add_breakpoint(key="k")
    with pytest.raises(ReplayError, match=r"'kk' is not a key of the plan.*did you mean 'k'"):
        ex.add_breakpoint(key="kk")


def test_memory_is_found_by_a_key_text_on_a_digest_keyed_log() -> None:
    log = ai.load(ai.samples.path("subagents_v4"))            # K2: its one key (text "k") named by digest
    ex = ai.ReplayExecutor(log, markers=ai.samples.markers("subagents_v4"), seed=1)
    ex.run()
    (digest,) = log.keys()
    assert list(ex.memory) == [digest] and len(ex.memory) == 1
    assert ex.memory["k"] == ex.memory[digest] and "k" in ex.memory
    assert ex.memory.get("k") is not None and "other" not in ex.memory
    with pytest.raises(KeyError):
        ex.memory["other"]
    text_keyed = _production()
    text_keyed.run(max_steps=40)
    assert text_keyed.memory["user-0029"] == dict(text_keyed.memory)["user-0029"]


def test_diff_with_the_as_recorded_agent_reports_no_memory_difference_it_cannot_replay() -> None:
    log = ai.load(ai.samples.path("production"))
    ex = ai.ReplayExecutor(log, markers=ai.samples.markers("production"), seed=1,
                           policies={"actions": {"chat": "diff"}})
    ex.run()
    shadows = [s for s in ex.step_list if s.detail.get("shadow")]
    assert len(shadows) == 61
    assert [str(s.outcome) for s in shadows].count("diff-changed") == 0        # 38 before: "memory paths differ"
    unreplayed = [s for s in shadows if s.detail["memory_not_replayed"]]
    assert len(unreplayed) == 38
    assert all("memory not replayed" in (s.change or "") and "differ" not in (s.change or "") for s in unreplayed)
    frame = ex.report().frame
    diffs = frame["diff"].dropna().value_counts().to_dict()
    assert diffs == {"equal (memory not replayed)": 38, "equal": 23}
    assert not frame["risks"].str.contains("diff: replay disagrees").any()


def _memory_agent(*, writes: bool) -> ai.agents.PythonAgent:
    agent = ai.agents.PythonAgent()

    @agent.action("IA", listens=["_input_event"], module=__name__, qualname="memory_agent.<locals>.ia")
    def ia(event, ctx):  # type: ignore[no-untyped-def]
        if writes:
            ctx.short_term.set("seen", event.attributes["input"])
        ctx.send_event("_output_event", {"output": event.attributes["input"]})

    return agent


def test_diff_with_an_agent_that_writes_memory_still_reports_a_real_memory_difference() -> None:
    first = ai.ReplayExecutor(agent=_memory_agent(writes=True), plan={"inputs": [("k", "a")]}, key_format="K1.5",
                              seed=1)
    first.step()
    marker = first.checkpoint()
    first.run()
    ex = ai.ReplayExecutor(first.to_log(), agent=_memory_agent(writes=False), plan={"inputs": [("k", "a")]},
                           markers=[marker], policies={"default_action": "diff"})
    ex.run()
    (shadow,) = [s for s in ex.step_list if s.detail.get("shadow")]
    assert str(shadow.outcome) == "diff-changed" and "short-term memory paths differ" in (shadow.change or "")
    assert shadow.detail["memory_not_replayed"] == ()
    assert ex.report().frame["safe"].tolist() == [False]


def test_the_unused_public_names_are_gone() -> None:
    import inspect

    import agent_inspect.recovery.engine as engine
    assert not {"with_value", "REPLAYED_CALLS"} & set(engine.__all__)
    assert not hasattr(engine, "with_value") and not hasattr(engine, "REPLAYED_CALLS")
    assert not hasattr(engine.IdSource, "reset")
    assert list(inspect.signature(ai.recovery.agent_event).parameters) == ["ev"]
    assert list(inspect.signature(ai.executor.as_plan).parameters) == ["plan"]
    with pytest.raises(ReplayError, match=r"not a replay plan: NoneType.*ReplayPlan\.from_log"):
        ai.executor.as_plan(None)  # type: ignore[arg-type]
