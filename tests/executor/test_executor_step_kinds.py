"""An unknown step kind (a typo in ``run(until=...)`` or a Breakpoint's ``kind``) says which kinds there are,
and a Breakpoint says so when it is made, not at the first step ``run()`` takes."""

from __future__ import annotations

import pytest

import agent_inspect as ai
from agent_inspect._errors import ReplayError


@pytest.fixture(scope="module")
def executor() -> ai.ReplayExecutor:
    return ai.ReplayExecutor(ai.load(ai.samples.path("N04")), markers=ai.samples.markers("N04"))


def test_run_until_an_unknown_kind_names_the_kinds(executor: ai.ReplayExecutor) -> None:
    with pytest.raises(ReplayError, match=r"unknown step kind 'evictions'; use one of rebuild, lookup, eviction"):
        executor.run(until="evictions")


def test_a_breakpoint_of_an_unknown_kind_fails_when_made(executor: ai.ReplayExecutor) -> None:
    with pytest.raises(ReplayError, match="unknown step kind 'nope'"):
        executor.add_breakpoint(kind="nope")
    assert executor.breakpoints == []
    with pytest.raises(ReplayError, match="round-complete"):
        ai.executor.Breakpoint(kind="round_complete")


def test_known_kinds_as_text_or_enum_still_stop_there(executor: ai.ReplayExecutor) -> None:
    executor.reset()
    assert executor.run(until="eviction").kind is ai.executor.StepKind.EVICTION
    executor.reset()
    bp = executor.add_breakpoint(kind=ai.executor.StepKind.PERSIST)
    assert executor.run().kind is ai.executor.StepKind.PERSIST
    executor.breakpoints.remove(bp)


def test_steps_keep_a_seq_past_2_to_the_53(tmp_path) -> None:
    # a seq through float64 (a step without one made the column float) no longer cast back: TypeError on ex.steps
    from tests.support.huge_seq import BIG, n04_with_seq

    path = n04_with_seq(tmp_path)
    ex = ai.ReplayExecutor(ai.load(path))
    ex.run()
    assert ex.steps["seq"].dtype == "Int64" and set(ex.steps["seq"].dropna()) == {5, BIG}
    assert "executor run" in repr(ai.diff(ex, ai.load(path)))
