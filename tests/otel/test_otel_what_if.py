"""A recovery exported under a what-if rule says so: on its spans (``agent_inspect.what_if`` and the rule's
label) and in what ``to_otel`` / ``agent-inspect otel`` report, with and without a trace."""

from __future__ import annotations

from pathlib import Path

import agent_inspect as ai
from agent_inspect.otel import spans_of


def _rules(spans):
    return {(s["attributes"].get("agent_inspect.rule_label"), s["attributes"].get("agent_inspect.what_if"))
            for s in spans if "agent_inspect.rule" in s["attributes"]}


def test_spans_and_the_export_label_a_what_if(tmp_path: Path) -> None:
    log, markers = ai.load(ai.samples.path("N04")), ai.samples.markers("N04")
    checked = ai.verify(log, ai.samples.path("N04", "trace"), markers=markers, rule="fixed")
    assert _rules(spans_of(checked)) == {("fixed (what-if; 0.4 ships original)", True)}
    assert _rules(spans_of(ai.verify(log, ai.samples.path("N04", "trace"), markers=markers))) == {("original", False)}
    export = ai.to_otel(log, path=tmp_path / "spans.json", markers=markers, rule="fixed")    # a prediction alone
    assert export.rule == "fixed (what-if; 0.4 ships original)"
    assert str(export).endswith("under rule fixed (what-if; 0.4 ships original)")
    assert "under rule original" in str(ai.to_otel(log, path=tmp_path / "s2.json", markers=markers))


def test_a_prediction_object_exports_as_the_log_under_its_settings_does(tmp_path: Path) -> None:
    # ai.to_otel(ai.predict(...)) raised "object of type 'Prediction' has no len()", spans_of an AttributeError
    log, markers = ai.load(ai.samples.path("N04")), ai.samples.markers("N04")
    prediction = ai.predict(log, markers=markers, rule="fixed")
    export = ai.to_otel(prediction, path=tmp_path / "p.json")
    assert export.rule == "fixed (what-if; 0.4 ships original)"
    from_log = ai.to_otel(log, path=tmp_path / "l.json", markers=markers, rule="fixed")
    assert (export.spans, export.traces, export.errors) == (from_log.spans, from_log.traces, from_log.errors)
    spans = spans_of(prediction)
    assert _rules(spans) == {("fixed (what-if; 0.4 ships original)", True)}
    actions = [s for s in spans if s["name"].startswith("action ")]
    assert actions and all(s["attributes"]["agent_inspect.verdict"] == "unchecked" and s["events"] for s in actions)
