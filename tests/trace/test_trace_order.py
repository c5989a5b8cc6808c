"""Trace lines in any order and more than once: time order with lifecycle tie-breaks, exact duplicates left out and
counted, conflicting records flagged, gzip-rotated files, and timestamps pandas cannot hold kept as errors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

import agent_inspect as ai
from agent_inspect import samples
from agent_inspect.cli import main
from agent_inspect.sources import write_trace
from agent_inspect.trace import load_trace, verify

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "sample_logs"


def _records(name: str) -> list[dict]:
    return [json.loads(ln) for ln in (LOGS / f"{name}.trace.log").read_text(encoding="utf-8").splitlines()]


def test_records_are_in_time_order_and_lifecycle_breaks_ties(tmp_path: Path) -> None:
    recs = _records("production_v4")                       # a routed call: started and failed share a millisecond
    p = write_trace(list(reversed(recs)), tmp_path / "reversed.log")
    t = load_trace(p)
    assert list(t.records["timestamp"]) == sorted(t.records["timestamp"])
    got = [(r["executionId"] if "executionId" in r else None, r.get("status")) for r in recs]
    assert list(zip(t.records["execution_id"].astype(object).where(t.records["execution_id"].notna(), None),
                    t.records["status"].astype(object).where(t.records["status"].notna(), None))) == got
    # the file and line each record came from are kept
    assert list(t.records["line"]) == list(range(len(recs), 0, -1))
    assert t.executions()["observed"].tolist() == load_trace(LOGS / "production_v4.trace.log").executions()[
        "observed"].tolist()


def test_exact_duplicates_are_dropped_and_counted_across_rotated_files(tmp_path: Path) -> None:
    recs = _records("N04")
    name = "traces-" + "a" * 32 + "-op-0.log"
    write_trace(recs[:10], tmp_path / name)
    (tmp_path / f"{name}.1.gz").write_bytes(b"")           # not a *.log.gz name: not read
    with gzip.open(tmp_path / f"{name}.gz", "wt", encoding="utf-8") as fh:     # rotated, and shipped again
        fh.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in recs[6:]))
    t = load_trace(tmp_path)
    assert len(t.files) == 2 and t.errors.empty
    assert len(t.records) == len(recs)
    s = t.summary()
    assert s["duplicates_dropped"] == 4 == len(t.duplicates)
    assert set(t.duplicates["file"]) == {str(tmp_path / f"{name}.gz")}
    assert set(t.duplicates["duplicate_of_file"]) == {str(tmp_path / name)}
    assert {x["subtask_id"] for x in s["subtasks"]} == {0}


def test_same_execution_and_status_with_other_content_is_kept_and_flagged(tmp_path: Path) -> None:
    recs = _records("N04")
    i = next(k for k, r in enumerate(recs) if r["entityType"] == "action")
    other = dict(recs[i], attributes={"note": "written again with other content"})
    t = load_trace(write_trace([*recs, other], tmp_path / "conflict.log"))
    assert len(t.records) == len(recs) + 1 and t.summary()["duplicates_dropped"] == 0
    flagged = t.conflicts
    assert len(flagged) == 2 and set(flagged["execution_id"]) == {recs[i]["executionId"]}
    assert t.summary()["conflicting_records"] == 2


def test_timestamps_pandas_cannot_hold_are_errors_and_the_rest_loads(tmp_path: Path) -> None:
    recs = _records("N04")
    recs[2] = dict(recs[2], timestamp="2726-09-14T08:00:52.047Z")    # a flipped byte: 2026 -> 2726
    recs[3] = dict(recs[3], timestamp=10 ** 19)                     # nanoseconds by its size: year 2286
    p = write_trace(recs, tmp_path / "years.log")
    t = load_trace(p)
    assert len(t.records) == len(recs)
    errs = dict(zip(t.errors["line"], t.errors["reason"]))
    assert set(errs) == {3, 4}
    assert "'2726-09-14T08:00:52.047Z' is outside the representable range" in errs[3]
    assert "(epoch nanoseconds) is outside the representable range" in errs[4]
    assert t.good["timestamp"].notna().all() and len(t.good) == len(recs) - 2


@pytest.mark.parametrize("stamp", ["1969-12-31T23:59:59.999Z", -1, -1.5e12, "0001-01-01T00:00:00Z"])
def test_a_time_before_the_epoch_is_an_error_and_the_trace_still_exports(tmp_path: Path, stamp: object) -> None:
    # upstream writes Instant.now(); OTLP holds unsigned nanoseconds since the epoch: an earlier line (a clock or a
    # shipper's error) was read as a record, and ai.to_otel then failed on it ("Value out of range: -1000000000")
    recs = _records("S01")
    recs[1] = dict(recs[1], timestamp=stamp)
    t = load_trace(write_trace(recs, tmp_path / "early.log"))
    errs = dict(zip(t.errors["line"], t.errors["reason"]))
    assert set(errs) == {2} and "is outside the representable range 1970-01-01 to " in errs[2]
    v = verify(ai.load(LOGS / "S01.parquet"), t, markers=samples.markers("S01"))
    export = ai.to_otel(v, path=tmp_path / "spans.json")
    spans = ai.sources.read_otlp_json(tmp_path / "spans.json")
    assert spans and str(export).startswith(f"{len(spans)} spans")
    assert min(s["start_ns"] for s in spans) > 0


@pytest.mark.parametrize("stamp", [1789372801.095, 1789372801, 1789372801095, 1789372801095000, 1789372801095000000])
def test_a_numeric_timestamp_is_epoch_time_in_the_unit_its_size_gives(tmp_path: Path, stamp: float) -> None:
    # upstream writes ISO-8601 text; a log shipper may rewrite it as epoch seconds (1789372801.095 read as
    # milliseconds was 1970-01-21), milliseconds, microseconds or nanoseconds
    recs = _records("N04")
    recs[0] = dict(recs[0], timestamp=stamp)
    t = load_trace(write_trace(recs, tmp_path / "numeric.log"))
    read = t.records.loc[t.records["line"] == 1, "timestamp"].iloc[0]
    assert t.errors.empty
    assert read == pd.Timestamp("2026-09-14T08:00:01.095Z" if stamp != 1789372801 else "2026-09-14T08:00:01Z")


def test_trace_summary_cli_counts_duplicates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = (LOGS / "N04.trace.log").read_text(encoding="utf-8").splitlines()
    p = tmp_path / "twice.log"
    p.write_text("\n".join(lines + lines[:5]) + "\n", encoding="utf-8")
    assert main(["trace", "summary", str(p)]) == 0
    out = capsys.readouterr().out
    assert "exact duplicates left out: 5" in out


def test_verify_notes_conflicting_records(tmp_path: Path) -> None:
    recs = _records("N04")
    i = next(k for k, r in enumerate(recs) if r["entityType"] == "action")
    p = write_trace([*recs, dict(recs[i], attributes={"again": True})], tmp_path / "conflict.log")
    restore = json.loads((LOGS / "N04.markers.json").read_text(encoding="utf-8"))["restore"]
    v = verify(ai.load(LOGS / "N04.jsonl"), p, markers=samples.markers("N04"), restore=restore)
    assert any("2 trace records share an execution id and status" in n for n in v.notes)
