"""``repr()`` of an explanation is one line, the task and its answer, as every result object's is (it printed the
whole dataclass, ~1.3 kB); ``str()`` and the HTML still tell the whole chain."""

from __future__ import annotations

import re
from pathlib import Path

import agent_inspect as ai
from agent_inspect._controls import CONTROL_CHARS, show_controls
from tests.report.probe_log import write_probe_log


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


def test_an_explanation_prints_a_logs_control_characters_written_out(tmp_path: Path) -> None:
    # the key and the action name come from the log: print(why) and the REPL's repr wrote their escapes raw
    evil = "\x1b]0;pwned\x07\x1b[2J\r\x9b2J\u202e\x00"
    log = ai.load(write_probe_log(tmp_path / "evil.jsonl", {"key": "k" + evil, "action": "A" + evil}))
    task = ai.predict(log).tasks.iloc[-1]
    why = ai.explain(log, task["key"], int(task["seq"]), task["action"])
    for text in (repr(why), str(why)):
        assert not re.search(f"[{CONTROL_CHARS}]", text), text
    assert f"Explanation(A{show_controls(evil)} (k{show_controls(evil)}, seq " in repr(why)
    assert str(why) == show_controls(why.story()) and "\n" in str(why)   # the chain keeps its lines
