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
    # one ✕ per divergence, on the record whose lookup triggered the rule
    assert marks and set(marks[0].customdata) == set(mine["trigger_pos"])


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


def test_divergence_marks_on_top_with_their_explanation_and_live_above_superseded(probe_result):
    timeline = KeyTimeline(probe_result, f"user-{IMG}")
    names = [t.name for t in timeline.figure.data]
    assert names[-1] == "divergence" and timeline.figure.data[-1].marker.symbol == "x"  # the ✕ of the text
    if "live" in names and "superseded" in names:
        assert names.index("live") > names.index("superseded")
    hovered = timeline.figure._hover_text(len(names) - 1, 0)
    # the divergence, not the record: its rule, its cause and what it removed
    assert "rule fixed" in hovered and "cause: " in hovered and "removed: seq 0 ×2" in hovered
    # the record under the mark shows the explanation too, whichever trace the mouse picks
    pos = int(timeline.figure.data[-1].customdata[0])
    under = next((i, list(t.customdata).index(pos)) for i, t in enumerate(timeline.figure.data[:-1])
                 if pos in list(t.customdata))
    assert timeline.figure._hover_text(*under).startswith("✕: divergence #")


def test_click_on_a_divergence_mark_shows_the_divergence_not_the_record(probe_result):
    timeline = KeyTimeline(probe_result, f"user-{IMG}")
    click(timeline.figure, len(timeline.figure.data) - 1, 0)
    assert "divergence #" in timeline.detail.value and "rule fixed" in timeline.detail.value
    assert "cause:" in timeline.detail.value and "removed: seq 0 ×2" in timeline.detail.value
    assert "decoded" not in timeline.detail.value and "ai-value" not in timeline.detail.value
    bands = [s for s in timeline.figure.layout.shapes if s.type == "rect"]
    assert [s.name for s in bands if s.showlegend] == sorted({s.name for s in bands}, key=[b.name for b in bands].index)


def test_click_on_a_removed_record_shows_status_and_reason(probe_result):
    timeline = KeyTimeline(probe_result, f"user-{IMG}")
    index = next(i for i, t in enumerate(timeline.figure.data) if t.name in ("evicted", "invalidated"))
    click(timeline.figure, index, 0)
    row = timeline.records.loc[timeline.selected_pos]
    assert f"status: {row['status']}" in timeline.detail.value
    assert f"reason: {html.escape(str(row['reason']), quote=True)}" in timeline.detail.value


def test_many_records_are_binned_and_a_zoom_fetches_them(probe_result, monkeypatch):
    import agent_inspect.widgets._timeline as tl

    key = f"user-{IMG}"
    n = int((probe_result.records["business_key"] == key).sum())
    monkeypatch.setattr(tl, "LOD_POINTS", 5)
    timeline = KeyTimeline(probe_result, key)
    assert timeline.binned
    counts = [c for i, lines in timeline._bins.items() for c in lines]
    assert sum(int(text.split(" ", 1)[0].replace(",", "")) for text in counts) == n  # every record in one bin
    assert re.match(r"1 [a-z-]+ record<br>|\d[\d,]* [a-z-]+ records<br>", timeline.figure._hover_text(0, 0))  # counted right
    low, high = sorted(timeline.records.index)[:2]
    timeline._zoom({"xaxis.range[0]": low - 0.5, "xaxis.range[1]": high + 0.5})
    assert not timeline.binned
    assert _points(timeline) == {low, high}
    timeline._zoom({"xaxis.autorange": True})
    assert timeline.binned


def test_a_click_on_a_bin_shows_its_first_record_and_what_the_bin_holds(probe_result, monkeypatch):
    import agent_inspect.widgets._timeline as tl

    key = f"user-{IMG}"
    monkeypatch.setattr(tl, "LOD_POINTS", 5)
    timeline = KeyTimeline(probe_result, key)
    assert timeline.binned and timeline.figure.items == int((probe_result.records["business_key"] == key).sum())
    index = next(iter(timeline._bins))
    first = int(timeline.figure.data[index].customdata[0])
    click(timeline.figure, index, 0)
    assert timeline.selected_pos == first and first in timeline.records.index
    assert f"record {first}:" in timeline.detail.value and "zoom in to see each" in timeline.detail.value


def test_a_divergence_that_removed_thousands_of_rounds_stays_one_short_line() -> None:
    """The ✕'s hover and detail listed every round removed ("seq 8333 ×2, seq 8334 ×2, …" for 8,000 rounds),
    which froze the page on hover (benchmarks/views_browser.py click_to_value timed out): runs of rounds with the
    same count are one item, and at most eight are listed."""
    import pandas as pd

    from agent_inspect.widgets._timeline import _seq_runs

    many = pd.Series(2, index=range(8333, 16667))
    assert _seq_runs(many) == "seq 8333–16666 ×2 each"
    assert _seq_runs(pd.Series({1: 5, 2: 6, 3: 5})) == "seq 1 ×5, seq 2 ×6, seq 3 ×5"
    ragged = pd.Series({s: 1 + s % 2 for s in range(100)})
    text = _seq_runs(ragged)
    assert text.count("seq ") == 8 and text.endswith("… 92 more")
