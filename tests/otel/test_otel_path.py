"""``to_otel(path=)`` into a directory that does not exist is one line saying so (it was a raw FileNotFoundError),
and nothing is created: write_report does the same (tests/report/test_report_path.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import opentelemetry.sdk  # noqa: F401 - installed by the test command: a missing SDK fails the run
import pytest

import agent_inspect as ai


def test_to_otel_into_a_missing_directory_says_the_directory_does_not_exist(tmp_path: Path) -> None:
    target = tmp_path / "nope" / "spans.json"
    log = ai.load(ai.samples.path("G01"))
    with pytest.raises(ai.InspectError) as err:
        ai.to_otel(log, path=target, markers=ai.samples.markers("G01"))
    assert str(err.value) == f"cannot write {target}: directory {target.parent} does not exist; create it first"
    assert not target.parent.exists()


def test_an_export_counts_its_spans_and_traces_in_words() -> None:
    from agent_inspect.otel import OtelExport

    # `agent-inspect otel` on production_v4 printed "7 spans in 1 traces (1 with status error)"
    assert str(OtelExport(spans=7, traces=1, errors=1, path="s.json")) == \
        "7 spans in 1 trace (1 with status error) written to s.json"
    assert str(OtelExport(spans=1, traces=2, errors=0, endpoint="http://127.0.0.1:6006/v1/traces")) == \
        "1 span in 2 traces (0 with status error) sent to http://127.0.0.1:6006/v1/traces"


def test_an_export_of_an_empty_window_says_why_it_is_empty(tmp_path: Path) -> None:
    # markers past the log's end: `agent-inspect otel` printed "0 spans in 0 traces" and exit 0 with no word why,
    # while reconstruct and predict warn that the markers hold nothing of the log
    markers = '{"0": 99999, "1": 99999, "2": 99999, "3": 99999}'
    done = ai.to_otel(ai.load(ai.samples.path("production")), path=tmp_path / "a.json", markers=[{0: 99999, 1: 99999,
                                                                                                  2: 99999, 3: 99999}])
    assert done.spans == 0 and len(done.warnings) == 1 and "past the log's end" in done.warnings[0]
    assert str(done).splitlines()[1].startswith("warning: the markers lie past the log's end")
    cli = subprocess.run([sys.executable, "-m", "agent_inspect", "otel", str(ai.samples.path("production")),
                          "--markers", markers, "-o", str(tmp_path / "b.json"), "--json"],
                         capture_output=True, text=True, check=True)
    assert "past the log's end" in json.loads(cli.stdout)["warnings"][0]


def test_a_call_whose_end_is_timed_before_its_start_ends_where_it_starts(tmp_path: Path) -> None:
    """An llm call's success record timed before its started record (a skewed clock, a damaged line) gave a negative
    latency, so the call span ended before 1970 and the OTLP encoder raised ``ValueError: Value out of range``."""
    recs = [json.loads(ln) for ln in ai.samples.path("N04", "trace").read_text(encoding="utf-8").splitlines()]
    i = next(k for k, r in enumerate(recs) if r["entityType"] == "llm" and r.get("status") == "success")
    recs[i]["timestamp"] = "2026-09-14T07:00:00Z"      # an hour before the call started
    trace = tmp_path / "skewed.trace.log"
    trace.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    v = ai.verify(ai.load(ai.samples.path("N04")), trace, markers=ai.samples.markers("N04"))
    ai.to_otel(v, path=tmp_path / "spans.json")
    spans = ai.sources.read_otlp_json(tmp_path / "spans.json")
    call = next(s for s in spans if s["span_id"] == ai.otel.span_id_of(recs[i]["executionId"]))
    assert call["end_ns"] >= call["start_ns"] > 0
