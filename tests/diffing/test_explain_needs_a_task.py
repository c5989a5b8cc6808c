"""``explain`` with no task named is an error that says how to name one, with a task of this log as the example:
it used to explain the first task silently, an answer to a question nobody asked."""

from __future__ import annotations

import pytest

import agent_inspect as ai
from agent_inspect.diffing import SelectorError


def test_explain_with_no_task_named_says_how_to_name_one() -> None:
    log = ai.load(ai.samples.path("production"))
    first = ai.predict(log).tasks.iloc[0]
    with pytest.raises(SelectorError) as err:
        ai.explain(log)
    text = str(err.value)
    assert f"ai.explain(log, {first['business_key']!r}, {int(first['seq'])}, {first['action']!r})" in text
    assert "task=" in text
    # the example works as written
    why = ai.explain(log, first["business_key"], int(first["seq"]), first["action"])
    assert why.key == str(first["key"])


def test_a_key_alone_still_picks_its_first_task() -> None:
    log = ai.load(ai.samples.path("production"))
    assert ai.explain(log, "user-0019").key == "user-0019"
