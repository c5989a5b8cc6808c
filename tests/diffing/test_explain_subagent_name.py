"""``explain`` given a sub-agent's name where an action's goes: the error says which tasks there run in a sub-agent
and which, and that the action is named by action name (it listed the child tasks without their sub-agent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect.diffing import SelectorError

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"


def _markers(name: str) -> list[dict[str, int]]:
    markers: list[dict[str, int]] = json.loads((SAMPLES / f"{name}.markers.json").read_text())["markers"]
    return markers


def test_a_sub_agent_s_name_is_said_to_be_one_and_its_tasks_are_listed_in_it() -> None:
    log = ai.load(SAMPLES / "subagents.jsonl")
    with pytest.raises(SelectorError) as err:
        ai.explain(log, "order-1", 6, "reviewer", markers=_markers("subagents"))
    assert str(err.value) == (
        "no task order-1@6 reviewer; tasks there: order-1@6 CA1 (in sub-agent reviewer), order-1@6 CA2 (in sub-agent "
        "reviewer), order-1@6 P; 'reviewer' is a sub-agent, not an action (its tasks there: CA1, CA2): the action "
        "(--action) takes an action name or UUID")
    why = ai.explain(log, "order-1", 6, "CA1", markers=_markers("subagents"))     # what the error points to
    assert why.action == "CA1"


def test_an_unnamed_child_action_of_a_v4_log_is_shown_in_its_sub_agent() -> None:
    log = ai.load(SAMPLES / "subagents_v4.jsonl")        # K2: the child's action is known by its UUID alone
    key = str(ai.predict(log).tasks["key"].iloc[0])
    with pytest.raises(SelectorError, match=r"@6 action-3e8d115e \(in sub-agent reviewer\); 'reviewer' is a "
                                            r"sub-agent, not an action \(its tasks there: action-3e8d115e\)"):
        ai.explain(log, key, 6, "reviewer", markers=_markers("subagents_v4"))


def test_a_wrong_action_name_lists_the_tasks_with_their_sub_agent_and_no_sub_agent_sentence() -> None:
    log = ai.load(SAMPLES / "subagents.jsonl")
    with pytest.raises(SelectorError) as err:
        ai.explain(log, "order-1", 6, "nope", markers=_markers("subagents"))
    assert "order-1@6 CA1 (in sub-agent reviewer)" in str(err.value) and "is a sub-agent" not in str(err.value)
