"""Sources are read-only: no verb writes its output over a file it reads (the source, --trace, --markers, ...).

``report SRC -o SRC``, ``otel SRC -o SRC`` and ``export X.parquet -o X.parquet`` wrote over the dump they had just
read, as ``-o`` over a --trace or --markers file did: the log was gone, and the next command said the file was
"none of the files agent_inspect reads".
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect.cli import main


@pytest.fixture()
def inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for kind in ("jsonl", "parquet", "trace", "markers"):
        shutil.copy(ai.samples.path("G01", kind), tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("argv", [
    ["export", "G01.jsonl", "-o", "G01.jsonl"],
    ["export", "G01.parquet", "-o", "./G01.parquet"],
    ["report", "G01.jsonl", "-o", "G01.jsonl"],
    ["report", "G01.jsonl", "--trace", "G01.trace.log", "-o", "G01.trace.log"],
    ["report", "G01.jsonl", "--markers", "G01.markers.json", "-o", "G01.markers.json"],
    ["otel", "G01.jsonl", "-o", "G01.jsonl"],
    ["otel", "G01.jsonl", "--trace", ".", "-o", "G01.trace.log"],          # a file of the --trace directory
    ["otel", "G01.jsonl", "--markers", "@G01.markers.json", "-o", "G01.markers.json"],
])
def test_the_cli_refuses_in_one_line_and_keeps_every_input(inputs: Path, argv: list[str],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    before = _contents(inputs)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "it is an input of this command" in err and "choose another output" in err
    assert _contents(inputs) == before


def test_a_link_to_the_source_is_the_source(inputs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.symlink(inputs / "G01.jsonl", inputs / "link.jsonl")
    assert main(["report", "G01.jsonl", "-o", "link.jsonl"]) == 2
    assert "'link.jsonl': it is an input of this command (G01.jsonl)" in capsys.readouterr().err
    assert (inputs / "G01.jsonl").read_bytes() == ai.samples.path("G01").read_bytes()


def test_other_outputs_are_written_as_before(inputs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "G01.jsonl", "-o", "r.html"]) == 0
    assert main(["report", "G01.jsonl", "-o", "r.html"]) == 0           # its own earlier output is no input
    assert main(["export", "G01.jsonl", "-o", "G01.parquet"]) == 0      # another file, not read by this command
    assert main(["otel", "G01.jsonl", "--markers", "G01.markers.json", "-o", "spans.json"]) == 0
    # markers given as JSON text longer than a file name may be (a 30-partition topic): text, not a file to stat
    wide = json.dumps({str(p): 100_000_000 + p for p in range(30)})
    assert len(wide) > 255
    assert main(["report", "G01.jsonl", "--markers", wide, "-o", "wide.html"]) == 0
    capsys.readouterr()


def test_the_library_writers_keep_the_file_a_log_was_read_from(inputs: Path) -> None:
    before = _contents(inputs)
    for name in ("G01.jsonl", "G01.parquet"):
        log = ai.load(name)
        for write in (ai.sources.write_parquet, ai.sources.write_jsonl):
            with pytest.raises(ai.SourceError, match="it is an input"):
                write(log, name)
        with pytest.raises(ai.InspectError, match="it is an input"):
            ai.write_report(log, name)
        with pytest.raises(ai.InspectError, match="it is an input"):
            ai.to_otel(log, path=name)
    with pytest.raises(ai.InspectError, match="it is an input"):
        ai.to_otel("G01.jsonl", path="G01.trace.log", trace="G01.trace.log", markers=ai.samples.markers("G01"))
    assert _contents(inputs) == before
    assert ai.sources.source_files(ai.load("G01.jsonl")) == ["G01.jsonl"]
