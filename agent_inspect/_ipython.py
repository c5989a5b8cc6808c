"""In IPython and Jupyter, an :class:`InspectError` prints as one readable line, not a traceback.

Our errors already say what was wrong and what to do; the 15–60 lines of traceback above that line
bury it. The full traceback stays one command away (``%tb``).
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any

from agent_inspect._errors import InspectError

__all__ = ["install", "one_line"]

_HINT = "  (%tb shows the full traceback)"


def one_line(error: BaseException) -> str:
    """The line shown for ``error``: its class and message."""
    message = str(error).strip().splitlines()
    return f"{type(error).__name__}: {message[0] if message else 'no message'}"


def _show(shell: Any, etype: type[BaseException], value: BaseException, tb: TracebackType | None,
          tb_offset: int | None = None) -> None:
    sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb  # what %tb reads
    print(one_line(value) + _HINT, file=sys.stderr)


def install() -> bool:
    """Install the handler in the running IPython shell (no-op outside IPython); True when installed."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or getattr(shell, "_agent_inspect_errors", False):
        return False
    shell.set_custom_exc((InspectError,), _show)
    shell._agent_inspect_errors = True
    return True
