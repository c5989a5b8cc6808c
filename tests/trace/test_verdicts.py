"""Three-valued verdicts through the CLI on every sample, and the same verdicts from the same traces shuffled
and shipped twice (log shippers keep no order across files and deliver at least once)."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect import samples
from agent_inspect.cli import main
from agent_inspect.trace import Verdict, load_trace, verify

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "sample_logs"
TRACED = sorted(p.name.removesuffix(".trace.log") for p in LOGS.glob("*.trace.log") if "-rule." not in p.name)
#: samples whose own trace holds a task the log cannot decide (G02: a re-executed action's children)
CANNOT_TELL = {"G02"}


def _cli(capsys: pytest.CaptureFixture[str], name: str, trace: Path, *extra: str) -> tuple[int, dict]:
    code = main(["verify", str(LOGS / f"{name}.jsonl"), "--trace", str(trace),
                 "--markers", f"@{LOGS / f'{name}.markers.json'}", "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_every_sample_with_a_trace_is_checked() -> None:
    assert {"N04", "G01", "G02", "production", "production_v4", "subagents_v4"} <= set(TRACED)


@pytest.mark.parametrize("name", TRACED)
def test_the_consistent_trace_agrees_or_says_why_it_cannot_tell(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _cli(capsys, name, LOGS / f"{name}.trace.log")
    if name in CANNOT_TELL:
        assert code == 3 and out["verdict"] == "undetermined", out["summary"]
        assert out["counts"]["disagree"] == 0 and out["counts"]["undetermined"] >= 1
        assert set(out["undetermined_causes"]) == {"agent-model"} and "cannot decide" in out["summary"]
        assert {t["verdict"] for t in out["tasks"]} == {"agree", "undetermined"}
    else:
        assert code == 0 and out["verdict"] == "agree", out["summary"]
        assert out["counts"] == {"agree": len(out["tasks"]), "disagree": 0, "undetermined": 0}


def test_undetermined_fails_under_strict_and_text_names_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = _cli(capsys, "G02", LOGS / "G02.trace.log", "--strict")
    assert code == 1
    code = main(["verify", str(LOGS / "G02.jsonl"), "--trace", str(LOGS / "G02.trace.log"),
                 "--markers", f"@{LOGS / 'G02.markers.json'}"])
    text = capsys.readouterr().out
    assert code == 3 and text.startswith("UNDETERMINED: the trace cannot decide 1 of")
    assert "\n  undetermined " in text
    # with the agent's model the same trace agrees: the verdict was about the log, not the job
    log = ai.load(LOGS / "G02.jsonl")
    restore = json.loads((LOGS / "G02.markers.json").read_text(encoding="utf-8"))["restore"]
    v = verify(log, LOGS / "G02.trace.log", markers=samples.markers("G02"), restore=restore,
               agent=samples.scenario("G02").agent)
    assert v.verdict == Verdict.AGREE


@pytest.mark.parametrize("name", sorted(samples.INCONSISTENT))
def test_the_fixed_rule_trace_disagrees_naming_wrong_rule(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    other = samples.INCONSISTENT[name]
    code, out = _cli(capsys, name, LOGS / f"{name}.{other}-rule.trace.log")
    assert code == 1 and out["verdict"] == "disagree"
    assert set(out["causes"]) == {"wrong-rule"} and "agrees fully under" in out["summary"]
    assert other in out["summary"].partition("agrees fully under")[2]
    code = main(["verify", str(LOGS / f"{name}.jsonl"), "--trace", str(LOGS / f"{name}.{other}-rule.trace.log"),
                 "--markers", f"@{LOGS / f'{name}.markers.json'}"])
    text = capsys.readouterr().out
    assert code == 1 and text.startswith("DISAGREE: ") and "[wrong-rule]" in text


def test_a_join_below_the_confidence_asked_for_is_undetermined(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _cli(capsys, "production", LOGS / "production.trace.log", "--confidence", "high")
    assert code == 3 and out["verdict"] == "undetermined" and out["confidence"] == "high"
    weak = [t for t in out["tasks"] if t["verdict"] == "undetermined"]
    assert weak and all(t["confidence"] != "high" for t in weak)
    assert {t["cause"] for t in weak} == {"weak-join"}
    assert all(t["verdict"] == "agree" for t in out["tasks"] if t["confidence"] == "high")


def _shipped(src: Path, dest: Path, seed: int) -> Path:
    """``src`` as a log shipper may deliver it: every line twice, in another order."""
    lines = src.read_text(encoding="utf-8").splitlines()
    mixed = lines + lines
    random.Random(seed).shuffle(mixed)
    dest.write_text("\n".join(mixed) + "\n", encoding="utf-8")
    return dest


def _verdicts(v: ai.trace.Verification) -> list[tuple[str, ...]]:
    t = v.tasks
    return sorted(zip(t["key"].astype(str), t["seq"].astype(str), t["action"].astype(str),
                      t["predicted"].astype(str), t["observed"].astype(str), t["verdict"].astype(str),
                      t["cause"].astype(str)))


@pytest.mark.parametrize("trace", [*(f"{n}.trace.log" for n in TRACED),
                                   *(f"{n}.{o}-rule.trace.log" for n, o in sorted(samples.INCONSISTENT.items()))])
def test_shuffled_and_duplicated_traces_give_the_same_verdicts(trace: str, tmp_path: Path) -> None:
    name = trace.split(".")[0]
    log = ai.load(LOGS / f"{name}.jsonl")
    restore = json.loads((LOGS / f"{name}.markers.json").read_text(encoding="utf-8"))["restore"]
    original = verify(log, LOGS / trace, markers=samples.markers(name), restore=restore)
    shipped_path = _shipped(LOGS / trace, tmp_path / "shipped.trace.log", seed=len(trace))
    shipped = load_trace(shipped_path)
    n = len((LOGS / trace).read_text(encoding="utf-8").splitlines())
    assert shipped.summary()["duplicates_dropped"] == n and len(shipped.records) == n
    assert shipped.errors.empty and not shipped.records["conflict"].any()
    again = verify(log, shipped, markers=samples.markers(name), restore=restore)
    assert again.verdict == original.verdict
    assert _verdicts(again) == _verdicts(original)


def test_a_call_difference_is_put_down_to_the_tasks_the_trace_cannot_decide(tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture[str]) -> None:
    # a truncated trace: no task disagrees, yet the note said the difference "follows from the disagreeing tasks"
    cut = tmp_path / "cut.trace.log"
    cut.write_bytes((LOGS / "N04.trace.log").read_bytes()[:3000])
    code, out = _cli(capsys, "N04", cut)
    assert code == 3 and out["counts"]["disagree"] == 0 and out["counts"]["undetermined"] == 1
    (note,) = [n for n in out["notes"] if n.startswith("durable llm calls executed")]
    assert note == "durable llm calls executed: predicted 1, the trace shows 0 (follows from the task the trace " \
                   "cannot decide)"
    both = verify(ai.load(LOGS / "production.jsonl"), LOGS / "production.trace.log",
                  markers=[{0: 248, 1: 245, 2: 215, 3: 99999}])
    assert both.counts()["disagree"] and both.counts()["undetermined"] == 1
    assert any(n.endswith("(follows from the disagreeing tasks and the one the trace cannot decide)")
               for n in both.notes)


def test_agreeing_tasks_with_other_call_counts_say_why_in_the_headline(capsys: pytest.CaptureFixture[str]) -> None:
    # "AGREE: all 643 tasks agree …, but the durable calls differ (205 predicted, 175 observed …)" read as a
    # contradiction: 30 chat tasks recorded a failed call and its retry, which the as-recorded agent plays back
    # while the job's replay called once
    code, out = _cli(capsys, "production", LOGS / "production.trace.log")
    assert code == 0 and out["verdict"] == "agree"
    assert "but the durable calls differ (205 predicted, 175 observed: llm calls executed): the as-recorded agent " \
           "repeats the log's calls, retries included; " in out["summary"]
    v = verify(ai.load(LOGS / "production.jsonl"), LOGS / "production.trace.log", markers=samples.markers("production"))
    given = replace(v, prediction=replace(v.prediction, recovery=v.prediction.recovery.replace(agent=object())))
    assert "(205 predicted, 175 observed: llm calls executed): the given agent's bodies call otherwise than the " \
           "job's;" in given.summary_text()
    assert "llm calls executed); " in replace(v, prediction=None).summary_text()     # no settings: no reason known
