"""``agent-inspect markers SOURCE [--trace PATH] [--json]``: candidates best first, each with its markers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect.cli import main
from agent_inspect.recovery import predict

LOGS = Path(__file__).resolve().parents[2] / "sample_logs"


def _restore(log: ai.ActionStateLog, markers: list[dict[int, int]]) -> list[tuple[object, ...]]:
    t = predict(log, markers=markers).tasks
    return list(zip(t["key"], t["seq"], t["action"], t["outcome"]))


def test_json_lists_candidates_best_first_and_the_first_predicts_the_true_restore(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["markers", str(LOGS / "production.jsonl"), "--trace", str(LOGS / "production.trace.log"),
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    cands = d["candidates"]
    assert [c["rank"] for c in cands] == list(range(1, len(cands) + 1))
    assert [c["confidence"] for c in cands] == sorted((c["confidence"] for c in cands), reverse=True)
    assert cands[0]["source"] == "trace" and cands[-1]["source"] == "fresh start" and cands[-1]["markers"] == []
    assert all(c["evidence"] and isinstance(c["markers"], list) for c in cands)
    log = ai.load(LOGS / "production.jsonl")
    first = [{int(p): o for p, o in m.items()} for m in cands[0]["markers"]]
    assert _restore(log, first) == _restore(log, ai.samples.markers("production"))


def test_text_says_where_each_candidate_came_from_and_how_to_pass_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["markers", str(LOGS / "production_v4.jsonl")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].startswith("1. refresh rows at a checkpoint (confidence 0.70")
    assert """--markers '[{"0": 354, "1": 258, "2": 614, "3": 290}]'""" in out
    assert "fresh start" in out


def test_a_trace_of_another_job_is_noted_not_fatal(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["markers", str(LOGS / "production.jsonl"), "--trace", str(LOGS / "N04.trace.log"), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert "trace" not in {c["source"] for c in d["candidates"]}
    assert any("another job" in n for c in d["candidates"] for n in c["notes"])


def test_unreadable_input_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["markers", str(tmp_path / "nope.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("agent-inspect:") and "\n" not in err
    assert main(["markers", str(LOGS / "N04.jsonl"), "--trace", str(tmp_path / "none")]) == 2
    assert "\n" not in capsys.readouterr().err.strip()


def test_a_checkpoint_comes_first_as_read(capsys: pytest.CaptureFixture[str]) -> None:
    """``--checkpoint``: the markers the job's savepoint holds lead the list, with confidence 1 and where they were read."""
    savepoint = "tests/fixtures/checkpoints/production/savepoint"
    assert main(["markers", "sample_logs/production.jsonl", "--checkpoint", savepoint, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)["candidates"][0]
    assert first["source"] == "checkpoint" and first["confidence"] == 1.0
    assert first["markers"] == [{"0": 248, "1": 245, "2": 215, "3": 444}]
    assert "savepoint 3" in first["evidence"]
