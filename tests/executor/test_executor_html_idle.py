"""The executor's notebook display before any step says so (it showed an empty "last steps" table), and its
"current:" line names only what the step has (the rebuild read "current: rebuild  seq   → rebuilt")."""

from __future__ import annotations

import agent_inspect as ai


def _executor() -> ai.ReplayExecutor:
    return ai.ReplayExecutor(ai.load(ai.samples.path("production")), markers=ai.samples.markers("production"))


def test_before_any_step_the_display_says_what_to_do() -> None:
    html = _executor()._repr_html_()
    assert "no step yet: step() runs the rebuild first, run() runs to the next breakpoint or the end" in html
    assert "<table" not in html and "current:" not in html


def test_the_current_line_names_what_the_step_has() -> None:
    ex = _executor()
    ex.step()
    assert "<p>current: step 0 rebuild → rebuilt (643 entries cached)</p>" in ex._repr_html_()
    ex.step()
    assert "<p>current: step 1 lookup user-0009 seq 4 tool_call → REUSE</p>" in ex._repr_html_()
