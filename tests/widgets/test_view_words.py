"""Views in words a user reads (issue #16 item 7, issue #12 item 7): stepper counters named after what they
count with a tooltip each, a per-key stepper filter, the runtime and its evidence in every view of a log,
re-runs first in the prediction table, and a rule other than the runtime's labelled a what-if."""

from __future__ import annotations

import html
import re

import pytest
from _widget_agents import IMG, recovery_executor

import agent_inspect as ai
from agent_inspect.executor import Counters
from agent_inspect.recovery import predict
from agent_inspect.widgets import LogBrowser, PredictionView, ReplayStepper, ResultInspector
from agent_inspect.widgets._counters import COUNTER_WORDS, counters_html

_COUNTER = re.compile(r'<span class="ai-counter" data-name="([^"]+)" title="([^"]+)"><b>(\d+)</b> ([^<]+)</span>')


def _counters(stepper: ReplayStepper) -> dict[str, tuple[str, int, str]]:
    return {name: (label, int(n), html.unescape(title))
            for name, title, n, label in _COUNTER.findall(stepper.counters.value)}


def _plotted(stepper: ReplayStepper) -> list[int]:
    return sorted(int(x) for t in stepper.figure.data if t.name != "current" for x in t.x)


def test_every_stepper_counter_is_named_after_what_it_counts_with_a_tooltip() -> None:
    ex = recovery_executor()
    stepper = ReplayStepper(ex)
    stepper.run()
    shown = _counters(stepper)
    assert set(shown) == {"steps", *Counters.__dataclass_fields__}      # every counter, none left out
    for name, (label, n, title) in shown.items():
        many, tip, one = COUNTER_WORDS[name]        # "1 task resumed", "1 durable call made": the label for one
        assert (label, title) == (one if n == 1 else many, tip)
        assert len(title) > 20 and name == "steps" or n == getattr(ex.counters, name)
    labels = " ".join(label for label, _, _ in shown.values())
    for jargon in ("shadow runs", "calls stubbed", "calls served", "bodies executed", "entries evicted"):
        assert jargon not in labels
    assert COUNTER_WORDS["rerun"][0] == "tasks re-run"
    assert COUNTER_WORDS["calls_served"][0] == "durable calls answered from records"
    assert shown["calls_served"][1] != 1 or shown["calls_served"][0] == "durable call answered from records"


def test_the_counter_labels_come_from_the_table_for_one_and_for_many(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each counter carries its label for one and for many; the row picks by count, nothing is derived."""
    assert all(len(words) == 3 and words[0] != words[2] for words in COUNTER_WORDS.values())
    assert COUNTER_WORDS["bodies_executed"][2] == "action body run" and COUNTER_WORDS["steps"][2] == "step"
    monkeypatch.setitem(COUNTER_WORDS, "writes", ("records written", "tip", "entry put in the store"))
    monkeypatch.setitem(COUNTER_WORDS, "rerun", ("tasks re-run", "tip", "task run once more"))
    ex = recovery_executor()
    stepper = ReplayStepper(ex)
    stepper.run()
    shown = _counters(stepper)
    for name, words in (("writes", "entry put in the store"), ("rerun", "task run once more")):
        assert shown[name][0] == (words if shown[name][1] == 1 else COUNTER_WORDS[name][0])
    row = counters_html({"writes": 1, "rerun": 2, "unknown_thing": 1}, 1)
    assert "<b>1</b> entry put in the store" in row and "<b>2</b> tasks re-run" in row
    assert "<b>1</b> step</span>" in row and "<b>1</b> unknown thing</span>" in row


def test_the_stepper_filters_by_key() -> None:
    ex = recovery_executor()
    stepper = ReplayStepper(ex)
    assert list(stepper.key_filter.options) == ["(all keys)"]
    stepper.run()
    steps = ex.steps
    keys = sorted(map(str, steps["key"].dropna().unique()))
    assert keys == sorted([f"k{IMG}", "other"]) and list(stepper.key_filter.options) == ["(all keys)", *keys]
    everything = _counters(stepper)
    per_key_tasks = 0
    for key in keys:
        stepper.key_filter.value = key
        mine = steps[steps["key"] == key]
        assert _plotted(stepper) == sorted(int(i) for i in mine["index"])
        shown = _counters(stepper)
        assert shown["steps"][1] == len(mine)
        assert all(shown[n][1] == getattr(ex.counters_for(key), n) for n in Counters.__dataclass_fields__)
        per_key_tasks += shown["tasks"][1]
        assert re.search(rf"<caption[^>]*>step {int(mine['index'].iloc[-1])}</caption>", stepper.detail.value)
        assert html.escape(f"key {key}") in stepper.store.value
    assert per_key_tasks == everything["tasks"][1] > 0          # every task happens at one key
    stepper.key_filter.value = "(all keys)"
    assert _plotted(stepper) == sorted(int(i) for i in steps["index"])
    stepper.key_filter.value = "other"
    stepper.reset()                                         # the chosen key survives a reset, with no step yet
    assert stepper.key_filter.value == "other"
    assert "press Step" in stepper.detail.value
    stepper.step()                                          # the rebuild: a step, but not at key "other"
    assert "no step at key other yet" in stepper.detail.value and _counters(stepper)["steps"][1] == 0
    assert list(stepper.key_filter.options) == ["(all keys)", "other"]


def test_the_runtime_and_its_evidence_in_every_view_of_a_log() -> None:
    log = ai.load(ai.samples.path("subagents_v4"))
    runtime = log.runtime()
    evidence = html.escape(f"main (inferred: {runtime.evidence}; default rule original)")
    browser = LogBrowser(log)
    assert evidence in browser.runtime.value
    assert re.search(r'<span class="ai-lineage-rule" data-count="0" title="[^"]+"><b>0</b> records pinned by the '
                     r"0\.4 lineage rule</span>", browser.runtime.value)
    inspector = ResultInspector(ai.reconstruct(log))
    assert evidence in inspector.runtime.value and "<b>rule</b>: original</span>" in inspector.runtime.value
    what_if = ResultInspector(ai.reconstruct(log, rule="fixed"))
    assert "<b>rule</b>: fixed (what-if; main ships original)</span>" in what_if.runtime.value
    view = PredictionView(predict(log, rule="fixed"))
    assert evidence in view.summary.value and "fixed (what-if; main ships original)" in view.summary.value
    executor = ai.ReplayExecutor(log) if hasattr(ai, "ReplayExecutor") else None
    if executor is not None:
        assert evidence in ReplayStepper(executor).counters.value


def test_the_prediction_table_shows_reruns_first() -> None:
    log = ai.load(ai.samples.path("production"))
    prediction = predict(log, rule="fixed", markers=ai.samples.markers("production"))
    view = PredictionView(prediction)
    assert any("tasks, re-runs and evictions first" in getattr(c, "value", "") for c in view.children)
    outcomes = view.table.shown["outcome"].astype(str).tolist()
    reruns = int((prediction.tasks["outcome"] == "RERUN").sum())
    assert 0 < reruns < 20 and outcomes[:reruns] == ["RERUN"] * reruns
    assert prediction.tasks["outcome"].iloc[:20].tolist().count("RERUN") < reruns   # buried in dispatch order
