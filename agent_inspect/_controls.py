"""A record's control characters, written out: shown, never obeyed.

Keys, action names, attributes, error messages and trace fields come from the job and may carry escape sequences
(a window title, a cleared screen, concealed text), carriage returns or bidirectional overrides that would make a
terminal or a page show something else than the data. Every place that shows such text writes them out with
:func:`show_controls`: HTML (``_html.escape``), the CLI (``cli/_terminal.py``), rich, reprs, grid cells, the key
history, and the message of every :class:`~agent_inspect.InspectError` and of a recorded call failure.
"""

from __future__ import annotations

import re

__all__ = ["CONTROL_CHARS", "show_control", "show_controls"]


CONTROL_CHARS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
"""The control characters a record's text may carry that would hide or rewrite what is shown (a regex class):
C0 but tab and newline, DEL, C1, and the bidirectional embeddings, overrides and isolates."""

_CONTROL = re.compile(f"[{CONTROL_CHARS}]")


def show_control(char: str) -> str:
    """One control character written out: C0 as ``\\x1b``, the others as ``\\u009b`` (which JSON reads back).

    For example::

        show_control("\\x1b"), show_control("\\u202e")      # ('\\\\x1b', '\\\\u202e')
    """
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x7f else f"\\u{code:04x}"


def show_controls(text: str) -> str:
    """``text`` with every :data:`CONTROL_CHARS` character written out, so it is shown and never obeyed.

    For example::

        show_controls("k\\x1b[8m\\u202e")      # 'k\\\\x1b[8m\\\\u202e'
    """
    if text.isprintable():   # every control character is unprintable: most texts need no regex pass
        return text
    return _CONTROL.sub(lambda m: show_control(m.group()), text)
