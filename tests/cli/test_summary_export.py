"""``agent-inspect summary`` and ``agent-inspect export`` on real files and a real (tansu) Kafka topic."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_inspect.cli import main
from agent_inspect.cli._summary import _IN_A_SHELL
from agent_inspect.codec import (
    ActionState,
    CallResult,
    Event,
    encode_action_state,
    event_uuid,
    format_state_key,
    name_action_uuid,
)
from agent_inspect.log import ActionStateLog, load_file, summary_facts
from agent_inspect.sources import RawBatch, SourceInfo, write_jsonl

ACT = name_action_uuid("act")


def records() -> list[tuple[str, bytes | None]]:
    out: list[tuple[str, bytes | None]] = []
    for user in ("user-1", "user-2", "user-3"):
        attrs = {"input": user}
        task = Event.new("_input_event", attrs)
        k = format_state_key("K1", seq=1, event_uuid=event_uuid(attrs), action_uuid=ACT, key_text=user)
        out.append((k, encode_action_state(ActionState(task_event=task))))
        out.append((k, encode_action_state(ActionState(
            task_event=task, call_results=(CallResult("m.f", "d", "gAWV", None, "PENDING"),)))))
        out.append((k, encode_action_state(ActionState(task_event=task, completed=True))))
    out.append(("broken-key", b"{}"))
    out.append((out[0][0], None))
    return out


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    batch = RawBatch()
    for offset, (k, v) in enumerate(records()):
        batch.append(0, offset, 1767225600000 + offset, k.encode(), v)
    log = ActionStateLog.from_raw(batch, SourceInfo(kind="kafka", location="kafka://h:9092/t", topic="t"))
    return write_jsonl(log, tmp_path / "dump.jsonl")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_summary_json(dump: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "summary", str(dump), "--json")
    assert code == 0 and err == ""
    s = json.loads(out)
    assert s["records"] == 11 and s["errors"] == 1 and s["business_keys"] == 3 and s["partitions"] == [0]
    assert s["key_formats"] == {"K1": 10} and s["completed"] == 3 and s["tombstones"] == 1
    assert sum(s["value_formats"].values()) == 9          # `{}` under the broken key is no ActionState


def test_summary_text_and_key_filter(dump: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "summary", str(dump))
    assert code == 0
    values = _values(out)
    assert values["records"] == "11" and values["state-key formats"] == "K1: 10"
    assert values["records that do not decode"] == "1" and values["key hazards"] == "—"
    code, out, _ = run(capsys, "summary", str(dump), "--key", "user-2", "--json")
    s = json.loads(out)  # records whose key does not parse cannot be attributed, so they stay
    assert code == 0 and (s["records"], s["errors"], s["business_keys"]) == (4, 1, 1)


def _values(text: str) -> dict[str, str]:
    """label -> value of ``summary`` text: a label starts at column 0, its value at the shared column (wrapped
    values go on at that column; explanations are indented further)."""
    lines = text.rstrip("\n").splitlines()
    column = len(lines[0]) - len(lines[0][6:].lstrip())      # the first line is "source  <kind> <location>"
    values: dict[str, str] = {}
    for line in lines:
        if not line.startswith(" "):
            label = line[:column].strip()
            values[label] = line[column:]
        elif not line.startswith(" " * (column + 1)):
            values[label] += " " + line.strip()
    return values


@pytest.mark.parametrize("sample", ["production", "production_v4"])
def test_summary_text_names_every_field_as_the_views_do(sample: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The terminal summary uses the views' and report's labels and explanations (those naming Python API in a
    shell's words), never the machine names."""
    path = Path(__file__).resolve().parents[2] / "sample_logs" / f"{sample}.jsonl"
    code, out, err = run(capsys, "summary", str(path))
    assert code == 0 and err == ""
    facts = summary_facts(load_file(path).summary())
    assert _values(out) == {"source": f"file {path}", **{f.label: f.text for f in facts}}
    assert not any(f.explanation in out for f in facts if f.explanation)   # explanations on request only
    code, out, err = run(capsys, "summary", str(path), "--explain")
    assert code == 0 and err == ""
    values = _values(out)
    assert list(values) == ["source"] + [f.label for f in facts]
    lines = out.splitlines()
    for f in facts:
        assert values[f.label] == f.text
        at = next(i for i, line in enumerate(lines) if line.startswith(f.label + " "))
        below = " ".join(line.strip() for line in lines[at + 1:] if line.startswith(" ") or not line)
        explanation = _IN_A_SHELL.get(f.name, f.explanation)
        assert below.replace(" ", "").find(explanation.replace(" ", "")) >= 0, f.name
    for name in ("value_formats_by_lineage_rule", "key_flags", "flagged_records", "flagged_keys", "key_formats",
                 "root_records", "value_formats_inferred"):
        assert name not in out
    assert all(len(line) <= 100 for line in lines)
    code, out, _ = run(capsys, "summary", str(path), "--json")   # --json keeps the machine names
    assert set(json.loads(out)) == {"source", *(f.name for f in facts)}


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_export_keeps_exact_records(dump: Path, tmp_path: Path, suffix: str,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / f"copy{suffix}"
    code, out, err = run(capsys, "export", str(dump), "-o", str(target), "--json")
    assert code == 0 and err == ""
    assert json.loads(out) == {"output": str(target), "format": suffix[1:], "records": 11, "errors": 1}
    original, copy = load_file(dump), load_file(target)
    assert copy.raw.key == original.raw.key and copy.raw.value == original.raw.value
    assert copy.records["state_key"].tolist() == original.records["state_key"].tolist()


def test_bad_usage_and_unreadable_input_exit_2(dump: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "export", str(dump), "-o", str(tmp_path / "x.csv"))
    assert code == 2 and err.count("\n") == 1 and "*.parquet or *.jsonl" in err
    code, _, err = run(capsys, "summary", str(tmp_path / "missing.jsonl"))
    assert code == 2 and err.count("\n") == 1 and "missing.jsonl" in err
    with pytest.raises(SystemExit) as exc:
        main(["export", str(dump)])  # -o is required
    assert exc.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_console_script_entry_point(dump: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "agent_inspect", "summary", str(dump), "--json"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["records"] == 11
    proc = subprocess.run([sys.executable, "-m", "agent_inspect", "summary", "nope://x"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "unknown source scheme" in proc.stderr


@pytest.fixture(scope="module")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from tests.support.tansu import start_tansu

    broker = start_tansu(log_path=tmp_path_factory.mktemp("tansu") / "tansu.log")
    yield broker.bootstrap
    broker.stop()


@pytest.mark.kafka
def test_summary_and_export_from_kafka(kafka_bootstrap: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.tansu import create_topic, produce_like_upstream

    topic = create_topic(kafka_bootstrap, 4)
    produce_like_upstream(kafka_bootstrap, topic, records()[:-2], num_partitions=4)
    url = f"kafka://{kafka_bootstrap}/{topic}"
    code, out, err = run(capsys, "summary", url, "--json")
    assert code == 0, err
    s = json.loads(out)
    assert s["records"] == 9 and s["errors"] == 0 and s["business_keys"] == 3
    assert s["source"]["kind"] == "kafka" and s["completed"] == 3
    code, out, err = run(capsys, "summary", url)
    assert code == 0, err
    values = _values(out)
    assert values["source"] == f"kafka {url} (topic {topic})"
    assert values["records"] == "9" and values["completed records"] == "3" and values["business keys"] == "3"
    target = tmp_path / "topic.parquet"
    code, out, err = run(capsys, "export", url, "-o", str(target))
    assert code == 0, err
    assert load_file(target).summary()["records"] == 9


def test_summary_of_the_v4_sample_reports_v4_and_the_runtime(capsys: pytest.CaptureFixture[str]) -> None:
    sample = Path(__file__).resolve().parents[2] / "sample_logs" / "subagents_v4.jsonl"
    code, out, err = run(capsys, "summary", str(sample), "--json")
    assert code == 0 and err == ""
    s = json.loads(out)
    assert s["value_formats"] == {"V4": s["records"]} and s["key_formats"] == {"K2": s["records"]}
    assert s["runtime"]["name"] == "main" and s["runtime"]["inferred"] is True
    assert "subagentResultEvents" in s["runtime"]["evidence"] and s["runtime"]["default_rule"] == "original"
    log = load_file(sample)
    done = [log.value(p) for p in log.records.index[log.records["subagent_result_count"].fillna(0) > 0]]
    assert done and all(e.upstream_event_id is None for st in done for e in st.result_events)
    code, out, _ = run(capsys, "summary", str(sample))
    assert "main (inferred: " in out


def test_summary_partitions_are_the_records_not_the_unreadable_lines(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    lines = (Path(__file__).resolve().parents[2] / "sample_logs" / "N04.jsonl").read_text(encoding="utf-8").splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:4] + [lines[4][:50], "not json"]) + "\n", encoding="utf-8")
    code, out, _ = run(capsys, "summary", str(cut), "--json")
    s = json.loads(out)
    assert code == 0 and s["records"] == 6 and s["errors"] == 2 and s["partitions"] == [0]


def test_a_key_with_no_records_is_an_error_not_an_empty_summary(capsys: pytest.CaptureFixture[str]) -> None:
    production = str(Path(__file__).resolve().parents[2] / "sample_logs" / "production.jsonl")
    code, out, err = run(capsys, "summary", production, "--key", "user-19")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "business key 'user-19' has no records" in err
    code, out, err = run(capsys, "summary", production, "--key", "user-0019", "--key", "user-19", "--json")
    assert code == 0 and json.loads(out)["business_keys"] == 1
    assert "no records of business key 'user-19'" in err


def test_summary_counts_have_thousands_separators_and_partitions_do_not(capsys: pytest.CaptureFixture[str]) -> None:
    """Counts read as the evidence beside them does (``1,045``); partition numbers are identifiers, kept bare."""
    import agent_inspect as ai

    code, out, _ = run(capsys, "summary", str(ai.samples.path("production")))
    values = _values(out)
    assert code == 0 and values["records"] == "2,989" and values["completed records"] == "1,045"
    assert values["state-key formats"] == "K1.5: 2,989" and values["partitions"] == "0, 1, 2, 3 (4 partitions)"


def test_one_partition_does_not_read_as_none(capsys: pytest.CaptureFixture[str]) -> None:
    """subagents_v4 is one partition, numbered 0: its summary read "partitions 0", as if it had none."""
    import agent_inspect as ai

    code, out, _ = run(capsys, "summary", str(ai.samples.path("subagents_v4")))
    assert code == 0 and _values(out)["partitions"] == "0 (1 partition)"
    assert ai.log.plain_text([]) == "—"
