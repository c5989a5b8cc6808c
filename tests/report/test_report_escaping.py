"""Property: whatever text a record carries, it reaches the report only escaped."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import agent_inspect as ai
from agent_inspect._html import escape
from agent_inspect.report import render_report
from tests.report.probe_log import write_probe_log

_TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=0, max_size=12)
_TAG = st.builds(lambda name, attr, inner: f"<{name} {attr}=\"{inner}\">{inner}</{name}>",
                 st.sampled_from(["script", "img", "svg", "iframe", "a", "b"]),
                 st.sampled_from(["onerror", "onload", "href", "src", "style"]), _TEXT)
_FIELDS = ("key", "event_type", "attr", "memory_path", "function_id", "action", "output_type")


@settings(deadline=None, max_examples=12)
@given(tag=_TAG, prefix=_TEXT, field=st.sampled_from(_FIELDS))
def test_record_text_is_escaped_everywhere_in_the_report(tag: str, prefix: str, field: str) -> None:
    text = prefix + tag
    with tempfile.TemporaryDirectory() as tmp:
        log = ai.load(write_probe_log(Path(tmp) / "p.jsonl", {field: text}))
        html = render_report(log, rule="original", max_keys=1)
    markup = re.sub(r"<script>.*?</script>", "", html, flags=re.S)
    assert tag not in markup
    if field in ("key", "event_type"):  # columns of the tables: shown to the reader, escaped, not dropped
        assert escape(tag) in markup
