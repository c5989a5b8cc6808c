"""``simulate(rows=False)``: the same engine run, kept as each task's outcome instead of its row."""

from __future__ import annotations

import pytest

import agent_inspect as ai
from agent_inspect.agents import AsRecordedAgent
from agent_inspect.recovery import Recovery, refresh_positions, simulate


@pytest.mark.parametrize("name", ["production", "production_v4", "G01", "S01"])
@pytest.mark.parametrize("rule", ["original", "fixed"])
def test_outcomes_are_the_rows_outcomes_and_the_ledger_is_the_same(name: str, rule: str) -> None:
    log = ai.load(ai.samples.path(name))
    settings = Recovery.for_log(log, markers=ai.samples.markers(name), rule=rule)
    plan, agent = settings.replay_plan(log), AsRecordedAgent.of(log)
    runs = [simulate(plan, agent, settings.rebuild(log), log=log, call_matching=settings.call_matching,
                     runtime=settings.model, rows=rows) for rows in (True, False)]
    full, counted = runs
    # every task, NOT-DISPATCHED ones included (a scan's counts add up to predict's tasks)
    assert counted.rows == [] and len(counted.outcomes) == len(full.rows) > 0
    assert [tuple(o) for o in counted.outcomes] == [(r["key"], r["outcome"], r["seq"], r["entry_pos"])
                                                    for r in full.rows]
    assert counted.ledger == full.ledger and counted.call_names == full.call_names
    assert counted.crashed == full.crashed


def test_refresh_rows_are_found_once_per_log_and_only_for_runtimes_that_write_them() -> None:
    log = ai.load(ai.samples.path("production_v4"))
    found = refresh_positions(log, "main")
    assert found and refresh_positions(log, "main") is found      # the scan is kept with the log
    assert refresh_positions(log, "0.3") == frozenset()            # 0.3 writes no refresh rows
    assert refresh_positions(log.records, "main") == frozenset()   # a records frame alone has no bytes
