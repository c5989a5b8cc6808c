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


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_max_steps_must_be_a_count(bad: object) -> None:
    ex = _n04()
    with pytest.raises(ReplayError, match=r"max_steps=.*>= 0.*None"):
        ex.run(max_steps=bad)  # type: ignore[arg-type]
    assert ex.step_list == ()
