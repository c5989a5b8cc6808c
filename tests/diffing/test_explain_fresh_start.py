"""``explain`` of a fresh start (``markers=[]``: no checkpoint restored) says the cache started empty, not that
the key's records lie before the recovery markers (there are none; spec §6.5 step 1)."""

from __future__ import annotations

import pytest

import agent_inspect as ai


@pytest.mark.parametrize("markers", [[], {}])
def test_a_fresh_start_rerun_says_no_checkpoint_was_restored(markers: object) -> None:
    log = ai.load(ai.samples.path("production"))
    why = ai.explain(log, "user-0019", 2, "triage", markers=markers)
    assert why.outcome == "RERUN"
    story = why.story()
    assert "a fresh start: no checkpoint was restored, so the cache started empty" in story
    assert "before the recovery markers" not in story
    assert why.cause.kind == "window" and why.cause.positions

