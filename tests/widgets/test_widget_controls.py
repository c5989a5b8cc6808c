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
