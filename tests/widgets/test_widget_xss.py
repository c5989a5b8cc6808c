"""Script probes in keys, event types, attributes, memory paths and function ids never reach HTML unescaped."""

from __future__ import annotations

import html

from _widget_agents import recovery_executor, subagent_log
from _widget_logs import IMG, SCRIPT
from _widget_view import click, html_strings

import agent_inspect as ai
from agent_inspect.widgets import (
    DivergenceView,
    GraphView,
    KeyTimeline,
    LogBrowser,
    ReplayStepper,
    SubagentTreeView,
)


def _assert_no_raw_probe(strings: list[str]) -> None:
    raw = [s for s in strings if "<img" in s.lower() or "<script" in s.lower()]
    assert not raw, raw[:3]
    escaped = "\n".join(strings)
    assert html.escape(IMG) in escaped or html.escape(SCRIPT) in escaped  # the probes did reach the view


def test_log_browser(probe_log):
    browser = LogBrowser(probe_log)
    strings = html_strings(browser)
    for pos in probe_log.records.index:
        browser.show_record(int(pos))
        strings += html_strings(browser.detail)
    _assert_no_raw_probe(strings)
    joined = "\n".join(strings)
    for probe in (f"tool{IMG}", f"notes.{IMG}", f"Work{SCRIPT}"):  # function id, memory path, event type
        assert html.escape(probe) in joined or html.escape(probe, quote=False) in joined


def test_timeline_with_clicks(probe_result):
    for key in probe_result.records["business_key"].unique():
        timeline = KeyTimeline(probe_result, key)
        for i, _trace in enumerate(timeline.figure.data):
            click(timeline.figure, i, 0)
            _assert_no_raw_probe(html_strings(timeline))


def test_divergence_view(probe_result):
    view = DivergenceView(probe_result)
    assert len(view.selector.options) == len(probe_result.divergences) > 0
    for index in range(len(view.selector.options)):
        view.show(index)
        _assert_no_raw_probe(html_strings(view))


def test_graph_view_with_clicks(probe_result):
    for key in probe_result.records["business_key"].unique():
        view = GraphView(probe_result, key)
        for i, _trace in enumerate(view.figure.data[1:], start=1):
            click(view.figure, i, 0)
            _assert_no_raw_probe(html_strings(view))


def test_inspect_every_tab(probe_result):
    inspector = ai.inspect(probe_result)
    for tab in inspector.TABS:
        inspector.view(tab)
    _assert_no_raw_probe(html_strings(inspector))


def test_replay_stepper_every_step():
    stepper = ReplayStepper(recovery_executor())
    strings = html_strings(stepper)
    while not stepper.executor.done:
        stepper.step_button.click()
        strings += html_strings(stepper)
    assert len(stepper.executor.steps) > 10
    _assert_no_raw_probe(strings)
    joined = "\n".join(strings)
    for probe in (f"ask{IMG}", f"seen{IMG}", f"Work{IMG}", f"plan{SCRIPT}"):  # function id, memory, event, action
        assert html.escape(probe) in joined, probe


def test_subagent_tree_and_its_log():
    log = subagent_log()
    result = ai.reconstruct(log, rule="fixed")
    key = result.records["business_key"].iloc[0]
    strings: list[str] = []
    for seq in (0, 1):
        view = SubagentTreeView(result, key, seq)
        for i in range(1, len(view.figure.data)):
            click(view.figure, i, 0)
            strings += html_strings(view)
    inspector = ai.inspect(result)
    for tab in inspector.TABS:
        inspector.view(tab)
    strings += html_strings(inspector)
    _assert_no_raw_probe(strings)
    assert html.escape(f"reviewer{SCRIPT}") in "\n".join(strings)


def test_plotly_text_shows_quotes_and_stays_inert():
    from agent_inspect._html import plotly_text

    text = plotly_text('say "hi" <img src=x onerror=alert(1)> it\'s')
    assert "<" not in text and '"' not in text and "'" not in text
    assert "&quot;" not in text  # plotly has no &quot; entity and would show it literally
    assert html.unescape(text) == 'say "hi" <img src=x onerror=alert(1)> it\'s'
