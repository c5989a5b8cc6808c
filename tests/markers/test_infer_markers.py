"""Inferred recovery markers (issue 22 item 3): candidates from the log and the trace, checked against the samples'
true markers by what matters, the restore ``predict`` makes of them."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import agent_inspect as ai
from agent_inspect.markers import MARKER_SOURCES, MarkerCandidate, infer_markers
from agent_inspect.recovery import predict

#: every sample that ships its restore's markers
SAMPLES = ["production", "production_k1", "production_v4", "G01", "G02", "G03", "N04", "N07", "P01", "S01", "S05",
           "subagents", "subagents_v4"]


def _restore(log: ai.ActionStateLog, markers: list[dict[int, int]]) -> list[tuple[object, ...]]:
    t = predict(log, markers=markers).tasks
    return list(zip(t["key"], t["seq"], t["action"], t["outcome"]))


def _shape_ok(cands: list[MarkerCandidate]) -> None:
    assert cands, "always at least the fallbacks"
    assert [c.confidence for c in cands] == sorted((c.confidence for c in cands), reverse=True)
    for c in cands:
        assert c.source in MARKER_SOURCES and 0.0 <= c.confidence <= 1.0 and c.evidence
        assert all(isinstance(p, int) and isinstance(o, int) for m in c.markers for p, o in m.items())
        json.dumps(c.to_dict())
        assert c.recovery_markers() == c.markers and c.source in c.provenance
    assert len({json.dumps(c.to_dict()["markers"]) for c in cands}) == len(cands), "each window is listed once"


@pytest.mark.parametrize("name", SAMPLES)
def test_with_its_trace_the_first_candidate_predicts_the_true_restore(name: str) -> None:
    log = ai.load(ai.samples.path(name))
    trace = ai.load_trace(ai.samples.path(name, "trace"))
    cands = infer_markers(log, trace)
    _shape_ok(cands)
    assert _restore(log, cands[0].markers) == _restore(log, ai.samples.markers(name))


#: samples whose restore reused work the log cannot show (tests below say which)
LOG_ALONE_LIMITS = ("production", "production_k1")


@pytest.mark.parametrize("name", [n for n in SAMPLES if n not in LOG_ALONE_LIMITS])
def test_from_the_log_alone_the_first_candidate_predicts_the_true_restore(name: str) -> None:
    log = ai.load(ai.samples.path(name))
    cands = infer_markers(log)
    _shape_ok(cands)
    assert _restore(log, cands[0].markers) == _restore(log, ai.samples.markers(name))


def test_production_from_the_log_alone_misses_only_the_round_the_restore_reused() -> None:
    """The log cannot show a round the restore reused (it writes nothing, spec §9.3): production's restore reused
    round (user-0034, 3), the first input after its checkpoint, so the log places the checkpoint just after it.
    The trace shows that input replayed, and with it the first candidate is exact (test above)."""
    log = ai.load(ai.samples.path("production"))
    best = infer_markers(log)[0]
    true = ai.samples.markers("production")[0]
    assert best.source == "first record a restore re-wrote" and best.restore == 3
    boundary = next(c for c in infer_markers(log) if c.source == "attempt boundary").markers[0]
    assert all(true[p] <= best.markers[0][p] <= boundary[p] for p in true), "an upper bound of the true window"
    differ = set(_restore(log, best.markers)) ^ set(_restore(log, [true]))
    # and user-0009's round 4, whose tool_call the checkpoint held in flight: the restore reused it (no write)
    assert differ and {row[0] for row in differ} == {"user-0034", "user-0009"}
    assert ("user-0034", 3, "chat", "REUSE") in differ and ("user-0009", 4, "tool_call", "REUSE") in differ


def test_production_k1_from_the_log_alone_misses_only_the_in_flight_task_the_restore_reused() -> None:
    """The checkpoint held user-0008's round-2 tool_call in flight; the restore reused it and wrote nothing, so the
    log places the checkpoint after its records, and the restore inferred from it leaves that task out."""
    log = ai.load(ai.samples.path("production_k1"))
    best = infer_markers(log)[0]
    differ = set(_restore(log, best.markers)) ^ set(_restore(log, ai.samples.markers("production_k1")))
    assert {row[:3] for row in differ} == {("user-0008", 2, "tool_call"), ("user-0008", 2, "chat")}


def test_production_the_log_cannot_tell_the_true_checkpoint_from_the_inferred_one() -> None:
    """Why no log-only inference can be exact on production: every record written between the true checkpoint and
    the inferred one belongs to a round that was complete before the failure and of which the restore wrote nothing.
    A restore from either instant writes the same records (a round it reuses writes nothing, spec §9.3 step 2; a
    round before its checkpoint is not replayed), so the log is the same under both and only a trace tells them apart.
    """
    log = ai.load(ai.samples.path("production"))
    r = log.records.assign(ms=pd.to_datetime(log.records["timestamp"], utc=True))
    cands = infer_markers(log)
    best = cands[0].markers[0]
    boundary = next(c for c in cands if c.source == "attempt boundary").markers[0]

    def instant(markers: dict[int, int]) -> pd.Timestamp:
        at = r.set_index(["partition", "offset"])["ms"]
        return min(at[(p, o)] for p, o in markers.items() if (p, o) in at.index)

    t_true, t_best, restart = instant(ai.samples.markers("production")[0]), instant(best), instant(boundary)
    assert t_true < t_best < restart
    between = r[(r["ms"] >= t_true) & (r["ms"] < t_best)]
    rounds = set(zip(between["business_key"], between["seq"].astype(int)))
    assert rounds == {("user-0009", 4), ("user-0034", 3)}
    for bk, seq in rounds:
        mine = r[(r["business_key"] == bk) & (r["seq"] == seq)]
        before, after = mine[mine["ms"] < restart], mine[mine["ms"] >= restart]
        assert before.groupby("state_key")["completed"].last().all(), f"({bk}, {seq}) complete before the failure"
        assert after.empty, f"the restore wrote nothing of ({bk}, {seq})"


def test_v4_refresh_rows_show_the_checkpoint_the_next_restore_restores() -> None:
    log = ai.load(ai.samples.path("production_v4"))
    best = infer_markers(log)[0]
    assert best.source == "refresh rows at a checkpoint" and best.restore is None
    assert best.markers == ai.samples.markers("production_v4")
    assert "refresh row" in best.evidence and "partition 3 offset 290" in best.evidence


def test_the_evidence_names_positions() -> None:
    log = ai.load(ai.samples.path("production"))
    trace = ai.load_trace(ai.samples.path("production", "trace"))
    best = infer_markers(log, trace)[0]
    assert best.source == "trace" and best.confidence == 0.9
    # bound above by the restored tool call the trace shows reused (its completed state was in the window), below
    # by its round, in flight at the checkpoint
    assert "reused" in best.evidence and "partition 3 offset 447" in best.evidence
    assert "(user-0009, 4)" in best.evidence and "in flight" in best.evidence


def test_an_empty_log_offers_a_fresh_start(tmp_path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    cands = infer_markers(ai.load(empty))
    assert [(c.source, c.markers) for c in cands] == [("fresh start", [])]


def test_a_log_with_no_restore_is_read_whole() -> None:
    log = ai.load(ai.samples.path("N04"))
    best = infer_markers(log)[0]
    assert best.source == "whole log" and best.markers == ai.recovery.whole_log_markers(log)
    assert "no restart" in best.evidence


def test_a_trace_of_another_job_adds_nothing_and_says_so() -> None:
    log = ai.load(ai.samples.path("production"))
    other = ai.load_trace(ai.samples.path("N04", "trace"))
    cands = infer_markers(log, other)
    assert "trace" not in {c.source for c in cands}
    assert [c.markers for c in cands] == [c.markers for c in infer_markers(log)]
    notes = [n for c in cands for n in c.notes]
    assert any("another job" in n for n in notes), notes


def test_without_timestamps_only_the_fallbacks_are_offered() -> None:
    log = ai.load(ai.samples.path("production"))
    log.records = log.records.assign(timestamp=log.records["timestamp"].iloc[0])
    cands = infer_markers(log)
    assert [c.source for c in cands] == ["whole log", "fresh start"]
    assert any("timestamps" in n for n in cands[0].notes)


def test_a_few_records_without_a_timestamp_take_their_neighbours() -> None:
    log = ai.load(ai.samples.path("production"))
    expected = infer_markers(log)[0]
    stamps = log.records["timestamp"].copy()
    stamps.iloc[::50] = None                                   # 60 of 2989
    log.records = log.records.assign(timestamp=stamps)
    best = infer_markers(log)[0]
    assert (best.source, best.markers) == (expected.source, expected.markers)


def test_a_trace_that_replays_no_input_takes_the_checkpoint_after_its_restored_round() -> None:
    """production_v4's restore resumes a chat checkpointed mid-action and replays no input: the trace shows only the
    restored task; the refresh rows show the checkpoints, the latest after that round began is the one."""
    log = ai.load(ai.samples.path("production_v4"))
    best = infer_markers(log, ai.load_trace(ai.samples.path("production_v4", "trace")))[0]
    assert best.source == "trace" and best.confidence == 0.8
    assert best.markers == ai.samples.markers("production_v4")
    assert "no input replayed" in best.evidence and "refresh row" in best.evidence


def test_inference_lives_in_its_own_package_and_recovery_does_not_import_it() -> None:
    import subprocess
    import sys

    from agent_inspect import markers, recovery

    assert ai.infer_markers is markers.infer_markers and ai.markers.MarkerCandidate is MarkerCandidate
    assert not {"infer_markers", "MarkerCandidate"} & set(recovery.__all__)
    probe = "import sys, agent_inspect.recovery; print('agent_inspect.markers' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip() \
        == "False"


def test_a_trace_path_is_refused_with_what_to_pass_not_read_as_no_trace() -> None:
    # a path has no records to read: the trace was ignored silently (only a note on the whole-log fallback)
    log = ai.load(ai.samples.path("production"))
    path = ai.samples.path("production", "trace")
    with pytest.raises(ai.InspectError, match=r"takes a loaded Trace Log, not a PosixPath: pass ai.load_trace\("):
        infer_markers(log, path)
    with pytest.raises(ai.InspectError, match=r"Trace Log \(ai.load_trace\(PATH\)\), not a list"):
        infer_markers(log, [])
    assert infer_markers(log, ai.load_trace(path))[0].source == "trace"
