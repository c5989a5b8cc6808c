"""The VerificationView at model level (the real-browser check is tests/browser/test_verification_browser.py)."""

from __future__ import annotations

import json
from pathlib import Path

import agent_inspect as ai
from agent_inspect import samples
from agent_inspect.sources import write_trace
from agent_inspect.widgets import VerificationView

LOGS = Path(__file__).resolve().parents[2] / "sample_logs"


def _verify(trace: Path) -> ai.trace.Verification:
    restore = json.loads((LOGS / "N04.markers.json").read_text(encoding="utf-8"))["restore"]
    return ai.verify(ai.load(LOGS / "N04.jsonl"), trace, markers=samples.markers("N04"), restore=restore)


def test_inspect_opens_the_view_and_selection_shows_the_joined_records() -> None:
    v = _verify(LOGS / "N04.fixed-rule.trace.log")
    view = ai.inspect(v)
    assert isinstance(view, VerificationView) and "ai-verification" in view._dom_classes
    assert "disagrees" in view.summary.value and "fixed" in view.summary.value
    names = {t.name for t in view.figure.data}
    assert {"agree", "disagree"} <= names and any(str(n).startswith("predicted ") for n in names)   # colour and shape legends
    bad = int(v.tasks.index[~v.tasks["agree"]][0])
    view.select(bad)
    assert view.rows.value == bad
    html = view.detail.value
    assert "wrong-rule" in html and "rule fixed" in html
    assert "ai-verification-trace" in html and "reused" in html          # the trace records of the execution
    view.only_disagree.value = True
    assert len(view.rows.options) == int((~v.tasks["agree"]).sum())


def test_a_reused_task_shows_its_action_state_record() -> None:
    v = _verify(LOGS / "N04.trace.log")
    view = VerificationView(v)
    reused = int(v.tasks.index[v.tasks["observed"] == "REUSE"][0])
    view.select(reused)
    assert "ai-verification-records" in view.detail.value and "action-state records joined" in view.detail.value


def test_untrusted_text_is_escaped(tmp_path: Path) -> None:
    recs = [json.loads(x) for x in (LOGS / "N04.trace.log").read_text(encoding="utf-8").splitlines()]
    extra = dict(recs[1])
    extra.update(businessKey="<img src=x onerror=alert(1)>", executionId="e-1", entityName="<b>A</b>")
    v = _verify(write_trace([*recs, extra], tmp_path / "x.log"))
    view = VerificationView(v)
    i = int(v.tasks.index[v.tasks["key"] == "<img src=x onerror=alert(1)>"][0])
    view.select(i)
    for html in (view.summary.value, view.detail.value):
        assert "<img" not in html and "<b>A</b>" not in html
    ys = [y for t in view.figure.data for y in (t.y or ())]
    assert "<img src=x onerror=alert(1)>" not in ys and any("&lt;img" in y for y in ys)
    hover = [h for t in view.figure.data for h in (t.hovertext or ())]
    assert not any("<img" in h for h in hover)


def test_the_view_says_when_the_trace_cannot_tell() -> None:
    restore = json.loads((LOGS / "G02.markers.json").read_text(encoding="utf-8"))["restore"]
    v = ai.verify(ai.load(LOGS / "G02.jsonl"), LOGS / "G02.trace.log", markers=samples.markers("G02"), restore=restore)
    view = VerificationView(v)
    assert "cannot tell (undetermined)" in view.summary.value and "ai-undetermined" in view.summary.value
    assert "log-only agent" in view.summary.value
    unsure = int(v.tasks.index[v.tasks["verdict"] == "undetermined"][0])
    view.select(unsure)
    assert "cannot tell (undetermined) — agent-model" in view.detail.value
    assert "cannot tell (undetermined)" in v._repr_html_()


def test_the_best_explanation_counts_agreeing_tasks_and_calls_no_undetermined_one_a_disagreement() -> None:
    restore = json.loads((LOGS / "G02.markers.json").read_text(encoding="utf-8"))["restore"]
    v = ai.verify(ai.load(LOGS / "G02.jsonl"), LOGS / "G02.trace.log", markers=samples.markers("G02"), restore=restore)
    assert v.verdict == "undetermined" and v.counts()["disagree"] == 0
    summary = VerificationView(v).summary.value
    assert "2 of 3 tasks agree" in summary and "disagree" not in summary.split("configurations tie")[-1]
    nothing_decided = json.loads((LOGS / "N04.markers.json").read_text(encoding="utf-8"))["restore"]
    fixed = ai.verify(ai.load(LOGS / "N04.jsonl"), LOGS / "N04.fixed-rule.trace.log", markers=samples.markers("N04"),
                      restore=nothing_decided)
    assert "4 of 4 tasks agree" in VerificationView(fixed).summary.value
