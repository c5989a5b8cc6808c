"""Loose ends of audit 40: ``fail_after`` takes a count of steps, as ``run(max_steps=)`` does."""

from __future__ import annotations

import numpy as np
import pytest

import agent_inspect as ai
from agent_inspect import ReplayError


def _n04(**options: object) -> ai.ReplayExecutor:
    log = ai.load(ai.samples.path("N04"))
    return ai.ReplayExecutor(log, markers=ai.samples.markers("N04"), seed=1, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_fail_after_must_be_a_count(bad: object) -> None:
    with pytest.raises(ReplayError, match=r"^fail_after takes a number of steps >= 0 .* or None \(never fails\), got "):
        _n04(fail_after=bad)
    ex = _n04()
    with pytest.raises(ReplayError, match=r"^fail_after takes a number of steps >= 0"):
        ex.fail_after(bad)  # type: ignore[arg-type]
    ex.run()
    assert ex.failure is None                     # the bad count did not stick: the job ran to its end


def test_fail_after_takes_any_integral_count() -> None:
    ex = _n04(fail_after=np.int64(2))
    ex.run()
    assert len(ex.step_list) == 2 and ex.failure is not None and "after step 2" in str(ex.failure)
    again = _n04()
    again.fail_after(0)                           # 0: the job dies before its first step
    again.run()
    assert again.step_list == () and again.failure is not None
