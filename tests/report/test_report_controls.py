"""A record's control characters reach the report shown, not hidden: an escape sequence is no invisible text and
a bidi override cannot turn the rest of a line around (they are written ``\\x1b``, ``\\u202e``)."""

from __future__ import annotations

import re
from pathlib import Path

import agent_inspect as ai
from agent_inspect._html import escape, plotly_text
from agent_inspect.report import render_report
from tests.report.probe_log import write_probe_log

EVIL = "\x1b]0;pwned\x07\x1b[8m\r\x9b2J\u202e\x7f"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_escape_shows_control_characters() -> None:
    assert escape("k" + EVIL) == "k\\x1b]0;pwned\\x07\\x1b[8m\\x0d\\u009b2J\\u202e\\u007f"
    assert plotly_text("a\u202eb<") == "a\\u202eb&lt;"
    assert escape("tab\tand\nnewline") == "tab\tand\nnewline"


def test_record_control_characters_are_shown_in_the_report(tmp_path: Path) -> None:
    fields = {"key": "k" + EVIL, "event_type": "E" + EVIL, "action": "A" + EVIL, "attr": "v" + EVIL}
    html = render_report(ai.load(write_probe_log(tmp_path / "p.jsonl", fields)), rule="original", max_keys=1)
    markup = re.sub(r"<script[^>]*>.*?</script>", "", html, flags=re.S)
    assert not RAW.search(markup), RAW.findall(markup)[:5]
    assert "k\\x1b]0;pwned" in markup
