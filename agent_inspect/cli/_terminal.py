"""Text bound for a terminal, made inert: a payload's control characters are shown, never obeyed.

Keys, attributes and trace fields come from the job and may carry escape sequences (a window title, the
clipboard, a cleared screen), carriage returns or bidirectional overrides that would make the terminal show
something else than the data. On a terminal, the CLI writes them out as escapes; SGR styling (``ESC [ … m``,
what ``less -R`` passes) is kept. Pipes and files get the text as it is.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = ["inert", "inert_terminal"]

# C0 but tab and newline, DEL, C1, and the bidirectional embeddings, overrides and isolates
_CONTROL = "\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"\x1b\\[[0-9;]*m|[{_CONTROL}]")


def _shown(match: re.Match[str]) -> str:
    text = match.group()
    if len(text) > 1:   # an SGR sequence: styling only
        return text
    code = ord(text)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert(text: str) -> str:
    """``text`` with every terminal control character but tab and newline written as an escape (``\\x1b``).

    For example::

        from agent_inspect.cli._terminal import inert
        inert("user-1\\x1b]0;owned\\x07")        # 'user-1\\\\x1b]0;owned\\\\x07': shown, not obeyed
    """
    return _UNSAFE.sub(_shown, text)


class _InertStream:
    """A terminal stream that is written :func:`inert` text."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(inert(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def inert_terminal() -> Iterator[None]:
    """While inside, ``sys.stdout`` and ``sys.stderr`` write inert text where they are terminals."""
    saved = sys.stdout, sys.stderr
    if _is_terminal(sys.stdout):
        sys.stdout = _InertStream(sys.stdout)
    if _is_terminal(sys.stderr):
        sys.stderr = _InertStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):   # a closed or odd stream
        return False
