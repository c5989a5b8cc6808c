"""An error message quoting job text (a key, an action name) is inert as text: a traceback or ``str(error)`` shows
its control characters written out and never sends them to the terminal; ``args`` keep the exact text."""

from __future__ import annotations

import re
import traceback
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect._controls import CONTROL_CHARS, show_controls
from tests.report.probe_log import write_probe_log

EVIL = "\x1b]0;pwned\x07\x1b[2J\r\x9b2J\u202e\x00"   # title, clear, CR, C1 CSI, RTL override, NUL


def test_a_message_quoting_a_key_from_the_log_is_inert_as_text(tmp_path: Path) -> None:
    log = ai.load(write_probe_log(tmp_path / "evil.jsonl", {"key": "k" + EVIL}))
    with pytest.raises(ai.InspectError) as raised:
        ai.explain(log, "k" + EVIL, 5, "no such action")   # "no task k…@5 no such action": the key quoted as it is
    error = raised.value
    shown = "".join(traceback.format_exception_only(type(error), error))
    assert not re.search(f"[{CONTROL_CHARS}]", str(error) + shown), shown
    assert f"k{show_controls(EVIL)}@5" in str(error) and f"k{show_controls(EVIL)}@5" in shown
    assert "k" + EVIL in error.args[0]            # the exception still carries the exact text
