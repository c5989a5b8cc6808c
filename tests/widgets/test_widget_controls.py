"""A record's control characters reach the browser written out, in the text views too: the grid's cells and the key
history's lines, header and records (set with textContent, which obeys a bidi override) show them as the HTML views
do (``escape``), and "copy JSON" still copies JSON that reads back the exact value."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import agent_inspect as ai
from agent_inspect._controls import CONTROL_CHARS, show_controls
from agent_inspect.widgets import DataGrid, KeyHistory
from tests.report.probe_log import write_probe_log

EVIL = "\x1b]0;pwned\x07\x1b[2J\r\x9b2J\u202e\x7f\x00"   # title, clear, CR, C1 CSI, RTL override, DEL, NUL
RAW = re.compile(f"[{CONTROL_CHARS}]")


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def test_grid_cells_and_key_history_show_control_characters_written_out(tmp_path: Path) -> None:
    probes = {"key": "k" + EVIL, "action": "A" + EVIL, "event_type": "Work" + EVIL, "attr": "attr" + EVIL}
    result = ai.reconstruct(ai.load(write_probe_log(tmp_path / "evil.jsonl", probes)), rule="original")
    grid = DataGrid(result.records, height=200)
    cells = _strings(grid.window["cells"])
    assert not [s for s in cells if RAW.search(s)]
    assert "k" + show_controls(EVIL) in cells and "Work" + show_controls(EVIL) in cells

    history = KeyHistory(result, "k" + EVIL)
    for line in history.lines["line"]:
        history.expand(int(line))
    sent = _strings([history.header, history.rows, history.details])
    assert not [s for s in sent if RAW.search(s)]
    assert history.header["key"] == "k" + show_controls(EVIL)
    assert {"A" + show_controls(EVIL), "Work" + show_controls(EVIL)} <= set(sent)
    record = history.details[str(history.lines["line"].iloc[-1])]["records"][-1]
    assert json.loads(record["json"])["taskEvent"]["type"] == "Work" + EVIL   # the copied JSON reads back exact


def _labels(options: Any) -> list[str]:
    return [o[0] if isinstance(o, tuple) else str(o) for o in options]


def _values(options: Any) -> list[Any]:
    return [o[1] if isinstance(o, tuple) else o for o in options]


def test_pickers_label_a_logs_control_characters_written_out_and_keep_the_exact_value(tmp_path: Path) -> None:
    from agent_inspect.widgets import DivergenceView, LogBrowser, PredictionView, ResultInspector

    probes = {"key": "k" + EVIL, "action": "A" + EVIL, "event_type": "Work" + EVIL, "attr": "attr" + EVIL}
    log = ai.load(write_probe_log(tmp_path / "evil.jsonl", probes))
    result = ai.reconstruct(log, rule="original")
    inspector = ResultInspector(result)
    prediction = PredictionView(ai.predict(log))
    browser = LogBrowser(log)
    pickers = [inspector.key_picker, prediction.key_filter, browser.event_filter]
    for picker in pickers:
        assert not [s for s in _labels(picker.options) if RAW.search(s)]
    assert "k" + show_controls(EVIL) in _labels(inspector.key_picker.options)
    assert "k" + EVIL in _values(inspector.key_picker.options)        # what a pick selects: the key itself
    inspector.key_picker.value = "k" + EVIL
    assert "Work" + EVIL in _values(browser.event_filter.options)
    divergences = DivergenceView(result).selector.options     # labels naming the key: written out too
    assert divergences and not [s for s in _labels(divergences) if RAW.search(s)]


def test_pickers_of_plain_keys_hold_the_keys_themselves() -> None:
    from agent_inspect.widgets._style import choices

    assert choices(["user-1", "user-2"]) == ["user-1", "user-2"]          # no pairs where no label differs
    assert choices([1, 2]) == [1, 2]
    assert choices(["a\u202eb"]) == [("a\\u202eb", "a\u202eb")]


def test_the_log_browsers_key_search_offers_a_key_written_out_and_finds_the_key(tmp_path: Path) -> None:
    from agent_inspect.widgets import LogBrowser

    probes = {"key": "k" + EVIL, "action": "A" + EVIL, "event_type": "Work" + EVIL, "attr": "attr" + EVIL}
    log = ai.load(write_probe_log(tmp_path / "evil.jsonl", probes))
    browser = LogBrowser(log)
    assert not [s for s in browser.key_filter.options if RAW.search(s)]
    assert "k" + show_controls(EVIL) in browser.key_filter.options
    browser.set_filters(key="no-such-key")
    assert len(browser.window_rows) == 0
    browser.key_filter.value = "k" + show_controls(EVIL)     # the offered text finds the key itself
    assert len(browser.window_rows) == len(log.records) and set(browser.window_rows["business_key"]) == {"k" + EVIL}
    browser.set_filters(key="no-such-key")
    browser.set_filters(key="k" + EVIL)                      # a key given exactly (another view opening it)
    assert browser.key_filter.value == "k" + show_controls(EVIL) and len(browser.window_rows) == len(log.records)


def _log_of_keys(keys: list[str]) -> Any:
    from _widget_logs import Journal, round_

    journal = Journal()
    for n, key in enumerate(keys):
        round_(journal, key, 1, {"input": n})
    return journal.log()


def test_the_log_browsers_key_search_finds_a_key_beyond_the_offered_ones(monkeypatch: Any) -> None:
    from agent_inspect.widgets import LogBrowser, _browser

    monkeypatch.setattr(_browser, "_MAX_OPTIONS", 3)
    late = "z\x1b[2J"                                        # sorts after the three offered keys
    log = _log_of_keys(["a", "b", "c", late])
    browser = LogBrowser(log)
    assert show_controls(late) not in browser.key_filter.options
    browser.set_filters(key=late)                            # given exactly: that key, though not offered
    assert set(browser.window_rows["business_key"]) == {late}
    browser.set_filters(key="")
    browser.key_filter.value = show_controls(late)           # typed written out: found among all the log's keys
    assert set(browser.window_rows["business_key"]) == {late}


def test_the_log_browsers_key_search_tells_apart_a_key_and_the_text_of_its_label() -> None:
    from agent_inspect.widgets import LogBrowser

    raw, literal = "a\x1b", "a\\x1b"                        # one label for both: show_controls(raw) == literal
    browser = LogBrowser(_log_of_keys([raw, literal]))
    assert browser.key_filter.options.count(literal) == 1
    browser.set_filters(key=raw)
    assert browser.key_filter.value == literal and set(browser.window_rows["business_key"]) == {raw}
    browser.set_filters(key=literal)
    assert set(browser.window_rows["business_key"]) == {literal}
    browser.set_filters(key=raw)
    browser.key_filter.value = "x"
    browser.key_filter.value = literal                       # typed or picked: the key that is this text
    assert set(browser.window_rows["business_key"]) == {literal}
    only_raw = LogBrowser(_log_of_keys([raw, "b"]))
    only_raw.key_filter.value = literal                      # no key is this text: the key it is the label of
    assert set(only_raw.window_rows["business_key"]) == {raw}
