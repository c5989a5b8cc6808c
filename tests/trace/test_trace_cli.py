"""``agent-inspect trace summary`` and ``agent-inspect verify``: JSON output and exit codes, run as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent_inspect.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "sample_logs"
ADDENDUM = Path(__file__).parent / "fixtures" / "addendum_3_5.log"


def test_the_subcommands_are_registered() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert {"trace", "verify"} <= set(sub.choices)


def test_trace_summary_of_the_addendum_examples(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "summary", str(ADDENDUM), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["records"] == 9 and s["errors"] == []
    assert s["by_entity_type"] == {"action": 3, "event": 3, "llm": 3}
    assert s["by_status"]["llm"] == {"started": 1, "success": 2}
    assert s["business_keys"] == ["order-1001", "user-42"] and s["agents"] == ["OrderAgent"]
    assert s["jobs"] == [] and s["subtasks"] == []
    assert main(["trace", "summary", str(ADDENDUM)]) == 0
    text = capsys.readouterr().out
    assert "action: reused 1, started 1, success 1" in text and "errors: 0" in text


def test_trace_summary_lists_bad_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "traces-job1-op-2.log"
    p.write_text(ADDENDUM.read_text(encoding="utf-8") + '{"timestamp": "2026-\n', encoding="utf-8")
    assert main(["trace", "summary", str(p), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["errors"] == [{"file": str(p), "line": 10, "reason": "truncated JSON object (the line ends inside it)"}]
    assert s["jobs"] == ["job1"] and s["subtasks"] == [{"job_id": "job1", "task_name": "op", "subtask_id": 2}]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent_inspect", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_verify_a_sample_exits_0_with_every_task_agreeing() -> None:
    out = _cli("verify", "sample_logs/N04.jsonl", "--trace", "sample_logs/N04.trace.log",
               "--markers", "@sample_logs/N04.markers.json", "--json")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["agree"] is True and d["rule"] == "original" and d["store_flavour"] == "auto" and not d["what_if"]
    assert d["runtime"] == "0.4"
    assert d["tasks"] and all(t["agree"] for t in d["tasks"])
    assert {t["observed"] for t in d["tasks"]} == {"REUSE", "RERUN"}


def test_verify_the_inconsistent_variant_exits_1_and_names_the_cause() -> None:
    out = _cli("verify", "sample_logs/N04.jsonl", "--trace", "sample_logs/N04.fixed-rule.trace.log",
               "--markers", "@sample_logs/N04.markers.json", "--json")
    assert out.returncode == 1, out.stderr
    d = json.loads(out.stdout)
    assert d["agree"] is False and d["causes"] == {"wrong-rule": 2}
    assert d["best"]["rule"] == "fixed"
    assert all("rule fixed" in t["explanation"] for t in d["tasks"] if not t["agree"])
    text = _cli("verify", "sample_logs/N04.jsonl", "--trace", "sample_logs/N04.fixed-rule.trace.log",
                "--markers", "@sample_logs/N04.markers.json")
    assert text.returncode == 1 and text.stdout.startswith("DISAGREE:") and "[wrong-rule]" in text.stdout
    # the same trace, checked against the rule it was recorded under
    assert main(["verify", str(LOGS / "N04.jsonl"), "--trace", str(LOGS / "N04.fixed-rule.trace.log"),
                 "--markers", f"@{LOGS / 'N04.markers.json'}", "--rule", "fixed", "--json"]) == 0


def test_verify_bad_usage_and_unreadable_input_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(LOGS / "N04.jsonl"), "--trace", str(tmp_path / "none.log")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("agent-inspect:") and "does not exist" in err and "\n" not in err
    with pytest.raises(SystemExit) as exc:
        main(["verify", str(LOGS / "N04.jsonl"), "--trace", str(ADDENDUM), "--runtime", "v9"])
    assert exc.value.code == 2
    capsys.readouterr()
    assert main(["trace", "summary", str(tmp_path)]) == 2
    assert "no trace files" in capsys.readouterr().err


def test_verify_infer_ranks_rules_and_runtimes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(LOGS / "G01.jsonl"), "--trace", str(LOGS / "G01.trace.log"),
                 "--markers", f"@{LOGS / 'G01.markers.json'}", "--infer", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["ranking"] and d["best"]["disagree"] == 0
    assert {r["name"] for r in d["ranking"]} >= {"original", "fixed", "original:kafka-k1"}


def test_verify_ranking_does_not_call_an_undetermined_task_a_disagreement(capsys: pytest.CaptureFixture[str]) -> None:
    # G02's trace cannot decide one task (agent-model); the ranking below the verdict must not say "1 disagree"
    assert main(["verify", str(LOGS / "G02.jsonl"), "--trace", str(LOGS / "G02.trace.log"),
                 "--markers", f"@{LOGS / 'G02.markers.json'}"]) == 3
    out = capsys.readouterr().out
    assert out.startswith("UNDETERMINED:") and "rules and store flavours by agreement:" in out
    assert "  original: 2 of 3 tasks agree, 0 disagree, 1 undetermined\n" in out


def test_verify_against_another_jobs_trace_says_so_and_prints_no_nan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(LOGS / "N04.jsonl"), "--trace", str(LOGS / "production.trace.log"),
                 "--markers", f"@{LOGS / 'N04.markers.json'}"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("DISAGREE: most likely another job's trace: the trace and the log share no business key")
    trace_only = [line for line in out.splitlines() if "[invisible-reuse]" in line or "[trace-only]" in line]
    assert trace_only and all("nan" not in line and "<NA>" not in line for line in trace_only)
    assert "predicted nothing" in trace_only[0]


def test_trace_summary_text_says_when_no_file_names_a_subtask(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "summary", str(LOGS / "N04.trace.log")]) == 0
    assert "jobs: (not named); subtasks: (not named); agents: N04-agent" in capsys.readouterr().out


def test_verify_ranking_lists_every_tied_configuration_it_names(capsys: pytest.CaptureFixture[str]) -> None:
    # N04's fixed-rule trace: the verdict names 6 tied configurations; the list under it showed the first 5, dropping
    # original:fluss-k1 and the chosen rule's own row without a word
    assert main(["verify", str(LOGS / "N04.jsonl"), "--trace", str(LOGS / "N04.fixed-rule.trace.log"),
                 "--markers", f"@{LOGS / 'N04.markers.json'}"]) == 1
    out = capsys.readouterr().out
    assert "each of 6 tied configurations" in out
    listing = out.split("rules and store flavours by agreement:\n", 1)[1].splitlines()
    assert len(listing) == 7
    assert "  original:fluss-k1: 4 of 4 tasks agree, 0 disagree" in listing
    assert listing[-1] == "  … and 2 more (--json lists them)"
