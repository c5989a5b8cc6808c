"""The probe that makes a documentation example show something (:mod:`tests.support.example_probe`)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.support.example_probe import run_example


@pytest.mark.parametrize(("code", "found"), [
    ("for x in []:\n    x", ["the loop over [] (line 1) never ran"]),
    ("for x in [1]:\n    x", []),
    ("[y for y in ()]", ["the loop over () (line 1) never ran", "[y for y in ()] (line 1) is an empty list"]),
    ("frame = pd.DataFrame()\nframe", ["frame (line 2) is an empty DataFrame"]),
    ("frame = pd.DataFrame({'a': [1]})\nframe, {}", ["{} (line 2) is an empty dict"]),
    ("False, 0, 'x'", []),                                   # falsy values are values
    ("print('', 1)", ["'' (line 1) is an empty str"]),
    ("def f() -> None:\n    pass\nf()", []),                # a command: annotated -> None
    ("def g():\n    pass\ng()\n1", []),                      # a call statement before the last is a command
    ("def g():\n    pass\ng()", ["g() (line 3) is None"]),   # the last statement is what a notebook shows
    ("def h():\n    None\n    for x in []:\n        pass\n1", []),   # a definition's lines show nothing; h never runs
    ("def h():\n    for x in []:\n        pass\nh()\n1", ["the loop over [] (line 2) never ran"]),
])
def test_the_probe_reports_loops_that_never_ran_and_values_that_show_nothing(code: str, found: list[str]) -> None:
    assert run_example(code, "<test>", {"pd": pd}) == found


def test_a_value_shown_in_a_loop_counts_when_any_pass_shows_something() -> None:
    assert run_example("for x in ['', 'a']:\n    x", "<test>", {}) == []
