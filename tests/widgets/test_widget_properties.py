"""Invariants: any record text is escaped in hover text; browser filters equal a plain pandas query."""

from __future__ import annotations

import re

from _widget_logs import probe_history
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_inspect.widgets import LogBrowser
from agent_inspect.widgets._common import hover

LOG = probe_history().log()
RECORDS = LOG.records
KEYS = [None, *RECORDS["business_key"].cat.categories]
TYPES = [None, *RECORDS["task_event_type"].cat.categories]
BROWSER = LogBrowser(LOG)
BROWSER.grid.viewport = [0, 5]  # one browser: each example changes the filters of the last


@settings(deadline=None, max_examples=60)
@given(st.lists(st.tuples(st.text(max_size=20), st.text(max_size=40)), max_size=6))
def test_hover_text_has_no_tag_but_its_line_breaks(pairs):
    text = hover(pairs)
    assert re.sub(r"<br>", "", text).count("<") == 0
    assert '"' not in text and "'" not in text


@settings(deadline=None, max_examples=30)
@given(key=st.sampled_from(KEYS), low=st.integers(0, 2), width=st.integers(0, 2),
       event=st.sampled_from(TYPES), use_seq=st.booleans())
def test_browser_filter_matches_a_pandas_query(key, low, width, event, use_seq):
    browser = BROWSER
    browser.set_filters(key=key or "", seq=f"{low}-{low + width}" if use_seq else "",
                        event_type=event or "(any)")
    expected = RECORDS
    if key is not None:
        expected = expected[expected["business_key"] == key]
    if use_seq:
        expected = expected[(expected["seq"] >= low) & (expected["seq"] <= low + width)]
    if event is not None:
        expected = expected[expected["task_event_type"] == event]
    assert list(browser.filtered.index) == list(expected.index)
    assert list(browser.window_rows.index) == list(expected.index[:5])
    assert sum(sum(t.y) for t in browser.figure.data) == len(expected)
