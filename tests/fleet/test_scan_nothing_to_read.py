"""A scan of a source with nothing to read (a Parquet dump of no rows, a topic whose partitions hold no offsets to
read) says so before a cluster starts (a LocalCluster takes seconds), in the one line every verb gives an empty
source: ``ai.scan`` raises it, ``agent-inspect scan`` prints it (exit 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import agent_inspect as ai
from agent_inspect._errors import SourceError
from agent_inspect.cli import main
from agent_inspect.fleet import _run


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    def client(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a cluster started although the source holds nothing")

    monkeypatch.setattr(_run, "_client", client)


SAMPLE = Path(__file__).resolve().parents[2] / "sample_logs" / "production.parquet"


def zero_rows(path: Path) -> Path:
    """A dump's schema (the sample's, as ActionStateLog.to_parquet writes it) and no rows."""
    pq.write_table(pq.read_schema(SAMPLE).empty_table(), path)
    return path


def test_a_parquet_dump_of_no_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dump = zero_rows(tmp_path / "dump.parquet")
    with pytest.raises(SourceError) as raised:
        ai.scan(dump)
    line = (f"{dump} holds no records ({dump.stat().st_size:,} bytes): is it the right file, and did the dump that "
            "wrote it finish?")
    assert str(raised.value) == line
    assert main(["scan", str(dump), "--no-progress"]) == 2
    assert capsys.readouterr().err == f"agent-inspect: {line}\n"
    assert main(["summary", str(dump)]) == 2       # the same line as the other verbs
    assert capsys.readouterr().err == f"agent-inspect: {line}\n"


@pytest.mark.kafka
def test_an_empty_topic(kafka_bootstrap: str, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.tansu import create_topic

    url = f"kafka://{kafka_bootstrap}/{create_topic(kafka_bootstrap, 2)}"
    assert main(["scan", url, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err == (f"agent-inspect: {url} holds no records from the offsets read: check the topic's name (a broker "
                   "may create a misspelt one) and the markers or start offsets\n")
    assert main(["summary", url]) == 2
    assert capsys.readouterr().err == err
