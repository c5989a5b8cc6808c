"""``agent-inspect diff`` and ``agent-inspect explain``: text, JSON, selectors, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"
N04 = str(SAMPLES / "N04.jsonl")
G01 = str(SAMPLES / "G01.jsonl")
G01_MARKERS = str(SAMPLES / "G01.markers.json")


def test_diff_rules_text_and_json(capsys):
    assert main(["diff", f"{N04}@original", f"{N04}@fixed"]) == 0
    out = capsys.readouterr().out
    assert "first divergence per key" in out and "expected (a): \"RERUN\"" in out and "outcome" in out
    assert main(["diff", f"{N04}@original", f"{N04}@fixed", "--key", "k", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["counts"]["changed"] == 2 and not data["empty"]
    assert data["first_divergences"][0]["seq"] == 6
    assert {c["path"] for p in data["pairs"] for c in p["changes"]} >= {"outcome"}


def test_diff_of_attempts_names_no_alignment_for_an_unmatched_execution(capsys):
    production = str(SAMPLES / "production.jsonl")
    assert main(["diff", f"{production}@attempt=1", f"{production}@attempt=2", "--key", "user-0019"]) == 0
    out = capsys.readouterr().out
    assert ": only in b\n" in out and "(aligned by action and event type)" in out
    assert "nan" not in out


def test_diff_of_copies_is_empty(capsys):
    assert main(["diff", N04, str(SAMPLES / "N04.parquet"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["empty"] is True
    assert main(["diff", N04, str(SAMPLES / "N04.kcat.jsonl")]) == 0
    assert "no difference" in capsys.readouterr().out


def test_two_alike_sides_are_named_once_each(capsys):
    # the API labels alike sides "a: …" / "b: …"; the CLI printed "a: a: …"
    assert main(["diff", f"{G01}@fixed", f"{G01}@fixed"]) == 0
    first, second = capsys.readouterr().out.splitlines()[:2]
    assert first == f"a: {G01}@predict=fixed (what-if; 0.4 ships original)"
    assert second.startswith(f"b: {G01}@predict=fixed") and not second.startswith("b: b: ")


def test_explain_text_and_json(capsys):
    args = ["explain", G01, "--markers", G01_MARKERS, "--key", "k", "--seq", "6", "--action", "IA",
            "--rule", "original", "--also", "fixed"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("IA at round 6 of k (input “C”): RERUN")
    assert "the lookup evicted k's rounds after 5 (count>1" in out and "under rule fixed (what-if; 0.4 ships original): REUSE" in out
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cause"] == "evict" and data["steps"][-1]["positions"]
    assert data["alternatives"] == {"fixed": "REUSE"}


@pytest.mark.parametrize("argv", [
    ["diff", f"{N04}@colour=red", N04],
    ["diff", f"{N04}@attempt=7", N04],
    ["explain", N04, "--key", "k", "--seq", "99", "--action", "IA"],
    ["explain", N04, "--key", "k", "--seq", "5", "--action", "IA", "--markers", "/nonexistent.json"],
])
def test_bad_input_is_one_line_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("agent-inspect:") and "\n" not in err and "Traceback" not in err


def test_explain_of_a_sub_agent_s_name_says_it_is_one_and_what_action_takes(capsys):
    argv = ["explain", str(SAMPLES / "subagents.jsonl"), "--markers", str(SAMPLES / "subagents.markers.json"),
            "--key", "order-1", "--seq", "6", "--action", "reviewer"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "order-1@6 CA1 (in sub-agent reviewer), order-1@6 CA2 (in sub-agent reviewer), order-1@6 P;" in err
    assert err.endswith("'reviewer' is a sub-agent, not an action (its tasks there: CA1, CA2): the action (--action) "
                        "takes an action name or UUID") and "\n" not in err


@pytest.mark.parametrize("side", ["{empty}", "{empty}@fixed", "{empty}@attempt=1"])
def test_a_side_with_no_records_exits_2_as_every_verb_says_it(side: str, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    # a zero-byte dump diffed as "only in b 3" with exit 0; under a rule it said "no root (_input_event) records …
    # pass a ReplayPlan with the inputs"
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert main(["diff", str(ai.samples.path("G01")), side.format(empty=empty)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{empty} holds no records (0 bytes)" in err


def test_a_log_against_a_rule_side_suggests_diffing_two_rules(capsys):
    # "diff X X@fixed --markers @m.json" compared the log as recorded with a prediction: 402 "only in a" rows and
    # every key's first divergence "seq 0 triage [only in a]", with nothing saying X@original X@fixed compares rules
    production = str(SAMPLES / "production.jsonl")
    markers = f"@{SAMPLES / 'production.markers.json'}"
    assert main(["diff", production, f"{production}@fixed", "--markers", markers]) == 0
    out = capsys.readouterr().out
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1, out
    assert f"diff '{production}@original' with '{production}@fixed'" in notes[0] and "as recorded" in notes[0]
    assert "pairs: same 643, changed 0, only in a 402, only in b 0" in out   # what diff computes is unchanged
    assert main(["diff", production, f"{production}@fixed", "--markers", markers, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["notes"] == [notes[0][len("note: "):]]
    assert main(["diff", f"{production}@original", f"{production}@fixed", "--markers", markers]) == 0
    assert "note: " not in capsys.readouterr().out                           # two rules: nothing to suggest


def test_python_diff_carries_the_same_note() -> None:
    log = ai.load(SAMPLES / "production.jsonl")
    markers = ai.samples.markers("production")
    d = ai.diff(log, ai.predict(log, rule="fixed", markers=markers))
    assert len(d.notes) == 1 and "'" + str(SAMPLES / "production.jsonl") + "@original' with" in d.notes[0]
    swapped = ai.diff(ai.predict(log, markers=markers), log)       # the shipped rule: suggest the other one
    assert "is the log as recorded" in swapped.notes[0] and "@original' with '" in swapped.notes[0]
    assert swapped.notes[0].rstrip().endswith("@fixed' under the same markers")
    assert ai.diff(log, log).notes == ()
