"""Reading Trace Logs: the addendum §3.5 upstream lines, every file layout, bad input kept as rows."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import agent_inspect as ai
from agent_inspect.trace import ENTITY_TYPES, STATUSES, TraceLog, load_trace

FIXTURES = Path(__file__).parent / "fixtures"
ADDENDUM = FIXTURES / "addendum_3_5.log"
JOB = "a" * 32


def _lines() -> list[str]:
    return ADDENDUM.read_text(encoding="utf-8").splitlines()


def test_public_names() -> None:
    from agent_inspect import trace

    assert {"load_trace", "TraceLog", "verify", "Verification", "join", "executions", "calls",
            "trace_from_executor", "call_entity", "STORE_FLAVOURS", "CAUSES"} <= set(trace.__all__)
    for name in trace.__all__:
        assert getattr(trace, name) is not None
    assert ai.load_trace is trace.load_trace and ai.verify is trace.verify and ai.TraceLog is TraceLog


def test_addendum_examples_load_with_every_field() -> None:
    t = load_trace(ADDENDUM)
    assert len(t.records) == 9 and t.errors.empty
    r = t.records
    assert list(r["entity_type"].astype(str)) == ["event", "llm", "event", "action", "event", "action", "llm", "llm",
                                                  "action"]
    first = r.iloc[0]
    assert (first["event_id"], first["producer_execution_id"], first["upstream_event_id"],
            first["upstream_action_name"]) == ("output-1", "action-1", "input-1", "process_order")
    assert first["attributes"] == {"output": {"orderId": "order-1001"}}
    assert first["timestamp"] == pd.Timestamp("2024-01-15T10:30:00Z")
    assert r.iloc[1]["model"] == "qwen-max" and r.iloc[1]["parent_execution_id"] == "action-1"
    assert r.iloc[3]["trigger_event_id"] == "e7f1…" and r.iloc[3]["status"] == "reused"
    assert set(r["format"].astype(str)) == {"trace"} and list(r["line"]) == list(range(1, 10))


def test_addendum_executions_show_the_reuse_and_the_replayed_chat_call() -> None:
    t = load_trace(ADDENDUM)
    ex = t.executions().set_index("action")
    assert ex.loc["process_input", "observed"] == "REUSE"
    # the replayed output keeps its stored id; producerExecutionId is the reusing execution (§3.3)
    assert ex.loc["process_input", "output_event_ids"] == ("9a1c2e44-7b10-4f5e-8c9d-112233445566",)
    assert ex.loc["process_input", "input_ordinal"] == 1
    # started/success of the chat call at the same instant: served from the CallResult
    assert ex.loc["ask_and_record", "observed"] == "RESUME"
    assert ex.loc["ask_and_record", "calls_replayed"] == 1
    s = t.summary()
    assert s["by_entity_type"] == {"action": 3, "event": 3, "llm": 3}
    assert s["by_status"]["action"] == {"reused": 1, "started": 1, "success": 1}
    assert s["business_keys"] == ["order-1001", "user-42"] and s["agents"] == ["OrderAgent"]
    assert s["recovery"] is True and s["errors"] == []


def test_pretty_printed_and_slf4j_files_read_the_same_records(tmp_path: Path) -> None:
    objs = [json.loads(line) for line in _lines()]
    pretty = tmp_path / f"traces-{JOB}-Agent_Operator__1_2_-0.log"
    pretty.write_text("".join(json.dumps(o, indent=2) + "\n" for o in objs), encoding="utf-8")
    slf = tmp_path / "taskmanager.log.trace-log.log"
    with open(slf, "w", encoding="utf-8") as fh:
        for o in objs:
            o = {"timestamp": o["timestamp"], "detail": o["detail"], "jobId": JOB, "taskName": "Agent Op",
                 "subtaskId": 3, **{k: v for k, v in o.items() if k not in ("timestamp", "detail")}}
            fh.write(f"2026-11-03 09:00:01,131 INFO  org.apache.flink.agents.TraceLog [] - {json.dumps(o)}\n")
    a = load_trace(pretty)
    b = load_trace(slf)
    assert a.errors.empty and b.errors.empty and len(a.records) == len(b.records) == 9
    assert list(a.records["line"])[:2] == [1, 1 + len(json.dumps(objs[0], indent=2).splitlines())]
    # FILE output: job, task and subtask come from the file name; SLF4J: from the record
    assert set(a.records["job_id"].astype(str)) == {JOB} and set(a.records["task_name"].astype(str)) == \
        {"Agent_Operator__1_2_"} and set(a.records["subtask_id"]) == {0}
    assert set(b.records["task_name"].astype(str)) == {"Agent Op"} and set(b.records["subtask_id"]) == {3}
    assert b.records["prefix"].str.endswith("TraceLog [] -").all()
    cols = ["entity_type", "status", "execution_id", "event_id", "trigger_event_id"]
    pd.testing.assert_frame_equal(a.records[cols].astype(object), b.records[cols].astype(object))
    both = load_trace(tmp_path)                       # a directory: both files
    assert len(both.records) == 18 and both.jobs() == [JOB]


def test_old_event_log_is_read_with_a_format_column(tmp_path: Path) -> None:
    lines = [
        {"timestamp": "2026-01-01T00:00:00Z", "inputRunId": "r1", "businessKey": "k", "agentName": "A",
         "executionId": "x1", "entityType": "action", "entityName": "IA", "eventId": "e1",
         "eventType": "_execution_reused_event", "status": "reused", "eventAttributes": {}},
        {"timestamp": "2026-01-01T00:00:01Z", "inputRunId": "r1", "businessKey": "k", "agentName": "A",
         "executionId": "x2", "entityName": "WA", "eventId": "e2", "eventType": "_execution_started_event",
         "eventAttributes": {}},
        {"timestamp": "2026-01-01T00:00:02Z", "businessKey": "k", "eventId": "e3", "eventType": "_output_event",
         "upstreamEventId": "e2", "upstreamActionName": "WA", "eventAttributes": {"output": 1}},
    ]
    p = tmp_path / "events.log"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    t = load_trace(p)
    assert t.errors.empty, t.errors["reason"].tolist()
    r = t.records
    assert set(r["format"].astype(str)) == {"event-log"}
    assert list(r["status"].astype(object).where(r["status"].notna(), None)) == ["reused", "started", None]
    assert list(r["entity_type"].astype(str)) == ["action", "action", "event"]
    assert r.iloc[2]["entity_name"] == "_output_event" and r.iloc[2]["attributes"] == {"output": 1}
    assert r.iloc[2]["upstream_action_name"] == "WA"


def test_truncation_wrappers_stay_visible() -> None:
    rec = json.loads(_lines()[0])
    rec["attributes"] = {"output": {"truncatedString": "abc", "omittedChars": 1997},
                         "list": {"truncatedList": [1, 2], "omittedElements": 40}}
    from agent_inspect.sources._trace import scan
    from agent_inspect.trace._model import parse_items

    t = TraceLog(parse_items([(None, list(scan(json.dumps(rec))))]))
    assert bool(t.records.iloc[0]["truncated"])
    assert t.records.iloc[0]["attributes"]["output"] == {"truncatedString": "abc", "omittedChars": 1997}


def test_bad_lines_are_rows_with_file_line_and_reason(tmp_path: Path) -> None:
    good = _lines()
    odd = [
        good[0],
        good[1][: len(good[1]) // 2],                                    # cut off
        "2026-11-03 09:00:01 WARN some other logger: no json here",      # a non-JSON line
        json.dumps({**json.loads(good[3]), "entityType": "robot"}),     # unknown entity type
        json.dumps({**json.loads(good[3]), "status": "paused"}),        # unknown status
        json.dumps({k: v for k, v in json.loads(good[3]).items() if k not in ("timestamp", "executionId")}),
        json.dumps({**json.loads(good[3]), "timestamp": "yesterday"}),
        "[1, 2]",
        good[2],
    ]
    p = tmp_path / "bad.log"
    p.write_text("\n".join(odd) + "\n", encoding="utf-8")
    t = load_trace(p)
    assert len(t.records) == len(odd)                                    # nothing dropped
    errs = dict(zip(t.errors["line"], t.errors["reason"]))
    assert set(errs) == {2, 3, 4, 5, 6, 7, 8}
    assert "truncated" in errs[2]
    assert "no JSON object" in errs[3]
    assert "unknown entityType 'robot'" in errs[4]
    assert "unknown status 'paused'" in errs[5]
    assert "missing field timestamp" in errs[6] and "without executionId" in errs[6]
    assert "not ISO-8601" in errs[7]
    assert "no JSON object" in errs[8]
    assert set(t.errors["file"]) == {str(p)}
    assert {e["line"] for e in t.summary()["errors"]} == set(errs)
    # good records around the bad ones are still there
    assert list(t.good["line"]) == [1, 9]
    assert set(ENTITY_TYPES) >= set(t.good["entity_type"].astype(str)) and set(STATUSES) >= set(
        t.good["status"].dropna().astype(str))


def test_several_jobs_in_one_directory_are_separate_groups(tmp_path: Path) -> None:
    for job in ("1" * 32, "2" * 32):
        (tmp_path / f"traces-{job}-op-0.log").write_text(ADDENDUM.read_text(encoding="utf-8"), encoding="utf-8")
    t = load_trace(tmp_path)
    assert t.jobs() == ["1" * 32, "2" * 32]
    assert len(t.for_job("2" * 32).records) == 9
    assert [s["job_id"] for s in t.summary()["subtasks"]] == ["1" * 32, "2" * 32]


def test_a_trace_without_recovery_says_so(tmp_path: Path) -> None:
    p = tmp_path / "fresh.log"
    p.write_text("\n".join(line for line in _lines() if '"reused"' not in line and "b410" not in line
                           and '"llm"' not in line) + "\n", encoding="utf-8")
    s = load_trace(p).summary()
    assert s["recovery"] is False and "shows no recovery" in s["recovery_note"]


def test_missing_paths_are_source_errors(tmp_path: Path) -> None:
    with pytest.raises(ai.SourceError, match="does not exist"):
        load_trace(tmp_path / "nope.log")
    with pytest.raises(ai.SourceError, match="no trace files"):
        load_trace(tmp_path)
    with pytest.raises(ai.SourceError, match="no trace file matches"):
        load_trace(str(tmp_path / "traces-*.log"))


def test_html_is_escaped(tmp_path: Path) -> None:
    rec = json.loads(_lines()[3])
    rec["businessKey"] = "<script>alert(1)</script>"
    p = tmp_path / "x.log"
    p.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    html = load_trace(p)._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_the_summary_line_names_jobs_in_words_with_a_tooltip(tmp_path: Path) -> None:
    """No bare "jobs —": a trace without job names says so, "job"/"jobs" carries the glossary's line, counts
    have their plurals."""
    from agent_inspect._glossary import define
    from agent_inspect._html import escape

    rec = json.loads(_lines()[3])
    rec.pop("jobId", None), rec.pop("jobName", None)
    p = tmp_path / "one.log"
    p.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    trace = load_trace(p)
    html = trace._repr_html_()
    assert "jobs —" not in html and "file(s)" not in html
    assert f'<span class="ai-term" title="{escape(define("jobs"))}">' in html
    assert trace.jobs() == [] and "none named in the records" in html
    assert "1 record in 1 file," in html


def test_a_bad_utf8_byte_is_reported_at_its_line(tmp_path: Path) -> None:
    lines = [ln.encode("utf-8") for ln in _lines()]
    lines[2] = lines[2].replace(b'"', b'"\xfe', 1)   # one undecodable byte on line 3, another on line 5
    lines[4] = lines[4] + b" \xff"
    path = tmp_path / "bad-byte.log"
    path.write_bytes(b"\n".join(lines) + b"\n")
    errors = load_trace(path).errors
    said = errors[errors["reason"].str.contains("not valid UTF-8")]
    assert said["line"].tolist() == [3]
    assert said["reason"].iat[0] == "line 3 (and 1 more line) is not valid UTF-8; undecodable bytes were replaced"


def test_a_byte_order_mark_is_not_the_first_records_line_prefix(tmp_path: Path) -> None:
    # a file saved with a UTF-8 BOM gave its first record the invisible prefix "\ufeff"
    path = tmp_path / "bom.log"
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(_lines()).encode("utf-8") + b"\r\n")
    plain = load_trace(ADDENDUM).records
    records = load_trace(path).records
    assert records["prefix"].isna().tolist() == plain["prefix"].isna().tolist()
    assert len(records) == len(plain) and load_trace(path).errors.empty
