"""A diff names actions the same way on both sides: a log side (its records carry action UUIDs) against a
prediction (its tasks carry names) showed ``f6aaf3fe-…`` beside ``triage`` in the same pair."""

from __future__ import annotations

import agent_inspect as ai


def test_a_log_against_its_prediction_names_each_action_alike() -> None:
    log = ai.load(ai.samples.path("production"))
    prediction = ai.predict(log, markers=ai.samples.markers("production"))
    pairs = ai.diff(log, prediction).pairs
    both = pairs[pairs["action_a"].notna() & pairs["action_b"].notna()]
    assert len(both) and (both["action_a"] == both["action_b"]).all()
    assert not any(ai.history.is_uuid(a) for a in pairs["action_a"].dropna())
    assert set(pairs["action_a"].dropna()) <= set(prediction.tasks["action"]) | {"review", "check_policy"}


def test_two_logs_keep_their_action_uuids() -> None:
    log = ai.load(ai.samples.path("production"))
    pairs = ai.diff(ai.diffing.attempt(log, "user-0011", 1), ai.diffing.attempt(log, "user-0011", 2)).pairs
    assert all(ai.history.is_uuid(a) for a in pairs["action_a"].dropna())
