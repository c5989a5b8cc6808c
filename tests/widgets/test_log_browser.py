from __future__ import annotations

import html

import pandas as pd
from _widget_logs import IMG, Journal, probe_history, round_

from agent_inspect.widgets import LogBrowser


def test_key_filter_shows_only_that_keys_rows(probe_log):
    browser = LogBrowser(probe_log)
    key = f"user-{IMG}"
    browser.key_filter.value = key
    expected = probe_log.records[probe_log.records["business_key"] == key]
    assert list(browser.filtered.index) == list(expected.index)
    assert set(browser.window_rows["business_key"]) == {key}
    assert browser.grid.total == len(expected)
    assert [int(c[0]) for c in browser.grid.window["cells"]] == list(expected.index)  # the position column


def test_seq_event_and_clear_filters(probe_log):
    records = probe_log.records
    browser = LogBrowser(probe_log)
    browser.set_filters(seq="1")
    assert len(browser.filtered) == int((records["seq"] == 1).sum()) > 0
    browser.set_filters(seq="0-1", event_type="_input_event")
    expected = records[(records["seq"] <= 1) & (records["task_event_type"] == "_input_event")]
    assert list(browser.filtered.index) == list(expected.index)
    browser.set_filters(seq="", event_type="(any)")
    assert len(browser.filtered) == len(records)


def test_bad_seq_text_warns_and_keeps_rows(probe_log):
    browser = LogBrowser(probe_log)
    browser.set_filters(seq="1")
    before = list(browser.filtered.index)
    browser.seq_filter.value = "one"
    assert "not a number" in browser.notice.value
    assert list(browser.filtered.index) == before


def test_status_filter_on_a_reconstruction(probe_result):
    browser = LogBrowser(probe_result)
    assert "invalidated" in browser.status_filter.options
    browser.status_filter.value = "invalidated"
    statuses = set(browser.filtered["status"].astype(str))
    assert statuses == {"invalidated"}
    assert len(browser.filtered) == int((probe_result.records["status"] == "invalidated").sum())


def test_error_filter_finds_the_undecodable_record():
    journal = probe_history()
    journal.batch.append(0, len(journal.batch), None, b"not-a-state-key", b'{"taskEvent": [')
    log = journal.log()
    browser = LogBrowser(log)
    browser.error_filter.value = "errors only"
    assert list(browser.filtered.index) == list(log.errors.index) == [len(log.records) - 1]
    browser.error_filter.value = "no errors"
    assert len(browser.filtered) == len(log.records) - 1


def test_scrolling_the_grid_moves_its_window(probe_log):
    browser = LogBrowser(probe_log)
    browser.grid.viewport = [0, 7]
    assert list(browser.window_rows.index) == list(probe_log.records.index[:7])
    browser.grid.scroll_to(7)
    assert list(browser.window_rows.index) == list(probe_log.records.index[7:14])
    assert browser.grid.window["ids"] == list(range(7, 14))
    browser.grid.scroll_to(10**6)  # clamps to the last row
    assert list(browser.window_rows.index) == [probe_log.records.index[-1]]


def test_clicking_a_row_shows_its_decoded_value(probe_log):
    browser = LogBrowser(probe_log)
    pos = int(probe_log.records.index[probe_log.records["task_event_type"] == "_input_event"][0])
    row = int(probe_log.records.index.get_loc(pos))
    browser.grid._on_message(browser.grid, {"type": "select", "row": row}, [])  # what grid.js sends on a click
    assert browser.grid.selected == row
    assert f"record {pos}" in browser.detail.value
    assert "_input_event" in browser.detail.value
    assert browser.record_pos.value == pos


def test_an_empty_log_says_it_is_empty():
    log = Journal().log()
    browser = LogBrowser(log)
    assert len(log.records) == 0
    assert "is empty" in browser.notice.value
    assert "no record matches" not in browser.notice.value
    assert browser.grid.message == browser.grid.empty_text


def test_no_match_names_the_filters_that_are_set(probe_log):
    browser = LogBrowser(probe_log)
    assert browser.notice.value == ""
    browser.set_filters(key="no such key", seq="3-4")
    assert "no record matches these filters: key = no such key, seq = 3-4" in browser.notice.value
    assert "status" not in browser.notice.value
    assert browser.grid.total == 0


def test_counts_figure_follows_the_filter(probe_log):
    browser = LogBrowser(probe_log)
    assert sum(sum(t.y) for t in browser.figure.data) == len(probe_log.records)
    browser.set_filters(key=f"user-{IMG}", seq="1")
    assert sum(sum(t.y) for t in browser.figure.data) == len(browser.filtered) > 0
    browser.set_filters(key="no such key")
    assert browser.figure.data == ()
    assert "no record matches" in browser.notice.value


def test_show_record_decodes_the_value(probe_log):
    browser = LogBrowser(probe_log)
    pos = int(probe_log.records.index[probe_log.records["task_event_type"] == "_input_event"][0])
    browser.record_pos.value = pos
    browser.show_button.click()
    assert "_input_event" in browser.detail.value
    assert "&lt;script&gt;" in browser.detail.value  # the attribute probe, escaped
    browser.show_record(10**6)
    assert "no record at position" in browser.detail.value


def test_large_log_ships_one_window_only():
    journal = Journal()
    for seq in range(120):
        round_(journal, f"k{seq % 7}", seq // 7, {"input": seq})
    log = journal.log()
    browser = LogBrowser(log)
    browser.grid.viewport = [0, 25]
    assert len(log.records) > 25 * 10
    assert len(browser.grid.window["cells"]) == 25
    assert browser.grid.total == len(log.records)
    assert isinstance(browser.filtered, pd.DataFrame)


def test_clicking_a_bar_filters_by_its_event_type(probe_log):
    from _widget_view import click

    browser = LogBrowser(probe_log)
    trace = browser.figure.data[0]
    label = html.unescape(trace.x[1])  # the bar as a person reads it
    click(browser.figure, 0, 1)
    assert browser.event_filter.value == label
    assert set(browser.filtered["task_event_type"].astype(str)) == {label}
