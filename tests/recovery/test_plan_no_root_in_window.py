"""A rebuild window that holds retained rounds (0.4+ refresh rows) but no root record: the inferred plan replays
the retained rounds. Selecting the roots not held with an empty list selected no columns of the empty roots frame,
so ``predict`` raised ``KeyError: 'business_key'`` (found by the randomized comparison of the verbs)."""

from __future__ import annotations

import agent_inspect as ai
from tests.support.outcomes import by_state_key


def test_a_window_of_refresh_rows_alone_is_predicted_as_the_executor_runs_it() -> None:
    h = ai.checker.generate_history(676, keys=1, rounds=4, attempts=3)   # runtime main; the marker at its last row
    log, markers = h.log, list(h.markers)
    window = log.records[log.records["offset"] >= markers[0][0]]
    assert not window["is_root"].fillna(False).any()                     # no root record after the marker
    pred = ai.predict(log, markers=markers)
    executor = ai.ReplayExecutor(log, markers=markers)
    executor.run()
    assert by_state_key(pred.tasks) == by_state_key(executor.steps[executor.steps["kind"] == "lookup"])
