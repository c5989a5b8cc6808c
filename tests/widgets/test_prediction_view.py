from __future__ import annotations

import html

import pytest
from _widget_logs import IMG, probe_case
from _widget_view import html_strings

import agent_inspect as ai
from agent_inspect.recovery import predict
from agent_inspect.widgets import PredictionView

KEY = f"k{IMG}"


@pytest.fixture(scope="module")
def prediction(tmp_path_factory):
    """Case G01 (A@5, B@5, C@6; replay A, C) under the original rule, with a script probe as its key."""
    built = probe_case(tmp_path_factory.mktemp("cases"), key=KEY)
    return predict(built.log, plan=built.plan, agent=built.agent, rule="original", markers=list(built.markers))


def test_outcomes_ledger_and_tasks(prediction):
    view = ai.inspect(prediction)
    assert isinstance(view, PredictionView) and "ai-prediction" in view._dom_classes
    outcomes = {t.name: int(sum(t.y)) for t in view.outcomes.data}
    assert outcomes == prediction.tasks["outcome"].value_counts().to_dict()
    ledger = {(t.name, html.unescape(y)): int(x) for t in view.ledger_figure.data for y, x in zip(t.y, t.x)}
    assert ledger == {(r.kind, r.name): r.count for r in prediction.ledger_totals().itertuples()}
    assert ("body", "IA") in ledger
    assert view.table.total == len(prediction.tasks)
    assert view.ledger_table.total == len(prediction.ledger)
    assert "prediction under rule <code>original</code>" in view.summary.value


def test_key_filter_and_escaping(prediction):
    view = PredictionView(prediction)
    assert view.key_filter.options == ("(any)", KEY)
    view.key_filter.value = KEY
    assert view.table.total == len(prediction.tasks)
    assert {row[0] for row in view.table.window["cells"]} == {KEY}  # the key as text; grid.js sets textContent
    strings = html_strings(view)
    assert not [s for s in strings if "<img" in s]
    assert any(html.escape(KEY) in s for s in strings)


def test_the_ledger_chart_names_sub_agent_calls_by_sub_agent_and_caller():
    """Issue 26 row 8: a bar per sub-agent and caller, not one per raw ``<sessionId>#<callId>``."""
    log = ai.load(ai.samples.path("production"))
    view = PredictionView(predict(log, rule="original", markers=ai.samples.markers("production")))
    bars = [html.unescape(str(y)) for t in view.ledger_figure.data for y in t.y]
    assert "reviewer (sub-agent call from review)" in bars
    assert not any("#" in b for b in bars)
