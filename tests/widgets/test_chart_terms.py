"""The "terms" line under the stepper, key timeline, action graph and sub-agent tree charts (issue 26 row 10):
the chart's own words, each with the one glossary's definition as its tooltip."""

from __future__ import annotations

import html
import re

from _widget_agents import recovery_executor, subagent_log
from _widget_logs import IMG

import agent_inspect as ai
from agent_inspect._glossary import define
from agent_inspect.widgets import GraphView, KeyTimeline, ReplayStepper, SubagentTreeView

_TERM = re.compile(r'<span class="ai-term" title="([^"]*)">([^<]+)</span>')


def _terms(line: str) -> dict[str, str]:
    assert line.startswith('<div class="ai-terms">terms: ')
    terms = {html.unescape(word): html.unescape(title) for title, word in _TERM.findall(line)}
    for word, title in terms.items():
        assert title == define(word) != "", word
    return terms


def test_the_timeline_explains_its_statuses_and_marks(probe_result) -> None:
    view = KeyTimeline(probe_result, f"user-{IMG}")
    terms = _terms(view.terms.value)
    shown = set(view.records["status"].dropna().astype(str))
    assert shown and shown <= set(terms)
    assert {"round", "attempt"} <= set(terms)
    assert view.children.index(view.terms) == view.children.index(view.figure) + 1


def test_the_action_graph_explains_its_node_kinds_and_statuses(probe_result) -> None:
    view = GraphView(probe_result, f"user-{IMG}")
    terms = _terms(view.terms.value)
    assert {"event", "action", "invalidated", "round", "attempt"} <= set(terms)
    assert view.children.index(view.terms) == view.children.index(view.figure) + 1


def test_the_subagent_tree_explains_sub_agent_calls_and_outcomes() -> None:
    result = ai.reconstruct(subagent_log(), rule="fixed")
    view = SubagentTreeView(result, result.records["business_key"].iloc[0], 1)
    terms = _terms(view.terms.value)
    assert {"sub-agent call", "session", "REUSE", "RERUN"} <= set(terms)


def test_the_stepper_explains_every_step_kind() -> None:
    from agent_inspect.executor import StepKind

    stepper = ReplayStepper(recovery_executor())
    terms = _terms(stepper.terms.value)
    assert {k.value for k in StepKind} <= set(terms) and {"step", "round", "task"} <= set(terms)
    assert stepper.children.index(stepper.terms) == stepper.children.index(stepper.figure) + 1
