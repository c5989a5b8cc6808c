"""The log's summary in words (issues #16 item 7 and #12 item 7): keys counted as keys, every field labelled,
the runtime with its evidence and the 0.4 lineage-rule count in the log's HTML view."""

from __future__ import annotations

import html
import re

import agent_inspect as ai
from agent_inspect.log import SUMMARY_LABELS, rule_label, runtime_text, summary_facts
from tests.test_log_v4 import TASK, _completed, _key, _log


def test_flagged_keys_counts_business_keys() -> None:
    log = ai.load(ai.samples.path("production"))
    s = log.summary()
    r = log.records
    flagged = r[r["key_flags"].map(len) > 0]
    assert s["business_keys"] == 40 and s["flagged_keys"] == flagged["business_key"].nunique() == 4
    assert s["flagged_records"] == len(flagged) == 274
    assert s["key_flags"] == {"key-text-contains-separator": 274}
    assert s["flagged_keys"] <= s["business_keys"]


def test_every_summary_field_has_a_label_and_an_explanation() -> None:
    s = ai.load(ai.samples.path("subagents_v4")).summary()
    facts = summary_facts(s)
    assert [f.name for f in facts] == [k for k in s if k != "source"]
    for f in facts:
        assert f.name in SUMMARY_LABELS and f.explanation, f.name
        assert "_" not in f.label, f.label
    runtime = next(f for f in facts if f.name == "runtime")
    assert runtime.text == runtime_text(s["runtime"]) and runtime.text.startswith("main (inferred: ")


def test_the_log_view_shows_the_runtime_and_the_lineage_rule_count() -> None:
    from agent_inspect.codec import ActionState, encode_action_state

    initial = encode_action_state(ActionState(task_event=TASK), value_format="V3")
    log = _log([(_key(1), initial), (_key(1), _completed(lineage=False)),
                (_key(2, "j"), initial), (_key(2, "j"), _completed(lineage=True))])
    page = log._repr_html_()
    # the label carries its glossary tooltip
    assert re.search(r'<th><span class="ai-term" title="[^"]+">records pinned by the 0.4 lineage rule</span></th>'
                     r"<td>1</td>", page)
    evidence = html.escape(log.runtime().evidence)
    assert re.search(r'<th>(<span class="ai-term" title="[^"]+">)?runtime that wrote the log(</span>)?</th>'
                     + re.escape(f"<td>0.3 (inferred: {evidence}; default rule original)</td>"), page)
    assert "value_formats_by_lineage_rule" not in page


def test_rule_label_marks_what_ifs() -> None:
    runtime = ai.load(ai.samples.path("production")).runtime()
    assert rule_label("original", runtime) == "original"
    assert rule_label("original:segment", runtime) == "original:segment"      # the K1.5 log's own store
    assert rule_label("original:kafka-k1", runtime) == "original:kafka-k1 (what-if; 0.4 ships original:segment)"
    assert rule_label("fixed", runtime) == "fixed (what-if; 0.4 ships original)"
    assert rule_label("fixed", None) == "fixed"


def test_rule_mark_says_what_if_and_what_ships_as_data() -> None:
    from agent_inspect.log import RuleMark, rule_mark
    from agent_inspect.rules import resolve_rule

    runtime = ai.load(ai.samples.path("production")).runtime()
    fixed = rule_mark("fixed", runtime)
    assert fixed == RuleMark("fixed", True, "0.4", "original")
    assert (fixed.mark, fixed.label) == (" (what-if; 0.4 ships original)", rule_label("fixed", runtime))
    assert rule_mark(resolve_rule("original:segment"), runtime) == RuleMark("original:segment", False, "0.4", "original")
    assert rule_mark("fixed", None) == RuleMark("fixed", False, None, None) and rule_mark("fixed", None).mark == ""
    for name in ("original", "fixed", "original:kafka-k1", "original:segment"):   # Recovery.what_if: the mark's answer
        settings = ai.Recovery.for_log(ai.load(ai.samples.path("N04")), rule=name)
        assert settings.what_if == rule_mark(settings.rule, settings.runtime).what_if == (name in ("fixed",
                                                                                                   "original:kafka-k1"))


def test_a_diff_side_takes_the_what_if_mark_from_the_rule_mark(monkeypatch) -> None:
    """The selector side's mark is the rule mark's, not text cut off a label (a label of another shape still works)."""
    import agent_inspect.log._facts as facts

    monkeypatch.setattr(facts.RuleMark, "mark", property(lambda m: f" [what-if: {m.runtime} ships {m.ships}]"
                                                          if m.what_if else ""))
    monkeypatch.setattr(facts.RuleMark, "label", property(lambda m: f"rule {m.name}{m.mark}"))   # no slice fits
    path = str(ai.samples.path("N04"))
    side = ai.diffing.as_side(f"{path}@predict=fixed")
    assert side.what_if and side.label == f"{path}@predict=fixed [what-if: 0.4 ships original]"
    assert ai.diffing.as_side(f"{path}@predict=original").label == f"{path}@predict=original"


def test_every_result_view_and_report_labels_a_rule_by_the_one_labeller(tmp_path) -> None:
    from agent_inspect.fleet import ScanResult
    from agent_inspect.rules import resolve_rule

    log, markers = ai.load(ai.samples.path("production")), ai.samples.markers("production")
    runtime = log.runtime()
    row = ai.predict(log, markers=markers).tasks.iloc[0]
    task = (row["key"], int(row["seq"]), row["action"])
    for given, label in (({"rule": "fixed"}, "fixed (what-if; 0.4 ships original)"),
                         ({"store_flavour": "kafka-k1"}, "original:kafka-k1 (what-if; 0.4 ships original:segment)"),
                         ({"store_flavour": "segment"}, "original:segment")):
        settings = ai.Recovery.for_log(log, markers=markers, **given)
        assert settings.rule_label == rule_label(settings.rule, runtime) == label
        assert ai.predict(log, recovery=settings).rule_label == label
        assert ai.reconstruct(log, recovery=settings).rule_label == label
        assert ai.explain(log, *task, recovery=settings).rule_label == label      # was "original" under kafka-k1
        report = ai.write_report(log, tmp_path / "r.html", recovery=settings)
        assert f"rule {label}" in html.unescape(re.sub(r"<[^>]+>", "", report.read_text(encoding="utf-8")))
    # a rule object names its flavour too; a result without its settings labels the same way
    assert rule_label(resolve_rule("original:segment"), runtime) == "original:segment"
    scanned = type("Scanned", (), {"what_if": ("fixed",), "runtime": "0.4", "store_flavour": None})()
    assert ScanResult.rule_label(scanned, "fixed") == "fixed (what-if; 0.4 ships original)"


def test_diff_sides_label_a_what_if_by_the_one_labeller() -> None:
    path = str(ai.samples.path("N04"))
    d = ai.diff(f"{path}@predict=fixed", f"{path}@predict=original")
    assert d.a.label == f"{path}@predict=fixed (what-if; 0.4 ships original)" and d.b.label == f"{path}@predict=original"
    side = ai.diffing.select(ai.load(path), mode="predict", rule="fixed")
    assert side.label.endswith("@predict=fixed (what-if; 0.4 ships original)")
