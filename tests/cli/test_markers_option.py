"""The one --markers / --checkpoint parser every subcommand shares (cli/_markers_args.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect import InspectError
from agent_inspect.cli._markers_args import add_markers_options, markers_from_args, parse_markers, restore_of

CHECKPOINT = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints" / "production" / "checkpoints"


def test_every_spelling_of_the_markers_gives_the_same_list(tmp_path: Path) -> None:
    sample = ai.samples.path("production", "markers")
    expected = ai.samples.markers("production")
    (tmp_path / "m.json").write_text('[{"0": 248, "1": 245, "2": 215, "3": 444}]')
    for text in ('[{"0": 248, "1": 245, "2": 215, "3": 444}]', f"@{sample}", str(sample), f"@{tmp_path / 'm.json'}",
                 str(tmp_path / "m.json")):
        assert parse_markers(text) == expected, text
    assert parse_markers('{"0": 12}') == {0: 12}
    assert parse_markers(None) is None
    assert restore_of(str(sample)) == restore_of(f"@{sample}") is not None


@pytest.mark.parametrize("text, message", [("[{0: 1}]", "not valid JSON"), ("12", "must be a JSON list"),
                                           ("@/no/such/file.json", "cannot be read")])
def test_bad_markers_say_what_to_pass(text: str, message: str) -> None:
    with pytest.raises(InspectError, match=message):
        parse_markers(text)


def test_checkpoint_option_reads_the_checkpoint() -> None:
    parser = argparse.ArgumentParser()
    add_markers_options(parser)
    ckpt = markers_from_args(parser.parse_args(["--checkpoint", str(CHECKPOINT)]))
    assert isinstance(ckpt, ai.checkpoint.Checkpoint)
    assert ckpt.recovery_markers() == ai.samples.markers("production")
    assert markers_from_args(parser.parse_args(["--markers", '{"1": 5}'])) == {1: 5}
    assert markers_from_args(parser.parse_args([])) is None
