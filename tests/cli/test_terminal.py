"""Job data printed by the CLI is shown, never obeyed (escape sequences, carriage returns, bidi), on a terminal
and in a pipe; only the CLI's own faint/reset styling passes (the same sequences in job data are shown), and only to
a terminal."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import agent_inspect as ai
from agent_inspect.cli._terminal import faint, inert, inert_terminal

REPO = Path(__file__).resolve().parents[2]
EVIL = "k\x1b]0;pwned\x07\x1b[2J\r\u202e"   # a window title, a cleared screen, a carriage return, an RTL override


def test_control_characters_are_written_out_and_styling_is_kept() -> None:
    text = f"key {EVIL} clip\x1b]52;c;aGk=\x07 csi\x9b2J\x00 dim \x1b[2mdim\x1b[0m hide \x1b[8m\tnext\nline é 中"
    shown = inert(text + faint("own"), styling=True)
    # the faint and reset sequences pass only as the CLI's own styling: in job data they are shown like any other
    assert shown == ("key k\\x1b]0;pwned\\x07\\x1b[2J\\x0d\\u202e clip\\x1b]52;c;aGk=\\x07 csi\\u009b2J\\x00 dim "
                     "\\x1b[2mdim\\x1b[0m hide \\x1b[8m\tnext\nline é 中\x1b[2mown\x1b[0m")
    data = inert(text, styling=True)
    assert inert(data, styling=True) == data
    piped = inert(text + faint("own"))
    assert "\x1b" not in piped and piped.endswith("中own")     # a pipe: no styling either


def _evil_log(tmp_path: Path) -> Path:
    out = tmp_path / "evil.jsonl"
    lines = []
    for line in ai.samples.path("N04").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        record["key"] = record["key"][:-1] + EVIL          # the key text "k" of every record, with a payload
        lines.append(json.dumps(record))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def _run(argv: list[str], *, terminal: bool) -> bytes:
    cmd = [sys.executable, "-m", "agent_inspect", *argv]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if not terminal:
        return subprocess.run(cmd, capture_output=True, env=env, timeout=120, check=True).stdout
    main, side = pty.openpty()
    proc = subprocess.Popen(cmd, stdout=side, stderr=side, env=env)
    os.close(side)
    out = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:      # the other side closed
            break
        if not chunk:
            break
        out += chunk
    os.close(main)
    assert proc.wait(120) == 0, out.decode(errors="replace")
    return out


def test_a_key_with_escape_sequences_is_shown_on_a_terminal_and_in_a_pipe(tmp_path: Path) -> None:
    log = _evil_log(tmp_path)
    on_terminal = _run(["reconstruct", str(log)], terminal=True)
    assert b"k\\x1b]0;pwned\\x07\\x1b[2J\\x0d\\u202e@5" in on_terminal
    assert b"\x1b" not in on_terminal and b"\x07" not in on_terminal and "\u202e".encode() not in on_terminal
    piped = _run(["reconstruct", str(log)], terminal=False)   # text piped to less -R or head ends on a terminal too
    assert b"k\\x1b]0;pwned\\x07\\x1b[2J\\x0d\\u202e@5" in piped and b"\x1b" not in piped


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_progress_bar_is_still_drawn_and_its_file_name_shown(monkeypatch: Any) -> None:
    # the inert stream wrote a bar's carriage returns out as "\x0d": one long line of bars on a terminal
    err = _Tty()
    monkeypatch.setattr(sys, "stderr", err)
    with inert_terminal(), ai.sources.progress_bar(total=3, desc="file a\x1b[2Jb", enabled=True) as bar:
        bar.update(3)
    drawn = err.getvalue()
    assert "\r" in drawn and "\\x0d" not in drawn
    assert "a\\x1b[2Jb" in drawn and "\x1b[2J" not in drawn
