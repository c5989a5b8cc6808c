"""``counters_for`` a key the replay cannot have is an error with close matches, as a breakpoint's key is (it
counted zeros, which reads as "nothing happened at that key"); the counters count the NOT-DISPATCHED records."""

from __future__ import annotations

import pytest

import agent_inspect as ai
from agent_inspect.executor import Counters


@pytest.fixture(scope="module")
def production() -> ai.ReplayExecutor:
    log = ai.load(ai.samples.path("production"))
    ex = ai.ReplayExecutor(log, markers=ai.samples.markers("production"))
    ex.run()
    return ex


def test_counters_for_an_unknown_key_names_the_closest_keys(production: ai.ReplayExecutor) -> None:
    with pytest.raises(ai.ReplayError, match=r"counters_for key 'user-00019' is not a key of the log or the plan.*"
                                             r"did you mean 'user-0019'"):
        production.counters_for("user-00019")


def test_a_key_of_the_log_with_no_step_still_counts_zeros() -> None:
    log = ai.load(ai.samples.path("production"))
    ex = ai.ReplayExecutor(log, markers=ai.samples.markers("production"))
    assert ex.counters_for("user-0019") == Counters()      # nothing ran yet: zeros, no error


def test_the_counters_count_the_records_predict_lists_as_not_dispatched(production: ai.ReplayExecutor) -> None:
    log = ai.load(ai.samples.path("production"))
    prediction = ai.predict(log, markers=ai.samples.markers("production"))
    listed = int((prediction.tasks["outcome"] == "NOT-DISPATCHED").sum())
    assert production.counters.not_dispatched == listed == 10
    assert sum(production.counters_for(k).not_dispatched for k in log.keys()) == 10
