"""An output directory the scan cannot write fails before any work, in one line that says what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect.cli import main

#: no scheduler listens here: a scan that got as far as its cluster would fail with "no Dask scheduler answered"
NOWHERE = "tcp://127.0.0.1:9"


@pytest.mark.parametrize("where", ["/proc/x", "/proc/x/y", "file"])
def test_an_unwritable_output_fails_before_the_scan_starts(where: str, tmp_path: Path) -> None:
    """output="/proc/x" ended in a raw FileNotFoundError traceback from the dataset file, after planning."""
    if where == "file":
        (tmp_path / "file").write_text("not a directory")
        where = str(tmp_path / "file")
    with pytest.raises(ai.InspectError, match=r"cannot write the scan's output to .*; choose a directory you can write"):
        ai.scan(ai.samples.path("G01", "parquet"), output=where, client=NOWHERE)


def test_a_new_output_directory_passes_the_check(tmp_path: Path) -> None:
    with pytest.raises(ai.SourceError, match="no Dask scheduler answered"):   # the check passed: on to the cluster
        ai.scan(ai.samples.path("G01", "parquet"), output=tmp_path / "a" / "b", client=NOWHERE)


def test_the_cli_says_it_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["scan", str(ai.samples.path("G01", "parquet")), "-o", "/proc/x", "--scheduler", NOWHERE,
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "cannot write the scan's output to '/proc/x'" in err and "choose a directory" in err


@pytest.mark.parametrize("inside", ["", "sub"])
def test_an_output_inside_the_directory_scanned_is_refused(inside: str, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A scan's output scanned into itself added a second part beside the first: the dataset held every record
    twice. The directory scanned is read-only, and is checked before any cluster starts."""
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    (dumps / "G01.parquet").write_bytes(ai.samples.path("G01", "parquet").read_bytes())
    before = sorted(p.name for p in dumps.rglob("*"))
    out = dumps / inside if inside else dumps
    with pytest.raises(ai.InspectError, match=r"it is inside the directory scanned .*choose a directory outside it"):
        ai.scan(dumps, output=out, client=NOWHERE)
    assert main(["scan", str(dumps), "-o", str(out), "--scheduler", NOWHERE, "--no-progress"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert sorted(p.name for p in dumps.rglob("*")) == before
