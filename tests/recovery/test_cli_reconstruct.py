"""``agent-inspect reconstruct`` on a dump file written by the sources' own writer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from recovery_logs import LogBuilder, inp, work

import agent_inspect as ai
from agent_inspect.cli import main
from agent_inspect.sources import write_jsonl


def _n04_file(tmp_path: Path) -> Path:
    b = LogBuilder()
    (w,) = b.run("k", 5, "IA", inp("A", "a1"), outs=[work("a", "w1")])
    b.run("k", 5, "WA", w, upstream="a1")
    (w,) = b.run("k", 6, "IA", inp("B", "b1"), outs=[work("b", "w2")])
    b.run("k", 6, "WA", w, upstream="b1")
    return write_jsonl(b.log(), tmp_path / "n04.jsonl")


def test_json_report_original_vs_fixed(tmp_path: Path, capsys) -> None:
    path = _n04_file(tmp_path)
    assert main(["reconstruct", str(path), "--rule", "original", "--json"]) == 0
    orig = json.loads(capsys.readouterr().out)
    assert orig["rule"] == "original" and orig["totals"]["evicted"] == 2
    assert [d["kind"] for d in orig["divergences"]] == ["count>1"]
    assert [r["pos"] for r in orig["evicted"]] == [5, 7] and orig["evicted"][0]["divergence_id"] == 0
    assert orig["ledger"] is not None or orig["ledger_error"]
    assert main(["reconstruct", str(path), "--json", "--markers", '[{"0": 4}]', "--no-ledger", "--rule", "fixed"]) == 0
    fixed = json.loads(capsys.readouterr().out)
    assert fixed["rule"] == "fixed" and fixed["markers"] == {"0": 4} and fixed["totals"]["evicted"] == 0
    assert fixed["status"]["outside"] == 4 and fixed["ledger"] is None
    # no --rule: the rule the inferred runtime ships (the original rule; fixed is a what-if)
    assert main(["reconstruct", str(path), "--json", "--no-ledger"]) == 0
    default = json.loads(capsys.readouterr().out)
    assert default["rule"] == "original" and default["runtime"]["inferred"] is True
    assert default["runtime"]["default_rule"] == "original" and default["runtime"]["evidence"]
    assert main(["reconstruct", str(path), "--json", "--no-ledger", "--runtime", "0.3"]) == 0
    given = json.loads(capsys.readouterr().out)
    assert given["runtime"]["name"] == "0.3" and given["runtime"]["inferred"] is False


def test_text_output_and_bad_usage(tmp_path: Path, capsys) -> None:
    path = _n04_file(tmp_path)
    assert main(["reconstruct", str(path), "--rule", "original", "--no-ledger"]) == 0
    out = capsys.readouterr().out
    assert "divergence 0 [count>1] k@5" in out and "evicted 2" in out
    assert main(["reconstruct", str(path), "--markers", "{nope"]) == 2
    assert "--markers is not valid JSON" in capsys.readouterr().err
    assert main(["reconstruct", str(path), "--rule", "nope"]) == 2
    assert "unknown rule" in capsys.readouterr().err
    proc = subprocess.run([sys.executable, "-m", "agent_inspect", "reconstruct", str(tmp_path / "missing.jsonl")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"


def test_text_names_sub_agent_calls_counts_tasks_and_says_when_nothing_runs_again(capsys) -> None:
    production = str(SAMPLES / "production.jsonl")
    assert main(["reconstruct", production, "--markers", f"@{SAMPLES / 'production.markers.json'}"]) == 0
    out = capsys.readouterr().out
    # the 9 sub-agent calls under one line with the name a reader knows, not 9 lines of call ids; no durable call
    assert "  sub-agent reviewer (sub-agent call from review): 9\n" in out and "#" not in out
    assert "tasks: 643 (REUSE 169, RERUN 464, NOT-DISPATCHED 10)\n" in out
    g02 = str(SAMPLES / "G02.jsonl")
    assert main(["reconstruct", g02, "--markers", f"@{SAMPLES / 'G02.markers.json'}"]) == 0
    out = capsys.readouterr().out
    assert "re-execution ledger: nothing runs again\n" in out


def test_text_says_when_the_restore_fails_and_never_ends_a_line_with_a_comma(tmp_path: Path, capsys) -> None:
    assert main(["reconstruct", str(SAMPLES / "P01.jsonl"), "--markers", f"@{SAMPLES / 'P01.markers.json'}"]) == 0
    out = capsys.readouterr().out
    assert "tasks: 1 (FAIL 1)\nthe restore fails at a lookup (FAIL)" in out
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    assert main(["reconstruct", str(empty)]) == 2         # nothing to reconstruct: one line, as every verb says
    said = capsys.readouterr()
    assert said.out == "" and said.err.count("\n") == 1 and "holds no records (0 bytes)" in said.err
    assert "ReplayPlan" not in said.err     # no advice a command-line user cannot follow
    settings = ai.Recovery.for_log(ai.load(empty))
    # an unknown runtime is modelled as the current release: the provenance names that one, not "unknown ships"
    assert settings.provenance["rule"] == "original: the rule 0.4 (the model of an unknown runtime) ships"


def test_a_fresh_start_counts_the_tasks_the_prediction_replays(capsys) -> None:
    """``--markers '[]'`` rebuilds nothing, so the rebuild window holds no task, but the restore replays every
    input: the task counts are the prediction's, as its ledger is."""
    n04 = str(SAMPLES / "N04.jsonl")
    assert main(["reconstruct", n04, "--markers", "[]"]) == 0
    out = capsys.readouterr().out
    assert "tasks: 4 (RERUN 4)\n" in out and "  body IA: 2\n" in out
    assert main(["reconstruct", n04, "--markers", "[]", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["outcomes"]["RERUN"] == 4


def test_a_fresh_start_without_the_ledger_does_not_report_zero_tasks(capsys) -> None:
    production = str(SAMPLES / "production.jsonl")
    assert main(["reconstruct", production, "--markers", "[]"]) == 0
    assert "tasks: 940 (RERUN 940)\n" in capsys.readouterr().out      # the prediction's count
    assert main(["reconstruct", production, "--markers", "[]", "--no-ledger"]) == 0
    out = capsys.readouterr().out
    assert "tasks: 0" not in out and "tasks: not computed (--no-ledger skips the prediction" in out
    assert main(["reconstruct", production, "--markers", "[]", "--no-ledger", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["outcomes"] is None


def test_counts_are_written_with_thousands_separators(capsys) -> None:
    """The record and status counts read like every other count of the CLI (``2,989 records``, not ``2989``)."""
    path = ai.samples.path("production")
    assert main(["reconstruct", str(path), "--markers", str(path).replace(".jsonl", ".markers.json"),
                 "--rule", "fixed"]) == 0
    out = capsys.readouterr().out
    assert "rule fixed (what-if; 0.4 ships original): 2,989 records, superseded 1,194, outside 1,152" in out
