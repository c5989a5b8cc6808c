"""Markers that name none of the loaded log's partitions (a typo, another topic's markers) leave the whole log
outside the rebuild window and nothing replayed (spec §6.5: only named partitions are read). That is what the
store does, so the prediction still says it, but with a warning, instead of an empty answer and no word why."""

from __future__ import annotations

import pytest

import agent_inspect as ai
from agent_inspect import RecoveryError
from agent_inspect.cli import main


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
