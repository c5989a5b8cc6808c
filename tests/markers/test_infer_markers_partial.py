"""Markers inferred from part of a job's log (one key, one partition): the candidates say the pauses they read
are not the job's, and their evidence reads right in the singular."""

from __future__ import annotations

import agent_inspect as ai

_PARTIAL = "holds only part of the job's writes"


def test_a_log_of_one_key_says_its_restarts_are_guesses() -> None:
    """A log loaded for one key read its idle gaps as restarts: "restore 4 (attempt 5)" of a job with 4 attempts,
    said nothing of it, and its best candidate predicted a restore that reused what the checkpoint re-ran."""
    log = ai.load(ai.samples.path("production"), business_keys=["user-0009"])
    cands = ai.infer_markers(log)
    for c in cands:
        if c.source != "fresh start":
            assert any(_PARTIAL in n and "business_keys=['user-0009']" in n for n in c.notes), c
    whole = ai.load(ai.samples.path("production"))
    assert not any(_PARTIAL in n for c in ai.infer_markers(whole) for n in c.notes)


def test_a_log_of_one_partition_says_so() -> None:
    full = ai.load(ai.samples.path("production"))
    part = full.select(full.records["partition"] == 3)
    notes = [n for c in ai.infer_markers(part) for n in c.notes if _PARTIAL in n]
    assert notes and "1 of 4 partitions" in notes[0]


def test_one_attempt_run_again_reads_in_the_singular() -> None:
    """ "it ran the 1 attempt before it again from their first record" """
    log = ai.load(ai.samples.path("production"), business_keys=["user-0034"])
    trace = ai.load_trace("sample_logs/production.trace.log")
    evidence = " ".join(c.evidence for c in ai.infer_markers(log, trace=trace))
    assert "the 1 attempt" not in evidence and "their first record" not in evidence
    assert "it ran the attempt before it again from its first record" in evidence
