"""DiffView and ExplainView: what they show, selection by click, explain from a pair, escaping."""

from __future__ import annotations

import pytest
from _widget_logs import IMG, probe_case
from _widget_view import html_strings

import agent_inspect as ai
from agent_inspect.recovery import predict
from agent_inspect.widgets import DiffView, ExplainView


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Case G01 with a script probe as its key."""
    return probe_case(tmp_path_factory.mktemp("cases"))


@pytest.fixture(scope="module")
def rules_diff(built):
    preds = [predict(built.log, plan=built.plan, agent=built.agent, rule=r, markers=list(built.markers), new_id=built.id_factory())
             for r in ("original", "fixed")]
    return ai.diff(ai.diffing.as_side(preds[0], log=built.log), ai.diffing.as_side(preds[1], log=built.log))


def _no_live_probe(widget):
    for s in html_strings(widget):
        assert IMG not in s and "<script>" not in s


def test_diff_view_shows_timelines_graph_and_first_divergence(rules_diff):
    view = ai.inspect(rules_diff)
    assert isinstance(view, DiffView) and "ai-diff" in view._dom_classes
    assert view.key_picker.value == rules_diff.keys()[0]
    marks = sum(len(t.x) for t in view.timeline.data)
    rows = rules_diff.for_key(view.key_picker.value)
    band = int((rows["status"] != "same").sum())
    assert marks == int(rows["a"].notna().sum() + rows["b"].notna().sum()) + band
    first = rules_diff.first_divergence(view.key_picker.value)
    assert view.seq_picker.value == first["seq"]
    assert "ai-first-divergence" in view.fields.value and "first divergence" in view.fields.value
    statuses = {t.name for t in view.graph_figure.data[1:]}
    assert statuses <= {"same", "changed", "only in a", "only in b"} and statuses
    _no_live_probe(view)


def test_clicking_a_mark_selects_its_pair_and_explains_it(rules_diff, built):
    view = DiffView(rules_diff)
    trace = next(t for t in view.timeline.data if t.name == "changed")

    class Points:
        point_inds = [0]

    view._on_click(trace, Points())
    assert view.selected == int(trace.customdata[0])
    assert f"data-pair='{view.selected}'" in view.fields.value and "ai-selected" in view.fields.value
    why = view.explain_selected()
    # side b is a prediction: explain it needs the prediction's log, which the side carries
    assert isinstance(why, ExplainView)
    assert why.explanation.outcome in ("REUSE", "RERUN", "RESUME")
    _no_live_probe(view)


def test_explain_view_story_and_record_links(built):
    pred = predict(built.log, plan=built.plan, agent=built.agent, rule="original", markers=list(built.markers),
                   new_id=built.id_factory())
    i = int((pred.tasks["outcome"] == "RERUN").to_numpy().nonzero()[0][0])
    why = ai.diffing.explain(pred, task=i, log=built.log, markers=list(built.markers))
    view = ai.inspect(why, log=built.log)
    assert isinstance(view, ExplainView) and "ai-explain" in view._dom_classes
    assert view.story.value.count("class='ai-explain-step") == len(why.steps)
    assert "ai-explain-cause" in view.story.value and f"data-kind='{why.cause.kind}'" in view.story.value
    assert view.record_buttons and not view.record_buttons[0].disabled
    view.record_buttons[-1].click()
    assert view.browser is not None and view.browser_box.children == (view.browser,)
    _no_live_probe(view)
    without = ExplainView(why)
    assert without.record_buttons[0].disabled and without.open_record(1) is None


def test_explain_view_labels_a_what_if_rule_and_colours_steps_from_the_theme():
    log, markers = ai.load(ai.samples.path("N04")), ai.samples.markers("N04")
    what_if = ExplainView(ai.explain(log, "k", 6, "WA", markers=markers, rule="fixed"))
    assert "under rule <code>fixed (what-if; 0.4 ships original)</code>" in what_if.story.value
    shipped = ExplainView(ai.explain(log, "k", 6, "WA", markers=markers))
    assert "under rule <code>original</code>" in shipped.story.value
    assert " style=" not in shipped.story.value and "data-tone='bad'" in shipped.story.value   # the eviction
