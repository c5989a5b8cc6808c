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


def _explain(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from agent_inspect.cli import main

    code = main(["explain", *argv, "--key", "user-0011", "--seq", "3", "--action", "chat", "--json"])
    out, err = capsys.readouterr()
    return code, out, err


def test_explain_reads_its_markers_as_every_verb_does(capsys: pytest.CaptureFixture[str]) -> None:
    # --markers, --checkpoint and the @markers= selector: the one reader, the same answer and the same errors
    log = str(ai.samples.path("production"))
    sample = str(ai.samples.path("production", "markers"))
    answers = set()
    for argv in ([log, "--markers", sample], [log, "--markers", f"@{sample}"], [f"{log}@markers={sample}"],
                 [log, "--checkpoint", str(CHECKPOINT)], [log, "--markers", str(CHECKPOINT)],
                 [f"{log}@markers={CHECKPOINT}"], [f"{log}@markers=@{sample}"],
                 [f"{log}@markers=" + '[{"0": 248, "1": 245, "2": 215, "3": 444}]']):
        code, out, err = _explain(capsys, *argv)
        assert code == 0, (argv, err)
        answers.add(out)
    assert len(answers) == 1
    code, _, err = _explain(capsys, f"{log}@markers=/no/such/file.json")
    assert code == 2 and "--markers file '/no/such/file.json' cannot be read" in err
    # two sets of markers for one restore: refused, not one silently dropped
    code, _, err = _explain(capsys, f"{log}@markers={sample}", "--checkpoint", str(CHECKPOINT))
    assert code == 2 and "markers twice" in err and len(err.strip().splitlines()) == 1


def test_a_diff_side_reads_a_checkpoint_as_markers_as_explain_does() -> None:
    # a diff side's @markers= read only JSON files: a checkpoint folder failed ("Is a directory") where explain,
    # --markers and --checkpoint read it
    log = str(ai.samples.path("production"))
    by_folder = ai.diffing.select(f"{log}@markers={CHECKPOINT}")
    by_object = ai.diffing.select(log, markers=ai.checkpoint.read(CHECKPOINT))
    assert by_folder.label == by_object.label
    assert ai.diff(f"{log}@markers={CHECKPOINT}", by_object).empty
    assert ai.checkpoint.names_checkpoint(CHECKPOINT) and ai.checkpoint.names_checkpoint("s3://b/chk-7")
    assert not ai.checkpoint.names_checkpoint(ai.samples.path("production", "markers"))
    assert not ai.checkpoint.names_checkpoint('[{"0": 1}]')


@pytest.mark.parametrize("content, message", [
    (b'{"0": 1', r"--markers file '.*m\.json' is not valid JSON \(Expecting ',' delimiter at line 1 column 8\)"),
    (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", r"--markers file '.*m\.json' is not a markers file \(not UTF-8 text\)"),
])
def test_a_markers_file_that_is_not_json_names_the_file(tmp_path: Path, content: bytes, message: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # a file of broken JSON was reported as "--markers file '{"0": 1' cannot be read (no such file)", its text
    # taken for its name; a binary file was a UnicodeDecodeError traceback
    path = tmp_path / "m.json"
    path.write_bytes(content)
    for text in (str(path), f"@{path}"):
        with pytest.raises(InspectError, match=message):
            parse_markers(text)
    from agent_inspect.cli import main

    assert main(["reconstruct", str(ai.samples.path("G01")), "--markers", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and "file '{" not in err
