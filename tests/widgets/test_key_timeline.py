from __future__ import annotations

import html
import re

import msgspec
import pytest
from _widget_logs import IMG
from _widget_view import click

from agent_inspect import InspectError
from agent_inspect.widgets import KeyTimeline


def _points(timeline):
    return {int(p) for t in timeline.figure.data if t.name != "divergence" for p in t.customdata}


def test_all_records_of_the_key_are_plotted_by_status(probe_result):
    key = f"user-{IMG}"
    timeline = KeyTimeline(probe_result, key)
    records = probe_result.records[probe_result.records["business_key"] == key]
    assert _points(timeline) == set(records.index)
    for trace in timeline.figure.data:
        if trace.name == "divergence":
            continue
        shown = records.loc[list(trace.customdata), "status"].astype(str)
        assert set(shown) == {trace.name}
        assert list(trace.y) == list(records.loc[list(trace.customdata), "seq"].astype(float))


def test_attempts_band_and_divergence_marks(probe_result):
    key = f"user-{IMG}"
    timeline = KeyTimeline(probe_result, key)
    records = timeline.records
    attempts = records["attempt"].nunique()
    lines = [s for s in timeline.figure.layout.shapes if s.type == "line"]
    assert len(lines) == attempts - 1 >= 1
    bands = [s for s in timeline.figure.layout.shapes if s.type == "rect"]
    removed = records[records["status"].isin(["evicted", "invalidated"])]
    assert bands and len(removed)
    assert min(b.x0 for b in bands) <= removed.index.min() and max(b.x1 for b in bands) >= removed.index.max()
    marks = [t for t in timeline.figure.data if t.name == "divergence"]
    divergences = probe_result.divergences
    mine = divergences[divergences["business_key"] == key]
    assert marks and set(marks[0].customdata) == {p for ps in mine["positions"] for p in ps}


def test_click_shows_the_decoded_value(probe_result):
    timeline = KeyTimeline(probe_result, f"user-{IMG}")
    trace_index = next(i for i, t in enumerate(timeline.figure.data) if t.name != "divergence")
    trace = timeline.figure.data[trace_index]
    click(timeline.figure, trace_index, 1)
    pos = int(trace.customdata[1])
    assert timeline.selected_pos == pos
    assert f"record {pos}" in timeline.detail.value
    assert probe_result.log.value(pos).task_event.id in timeline.detail.value
    shown = re.search(r'<pre class="ai-value">(.*)</pre>', timeline.detail.value, re.S).group(1)
    stored = probe_result.log.raw.value[pos]
    assert html.unescape(shown) == msgspec.json.format(stored, indent=2).decode()  # the record as stored


def test_default_key_is_the_most_affected(probe_result):
    assert KeyTimeline(probe_result).key == f"user-{IMG}"


def test_unknown_key_is_a_clear_error(probe_result):
    with pytest.raises(InspectError, match="has no records"):
        KeyTimeline(probe_result, "nobody")


def test_plain_log_timeline(probe_log):
    key = f"user-{IMG}"
    timeline = KeyTimeline(probe_log, key)
    assert [t.name for t in timeline.figure.data] == ["record"]  # a plain log has no statuses
    assert len(timeline.figure.data[0].x) == int((probe_log.records["business_key"] == key).sum())


def test_k0_records_without_seq_stay_visible():
    from _widget_logs import Journal, round_

    journal = Journal(key_format="K0")
    round_(journal, "user-1", 0, {"input": "a"})
    log = journal.log()
    assert log.records["seq"].isna().all()
    timeline = KeyTimeline(log, "user-1")
    assert list(timeline.figure.data[0].y) == [-1.0] * len(log.records)
    assert "none" in timeline.figure.layout.yaxis.title.text
