"""The CLI's output, made inert: a payload's control characters are shown, never obeyed.

Keys, action names, attributes, error messages and trace fields come from the job and may carry escape
sequences (a window title, the clipboard, a cleared screen, concealed text), carriage returns or bidirectional
overrides that would make the terminal show something else than the data. Everything the CLI writes to stdout
and stderr, to a terminal or to a pipe (text piped to ``less -R``, ``head`` or a CI log still ends on a
terminal), has them written out as escapes: C0 as ``\\x1b``, DEL, C1 and the bidi controls as ``\\u009b``, a form
JSON reads back as the same character, so ``--json`` output stays valid and exact. Tab and newline pass. On a
terminal the CLI's own styling (:func:`faint`: ``ESC[2m`` / ``ESC[0m``) is kept; any other SGR, those two
sequences from job data included, is shown.
"""

from __future__ import annotations

import re
import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from agent_inspect._controls import CONTROL_CHARS, show_control

__all__ = ["inert", "inert_terminal", "faint"]

_OWN = secrets.token_hex(8)
"""Marks the CLI's own styling (:func:`faint`) for this process: job data cannot carry it, so an ``ESC[2m`` or
``ESC[0m`` in a key is written out like any other escape, not taken for the CLI's."""

_UNSAFE = re.compile(f"(\x1b\\[[02]m){_OWN}|[{CONTROL_CHARS}]")


def faint(text: str) -> str:
    """``text`` in the CLI's faint style (summary's explanations): kept on a terminal, dropped in a pipe."""
    return f"\x1b[2m{_OWN}{text}\x1b[0m{_OWN}"


def inert(text: str, *, styling: bool = False) -> str:
    """``text`` with every terminal control character but tab and newline written as an escape (``\\x1b``,
    ``\\u009b``); with ``styling``, the CLI's own faint and reset sequences (:func:`faint`) are kept, else dropped.

    For example::

        from agent_inspect.cli._terminal import inert
        inert("user-1\\x1b]0;owned\\x07")        # 'user-1\\\\x1b]0;owned\\\\x07': shown, not obeyed
    """
    def shown(match: re.Match[str]) -> str:
        own = match.group(1)
        if own is not None:
            return own if styling else ""
        return show_control(match.group())

    return _UNSAFE.sub(shown, text)


class _InertStream:
    """A stream that is written :func:`inert` text."""

    def __init__(self, stream: TextIO, *, styling: bool) -> None:
        self._stream = stream
        self._styling = styling

    def write(self, text: str) -> int:
        return self._stream.write(inert(text, styling=self._styling))

    @property
    def redraw_stream(self) -> TextIO:
        """The stream beneath, for a status line the CLI redraws itself (a progress bar): never for job data."""
        return self._stream

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def inert_terminal() -> Iterator[None]:
    """While inside, ``sys.stdout`` and ``sys.stderr`` write inert text (styling kept where they are terminals)."""
    saved = sys.stdout, sys.stderr
    sys.stdout = _InertStream(sys.stdout, styling=_is_terminal(sys.stdout))
    sys.stderr = _InertStream(sys.stderr, styling=_is_terminal(sys.stderr))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):   # a closed or odd stream
        return False
