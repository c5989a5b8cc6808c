"""Markers that name none of the loaded log's partitions (a typo, another topic's markers) leave the whole log
outside the rebuild window and nothing replayed (spec §6.5: only named partitions are read). That is what the
store does, so the prediction still says it, but with a warning, instead of an empty answer and no word why."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

import agent_inspect as ai
from agent_inspect import RecoveryError
from agent_inspect.cli import main
from agent_inspect.log import ActionStateLog


def test_markers_of_other_partitions_are_warned_about() -> None:
    log = ai.load(ai.samples.path("N04"))                  # one partition: 0
    prediction = ai.predict(log, markers=[{7: 3}])
    assert prediction.tasks.empty
    assert any("partition 7" in w and "partition 0" in w and "rebuild window" in w for w in prediction.warnings)


def test_markers_naming_every_partition_warn_nothing() -> None:
    log = ai.load(ai.samples.path("production"))
    assert ai.predict(log, markers=ai.samples.markers("production")).warnings == ()
    assert ai.predict(log).warnings == ()                   # no markers: the whole log
    assert ai.predict(log, markers=[]).warnings == ()       # a fresh start names no partition on purpose


def test_a_partition_without_a_marker_is_named() -> None:
    log = ai.load(ai.samples.path("production"))            # partitions 0-3
    prediction = ai.predict(log, markers=[{0: 248, 1: 245, 2: 215}])
    assert any(w.startswith("partition 3 has no marker") for w in prediction.warnings)


def test_the_cli_prints_the_warning(capsys) -> None:
    assert main(["reconstruct", str(ai.samples.path("N04")), "--markers", '[{"7": 3}]']) == 0
    out = capsys.readouterr().out
    assert "rule original: 10 records, outside 10" in out and "warning: the markers name partition 7" in out


def test_a_fractional_or_negative_marker_offset_says_what_is_wrong_and_what_to_do() -> None:
    """A fraction was truncated to another record's position; a negative offset was advised to be loaded from."""
    log = ai.load(ai.samples.path("N04"))
    with pytest.raises(RecoveryError, match=r"marker offset must be an integer, got 2\.7 for partition 0: a fraction"):
        ai.predict(log, markers=[{0: 2.7}])
    with pytest.raises(RecoveryError, match=r"marker offset -1 for partition 0 is negative: no record has a negative "
                                            r"offset .*recovery_markers\(\)\), or 0 to rebuild"):
        ai.reconstruct(log, markers=[{0: -1}])
    whole = ai.predict(log, markers=[{0: 0.0}]).tasks                  # a whole number written as a float is one
    assert whole["outcome"].tolist() == ai.predict(log, markers=[{0: 0}]).tasks["outcome"].tolist()


def test_a_checkpoint_of_another_job_past_the_log_s_end_is_warned_about(capsys: pytest.CaptureFixture[str]) -> None:
    # the production checkpoint (offsets 215-248) given for N04 (10 records): it read "0 tasks", no word why
    log = ai.load(ai.samples.path("N04"))
    prediction = ai.predict(log, markers=ai.checkpoint.read(ai.samples.checkpoint("production")))
    assert prediction.tasks.empty
    (warning,) = prediction.warnings
    assert "past the log's end" in warning and "partition 0: marker 248, last offset 9" in warning
    assert ai.predict(log, markers=[{0: 10}]).warnings == ()     # right at the end: a restore of the last checkpoint
    assert main(["reconstruct", str(ai.samples.path("N04")), "--checkpoint",
                 str(ai.samples.checkpoint("production"))]) == 0
    assert "warning: the markers lie past the log's end" in capsys.readouterr().out


def test_a_marker_offset_beyond_64_bits_says_so() -> None:
    log = ai.load(ai.samples.path("N04"))
    for verb in (ai.predict, ai.reconstruct, ai.ReplayExecutor):        # each raised OverflowError
        with pytest.raises(RecoveryError, match=r"marker offset 9223372036854775808 is beyond a 64-bit offset "
                                                r"for partition 0: .*recovery_markers\(\)"):
            verb(log, markers=[{0: 1 << 63}])
    with pytest.raises(RecoveryError, match="beyond a 64-bit offset"):
        ai.fleet.key_frame(log, markers={0: 1 << 70})
    assert ai.predict(log, markers=[{0: (1 << 63) - 1}]).tasks.empty   # the largest offset is one, past the end


def test_a_marker_partition_beyond_a_java_int_says_so() -> None:
    """Partitions are Java ints (Map<Integer, Long>): ``{1 << 70: 5}`` ran quietly with 0 tasks."""
    log = ai.load(ai.samples.path("N04"))
    for partition in (1 << 70, 1 << 31, -(1 << 31) - 1):
        for verb in (ai.predict, ai.reconstruct, ai.ReplayExecutor):
            with pytest.raises(RecoveryError, match=rf"marker partition {partition} is beyond a Java int "
                                                    r"\(-2\^31 to 2\^31-1\): .*recovery_markers\(\)"):
                verb(log, markers=[{partition: 5}])
    assert ai.predict(log, markers=[{(1 << 31) - 1: 5, 0: 0}]).tasks is not None   # the largest partition is one


def test_a_marker_past_the_end_of_one_partition_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    # partition 3's marker past its last offset (1080) shrank the restore (643 tasks to 421) with no word why
    log = ai.load(ai.samples.path("production"))
    markers = [{0: 248, 1: 245, 2: 215, 3: 99999}]
    said = ("the marker of partition 3 lies past its end (marker 99999, last offset 1080): none of its records is in "
            "the rebuild window; is it this log's marker (another job's checkpoint?), or was the log read before the "
            "restore?")
    assert ai.predict(log, markers=markers).warnings == (said,)
    recon = ai.reconstruct(log, markers=markers)
    assert recon.warnings == (said,) and recon.summary()["warnings"] == [said] and ", 1 warning)" in repr(recon)
    assert said in recon._repr_html_().replace("&#x27;", "'")
    two = ai.predict(log, markers=[{0: 248, 1: 99999, 2: 215, 3: 99999}]).warnings
    assert two == ("the markers of partitions 1, 3 lie past their ends (partition 1: marker 99999, last offset 639; "
                   "partition 3: marker 99999, last offset 1080): none of their records is in the rebuild window; are "
                   "they this log's markers (another job's checkpoint?), or was the log read before the restore?",)
    for ledger in ([], ["--no-ledger"]):      # the reconstruction's own warning: no prediction needed
        assert main(["reconstruct", str(ai.samples.path("production")), "--markers", json.dumps(markers), *ledger]) == 0
        assert capsys.readouterr().out.count(f"warning: {said}") == 1


def test_a_marker_at_a_partition_s_end_or_before_the_source_s_end_is_not_past_it() -> None:
    log = ai.load(ai.samples.path("production"))
    at_end = [{0: 746, 1: 640, 2: 522, 3: 1081}]           # each partition's last offset + 1: nothing after it
    assert ai.predict(log, markers=at_end).warnings == () and ai.reconstruct(log, markers=at_end).warnings == ()
    # a Kafka load's end offset (the high watermark) may lie beyond the last record (a transaction's commit marker)
    kafka = ActionStateLog(log.records, log.raw, replace(log.source, kind="kafka",
                                                         end_offsets={0: 750, 1: 640, 2: 522, 3: 1081}))
    assert ai.recovery.marker_warnings([{0: 750, 1: 640, 2: 522, 3: 1081}], kafka) == []
    (said,) = ai.recovery.marker_warnings([{0: 751, 1: 640, 2: 522, 3: 1081}], kafka)
    assert "of partition 0 lies past its end (marker 751, end offset 750)" in said


def test_markers_past_the_end_where_the_rest_have_none_say_both() -> None:
    log = ai.load(ai.samples.path("production"))
    (said,) = ai.predict(log, markers=[{0: 99999, 1: 99999, 2: 99999}]).warnings
    assert said.startswith("the markers lie past the log's end in every partition of it they name (partition 0: "
                           "marker 99999, last offset 745;")
    assert "), and partition 3 has no marker: nothing of it is in the rebuild window" in said


def test_verify_notes_a_marker_past_its_partition_s_end() -> None:
    log = ai.load(ai.samples.path("production"))
    v = ai.verify(log, ai.samples.path("production").with_suffix(".trace.log"),
                  markers=[{0: 248, 1: 245, 2: 215, 3: 99999}])
    assert any(n.startswith("the marker of partition 3 lies past its end") for n in v.notes)
