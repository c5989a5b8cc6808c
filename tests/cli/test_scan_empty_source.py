"""``agent-inspect scan`` of an empty dump, or a directory of empty dumps, says so before any cluster starts (a
LocalCluster takes seconds), in the one line every verb gives an empty source: `ai.scan` says it, the CLI adds no
check of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_inspect.cli import main


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    import distributed

    def start(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a cluster started although the source holds nothing")

    monkeypatch.setattr(distributed.LocalCluster, "__init__", start)
    monkeypatch.setattr(distributed.Client, "__init__", start)


def test_an_empty_dump(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "dump.jsonl"
    empty.write_text("")
    assert main(["scan", str(empty), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err == f"agent-inspect: {empty} holds no records (0 bytes): is it the right file, and did the dump that " \
                  "wrote it finish?\n"
    assert main(["summary", str(empty)]) == 2       # the same line as the other verbs
    assert capsys.readouterr().err == err


def test_a_directory_of_empty_dumps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("a.jsonl", "b.parquet.jsonl"):
        (tmp_path / name).write_text("\n")
    assert main(["scan", str(tmp_path), "--no-progress"]) == 2
    assert capsys.readouterr().err == (f"agent-inspect: {tmp_path} holds no records (its 2 dumps are empty): is it "
                                       "the right directory, and did the dumps that wrote them finish?\n")


def test_a_directory_with_one_dump_that_is_not_empty_is_scanned(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text("")
    (tmp_path / "b.jsonl").write_text('{"key": "k", "value": "v"}\n')
    with pytest.raises(AssertionError, match="a cluster started"):
        main(["scan", str(tmp_path), "--no-progress"])


def test_a_parquet_dump_of_no_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    dump = tmp_path / "dump.parquet"
    pq.write_table(pa.table({"partition": pa.array([], pa.int32()), "value": pa.array([], pa.binary())}), dump)
    assert main(["scan", str(dump), "--no-progress"]) == 2
    assert capsys.readouterr().err == (f"agent-inspect: {dump} holds no records ({dump.stat().st_size:,} bytes): is "
                                       "it the right file, and did the dump that wrote it finish?\n")
