"""``repr()`` of an explanation is one line, the task and its answer, as every result object's is (it printed the
whole dataclass, ~1.3 kB); ``str()`` and the HTML still tell the whole chain."""

from __future__ import annotations

import agent_inspect as ai


def test_an_explanation_repr_is_one_line_naming_the_task_and_its_answer() -> None:
    log = ai.load(ai.samples.path("production"))
    why = ai.explain(log, "user-0019", 2, "triage", markers=[], also=["fixed"])
    assert repr(why) == "Explanation(triage (user-0019, seq 2) → RERUN under rule 'original', cause: window)"
    assert str(why) == why.story() and "\n" in str(why)
    html = why._repr_html_()
    assert all(s.title.split(" ")[0] in html for s in why.steps)
    what_if = ai.explain(log, "user-0019", 2, "triage", markers=[], rule="fixed")
    assert repr(what_if).startswith("Explanation(triage (user-0019, seq 2) → ")
    assert f"under rule {what_if.rule_label!r}" in repr(what_if) and "what-if" in repr(what_if)
