"""The CLI entry point: exit codes and one-line errors (never a traceback) for expected failures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent_inspect.cli import build_parser, main

SAMPLE = Path(__file__).resolve().parents[2] / "sample_logs" / "N04.jsonl"


def test_every_documented_subcommand_is_registered():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert {"summary", "export", "reconstruct", "cases", "report", "demo", "samples"} <= set(sub.choices)


def test_missing_input_is_one_line_exit_2(tmp_path, capsys):
    assert main(["summary", str(tmp_path / "nope.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("agent-inspect:") and "\n" not in err and "Traceback" not in err


def test_unwritable_output_is_one_line_exit_2(tmp_path, capsys):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    assert main(["export", str(SAMPLE), "-o", str(blocker / "out.parquet")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("agent-inspect:") and "\n" not in err


def test_bad_usage_exits_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["summary"])
    assert exc.value.code == 2
    assert "\n" not in capsys.readouterr().err.strip()


def test_help_is_plain_text_with_the_exit_codes(capsys):
    """Every --help reads as text: no reST markup from a docstring; the top help names the exit codes."""
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    texts = [parser.format_help(), *(p.format_help() for p in commands.values())]
    assert not [t.splitlines()[0] for t in texts if re.search(r"``|:(data|func|class|meth):`", t)]
    assert "exit codes: 0 success" in " ".join(texts[0].split())


def test_the_exit_codes_page_and_the_help_name_the_empty_source_case(tmp_path, capsys):
    # an empty dump, topic or trace stops with one line and exit 2 (tests/cli/test_wrong_file.py); the exit-code
    # page listed only wrong options, missing files, unreachable brokers and files of another kind
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert main(["summary", str(empty)]) == 2
    assert "holds no records" in capsys.readouterr().err
    page = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "exit-codes.md").read_text(encoding="utf-8")
    row = next(line for line in page.splitlines() if line.startswith("| `2` |"))
    assert "empty source" in row and "trace" in row
    assert "empty source" in " ".join(build_parser().format_help().split())


def test_a_directory_to_write_into_that_is_a_file_says_so(tmp_path, capsys):
    # "agent-inspect: File exists '/…/f'" said nothing of what to do
    f = tmp_path / "f"
    f.write_text("x")
    for argv, says in [(["samples", "write", str(f), "--name", "G01"], "it is a file, not a directory"),
                       (["samples", "write", str(f / "sub"), "--name", "G01"], "part of that path is a file"),
                       (["report", str(SAMPLE), "-o", str(f / "r.html")], f"{f} is a file, not a directory")]:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and says in err, err
    assert f.read_text() == "x"


@pytest.mark.parametrize("argv, says", [
    (["diff", str(SAMPLE), str(SAMPLE), "--limit", "-1"], "argument --limit: must be 0 or more, not -1"),
    (["report", str(SAMPLE), "-o", "r.html", "--keys", "-1"], "argument --keys: must be 0 or more, not -1"),
    (["scan", str(SAMPLE), "--top", "-5"], "argument --top: must be 0 or more, not -5"),
    (["demo", "--port", "-1"], "argument --port: port -1 is outside 0..65535"),
    (["docs", "--port", "70000"], "argument --port: port 70000 is outside 0..65535"),
    (["docs", "--port", "abc"], "argument --port: 'abc' is not a port number"),
    (["rules", "check", "fixed", "--n", "-1"], "argument --n: must be 0 or more, not -1"),   # a hand check's words
    (["rules", "check", "fixed", "--n", "2.5"], "argument --n: '2.5' is not a whole number"),
])
def test_a_number_out_of_range_is_a_usage_error_before_any_work(argv, says, capsys):
    # "--limit -1" printed all but one row and "… and 837 more"; "demo --port -1" started JupyterLab, and
    # "docs --port 70000" built the site (installing its extra) before the port failed
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.count("\n") == 1 and says in err


def test_version_prints_the_package_version_and_exits_0(capsys):
    # "agent-inspect --version" said "the following arguments are required: command" and exited 2
    import agent_inspect

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"agent-inspect {agent_inspect.__version__}"
