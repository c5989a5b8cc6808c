"""A first divergence at a task's outcome says why each side decided as it did: two predictions' diff read only
``"RERUN" against "REUSE"``, though each prediction knows its reason (here: the upstream rule's lookup of an
earlier round evicted the record)."""

from __future__ import annotations

import agent_inspect as ai


def test_an_outcome_divergence_carries_each_predictions_reason() -> None:
    log = ai.load(ai.samples.path("production"))
    markers = ai.samples.markers("production")
    d = ai.diff(ai.predict(log, markers=markers, rule="original"), ai.predict(log, markers=markers, rule="fixed"))
    first = d.first_divergence("user-0001")
    assert first is not None and first["where"] == "outcome"
    assert first["why"].startswith('the recovery decides differently for this task: "RERUN" against "REUSE" (a: ')
    assert "the lookup of triage (user-0001, seq 1) evicted it" in first["why"]


def test_a_diff_with_only_one_side_executing_still_reads() -> None:
    log = ai.load(ai.samples.path("production"))
    d = ai.diff(log, ai.predict(log, markers=ai.samples.markers("production")))
    assert len(d.first_divergences) and d.first_divergences["why"].map(bool).all()
