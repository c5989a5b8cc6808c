"""The executor's counters add up: every task it looked up was reused, resumed, re-run or failed its lookup."""

from __future__ import annotations

import pytest

import agent_inspect as ai


@pytest.mark.parametrize("name", ["P01", "N04", "production_v4", "S01"])
def test_tasks_are_reused_resumed_rerun_or_failed(name: str) -> None:
    log, markers = ai.load(ai.samples.path(name)), ai.samples.markers(name)
    executor = ai.ReplayExecutor(log, markers=markers)
    executor.run()
    c = executor.counters
    assert c.tasks == c.reused + c.resumed + c.rerun + c.failed, c
    prediction = ai.predict(log, markers=markers)
    assert c.failed == int((prediction.tasks["outcome"] == "FAIL").sum())
    if name == "P01":                           # the snapshot's strict key parser throws at the first lookup
        assert c.tasks == c.failed == 1
