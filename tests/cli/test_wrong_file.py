"""The wrong file: each loader recognizes the kind of file from its first lines and names the call that reads it;
a file of no known kind exits 2; a log where nothing decoded has an unknown runtime, modelled and labelled; a
timestamp no calendar holds does not keep the log from being shown."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect._errors import SourceError
from agent_inspect.cli import main
from agent_inspect.sources import FileKind, file_kind

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "sample_logs"


@pytest.mark.parametrize(("name", "kind"), [("N04.jsonl", FileKind.ACTION_STATE), ("N04.kcat.jsonl", FileKind.KCAT),
                                            ("N04.parquet", FileKind.ACTION_STATE), ("N04.trace.log", FileKind.TRACE)])
def test_the_kind_of_each_sample_file(name: str, kind: FileKind) -> None:
    assert file_kind(LOGS / name) == kind


def test_event_log_cut_off_gzip_and_none(tmp_path: Path) -> None:
    old = tmp_path / "events.log"
    old.write_text(json.dumps({"logLevel": "INFO", "eventId": "e1", "eventType": "_input_event",
                               "eventAttributes": {"input": "a"}}) + "\n", encoding="utf-8")
    assert file_kind(old) == FileKind.EVENT_LOG
    cut = tmp_path / "cut.log"                              # a first line cut off still names its fields
    cut.write_text((LOGS / "N04.trace.log").read_text(encoding="utf-8")[:150], encoding="utf-8")
    assert file_kind(cut) == FileKind.TRACE
    gz = tmp_path / "trace.log.gz"
    gz.write_bytes(gzip.compress((LOGS / "N04.trace.log").read_bytes()))
    assert file_kind(gz) == FileKind.TRACE
    assert file_kind("/etc/passwd") == FileKind.OTHER
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert file_kind(empty) == FileKind.EMPTY and len(ai.load(empty).records) == 0


def test_loading_the_wrong_kind_names_the_right_call() -> None:
    with pytest.raises(SourceError, match=r"looks like a Trace Log, not an action-state dump: use ai\.load_trace\("):
        ai.load(LOGS / "N04.trace.log")
    with pytest.raises(SourceError, match=r"looks like an action-state dump, not a Trace Log: use ai\.load\("):
        ai.load_trace(LOGS / "production.jsonl")
    with pytest.raises(SourceError, match=r"looks like a kcat dump of the action-state topic.*use ai\.load\("):
        ai.load_trace(LOGS / "N04.kcat.jsonl")
    # the right file for each still loads
    assert len(ai.load(LOGS / "N04.kcat.jsonl").records) and len(ai.load_trace(LOGS / "N04.trace.log").records)


@pytest.mark.parametrize("argv", [["summary", "/etc/passwd"], ["summary", str(LOGS / "N04.trace.log")],
                                  ["trace", "summary", str(LOGS / "N04.jsonl")], ["trace", "summary", "/etc/passwd"],
                                  ["verify", str(LOGS / "N04.jsonl"), "--trace", str(LOGS / "N04.jsonl")],
                                  # scan read them as dumps of bad records and exited 0 (before any cluster now)
                                  ["scan", "/etc/passwd", "--no-progress"],
                                  ["scan", str(LOGS / "N04.trace.log"), "--no-progress"]])
def test_the_cli_exits_2_with_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("agent-inspect: ")
    assert "use ai.load" in err or "none of the files agent_inspect reads" in err


def test_a_scan_plan_names_the_right_call_as_the_loader_does() -> None:
    with pytest.raises(SourceError, match=r"looks like a Trace Log, not an action-state dump: use ai\.load_trace\("):
        ai.fleet.plan_scan(LOGS / "N04.trace.log")
    with pytest.raises(SourceError, match="none of the files agent_inspect reads"):
        ai.scan("/etc/passwd")
    assert len(ai.fleet.plan_scan(LOGS / "N04.kcat.jsonl").windows) == 1
    assert ai.fleet.plan_scan(LOGS / "N04.trace.log", file_format="jsonl").windows   # a format given is obeyed


def test_a_log_where_nothing_decoded_has_an_unknown_runtime_modelled_as_the_release(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "undecodable.jsonl"
    p.write_text("".join(json.dumps({"partition": 0, "offset": i, "timestamp": 1789372800683, "key": "21_5_x_k",
                                     "value": {"bogus": i}}) + "\n" for i in range(3)), encoding="utf-8")
    log = ai.load(p)
    rt = log.runtime()
    assert rt.name == "unknown" and rt.model == "0.4" and rt.default_rule == "original"
    assert "none of the 3 records decoded" in rt.evidence
    assert main(["summary", str(p), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runtime"]["name"] == "unknown"
    assert main(["summary", str(p)]) == 0
    out = capsys.readouterr().out
    assert "unknown (inferred: none of the 3 records decoded; modelled as 0.4" in " ".join(out.split())
    assert main(["reconstruct", str(p), "--json"]) == 0                 # the verbs run on the labelled model
    assert json.loads(capsys.readouterr().out)["runtime"]["model"] == "0.4"


def test_a_timestamp_no_calendar_holds_does_not_break_showing_the_log(tmp_path: Path) -> None:
    lines = (LOGS / "N04.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["timestamp"] = 10 ** 17                                         # ms: the year 3170843
    p = tmp_path / "far.jsonl"
    p.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    log = ai.load(p)
    assert repr(log.records) and log.records._repr_html_()
    assert log.records["timestamp"].isna().sum() == 1 and log.records["timestamp"].notna().sum() == len(lines) - 1
    assert log.raw.timestamp_ms[0] == 10 ** 17                            # the value itself is kept
    assert log.errors.empty


def _empty_dumps(tmp_path: Path) -> list[Path]:
    empty, blank, kcat = tmp_path / "empty.jsonl", tmp_path / "blank.jsonl", tmp_path / "empty.kcat.jsonl"
    empty.write_bytes(b"")
    blank.write_bytes(b"\n  \n\n")                          # only blank lines
    kcat.write_bytes(b"")
    parquet = ai.sources.write_parquet(ai.load(empty), tmp_path / "empty.parquet")   # a Parquet dump of no rows
    return [empty, blank, kcat, parquet]


def test_an_empty_dump_loads_and_says_it_holds_no_records(tmp_path: Path) -> None:
    for path in _empty_dumps(tmp_path):
        log = ai.load(path)                                 # an empty topic is legitimate: the load succeeds
        assert len(log.records) == 0
        assert repr(log) == f"<ActionStateLog empty: no records from file {str(path)!r}>"
        records = next(f for f in ai.log.summary_facts(log.summary()) if f.name == "records")
        assert records.text == "0: the source is empty (the wrong file, topic or offsets, or a dump that failed?)"


@pytest.mark.parametrize("verb", [["summary"], ["summary", "--json"], ["export", "-o", "{out}"], ["reconstruct"],
                                  ["markers"], ["report", "-o", "{out}.html"]])
def test_a_verb_given_an_empty_dump_exits_2_with_one_line(tmp_path: Path, verb: list[str],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # nothing to analyse: as for a business key without records or an empty trace, one line and exit 2 (it
    # printed a summary of zeros, or an empty reconstruction, and exited 0)
    for path in _empty_dumps(tmp_path):
        out = tmp_path / "out.jsonl"
        argv = [verb[0], str(path), *(a.format(out=out) for a in verb[1:])]
        assert main(argv) == 2, argv
        said = capsys.readouterr()
        size = path.stat().st_size
        assert said.out == "" and said.err == (
            f"agent-inspect: {path} holds no records ({size:,} {'byte' if size == 1 else 'bytes'}): is it the right "
            "file, and did the dump that wrote it finish?\n")
        assert not out.exists()


def test_scan_of_an_empty_dump_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert main(["scan", str(empty), "--workers", "1", "--no-progress"]) == 2
    said = capsys.readouterr()
    assert said.out == "" and said.err.splitlines()[-1] == (
        f"agent-inspect: {empty} holds no records (0 bytes): is it the right file, and did the dump that wrote it "
        "finish?")


def _empty_traces(tmp_path: Path) -> list[Path]:
    empty, blank = tmp_path / "empty.trace.log", tmp_path / "blank.trace.log"
    empty.write_bytes(b"")
    blank.write_bytes(b"\n  \n\n")                          # only blank lines
    return [empty, blank]


@pytest.mark.parametrize("verb", [["trace", "summary", "{trace}"], ["trace", "summary", "{trace}", "--json"],
                                  ["markers", str(LOGS / "N04.jsonl"), "--trace", "{trace}"],
                                  # these said "the trace holds no record", naming no file
                                  ["verify", str(LOGS / "N04.jsonl"), "--trace", "{trace}"],
                                  ["explain", str(LOGS / "N04.jsonl"), "--key", "k", "--seq", "5", "--action", "IA",
                                   "--trace", "{trace}"],
                                  ["report", str(LOGS / "N04.jsonl"), "--trace", "{trace}", "-o", "{out}"],
                                  ["otel", str(LOGS / "N04.jsonl"), "--trace", "{trace}", "-o", "{out}"]])
def test_a_verb_given_an_empty_trace_exits_2_with_one_line(tmp_path: Path, verb: list[str],
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    # as verify, explain, report and otel stop on an empty trace (trace summary printed a summary of zeros and
    # exited 0; markers ranked its candidates with a note)
    for path in _empty_traces(tmp_path):
        assert main([a.format(trace=path, out=tmp_path / "out") for a in verb]) == 2, verb
        said = capsys.readouterr()
        size = path.stat().st_size
        assert said.out == "" and said.err == (
            f"agent-inspect: {path} holds no Trace Log record ({size:,} {'byte' if size == 1 else 'bytes'}): is it "
            "the right file, and did the job write its trace there?\n")


def test_summary_shows_where_and_why_the_first_bad_records_failed(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # it printed only "records that do not decode  4": the CLI had no way to see which lines, or why
    lines = (LOGS / "G01.jsonl").read_bytes().splitlines()
    good = json.loads(lines[1])
    bad_value = json.dumps({**good, "offset": 10, "value": [1, 2]}).encode()
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join([lines[0], b"[1,2]", bad_value, b"oops", b'{"key":"k","value":{}}', *lines[2:]])
                     + b"\n")
    assert main(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    assert "records that do not decode              4" in out
    # "log.errors lists each" was API wording a terminal user cannot run: the CLI says what to run, in Python
    assert (f"\nfirst records that do not decode (3 of 4; in Python, agent_inspect.load({str(path)!r}).errors "
            "lists each):\n"
            "  line 2: bad record envelope: Expected `object`, got `array`\n"
            "  line 4: not valid JSON: ") in out
    assert "  partition 0, offset 10: value: not an ActionState (a JSON array, not an object)" not in out  # 4th
    assert main(["summary", str(path), "--key", "k"]) == 0
    assert "agent_inspect.load(" + repr(str(path)) + ", business_keys=['k']).errors" in capsys.readouterr().out
    assert main(["summary", str(LOGS / "G01.jsonl")]) == 0
    assert "first records that do not decode" not in capsys.readouterr().out


def test_summary_explain_names_no_api_a_shell_cannot_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # --explain said "(see log.errors)" under the count: words for Python, in a terminal; the notebook keeps them
    lines = (LOGS / "G01.jsonl").read_bytes().splitlines()
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join([lines[0], b"oops", *lines[1:]]) + b"\n")
    assert main(["summary", str(path), "--explain"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "log.errors" not in out
    assert "records that do not decode 1 rows whose key or value could not be decoded (in Python, the loaded " \
           "log's .errors lists each)" in out
    facts = {f.name: f.explanation for f in ai.log.summary_facts(ai.load(path).summary())}
    assert facts["errors"] == "rows whose key or value could not be decoded (see log.errors)"


def test_a_record_that_did_not_decode_says_why_in_its_reason(tmp_path: Path) -> None:
    # its reconstruct reason said "see log.errors", which names no reason, and no command a shell user can run
    lines = (LOGS / "G01.jsonl").read_bytes().splitlines()
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join([lines[0], json.dumps({**json.loads(lines[1]), "value": [1, 2]}).encode(),
                                 *lines[2:]]) + b"\n")
    log = ai.load(path)
    records = ai.reconstruct(log).records
    assert list(records.loc[records["status"] == "error", "reason"]) == [
        f"the record did not decode: {log.errors['error'].iloc[0]}"]
    assert log.errors["error"].iloc[0] == "value: not an ActionState (a JSON array, not an object)"
