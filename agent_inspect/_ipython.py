"""In IPython and Jupyter, an :class:`InspectError` can print as one readable line, not a traceback.

Our errors already say what was wrong and what to do; the 15–60 lines of traceback above that line
bury it. The full traceback stays one command away (``%tb``). Opt-in (``%load_ext agent_inspect`` or
``ai.configure(errors="short")``): importing the package changes nothing in the shell, and a handler
the user already had keeps handling its own exceptions.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import TracebackType
from typing import Any

from agent_inspect._controls import show_controls
from agent_inspect._errors import InspectError

__all__ = ["install", "uninstall", "one_line", "running_shell"]

_HINT = "  (%tb shows the full traceback)"
_PREVIOUS = "_agent_inspect_previous"


def one_line(error: BaseException) -> str:
    """The line shown for ``error``: its class and message, its control characters written out (a message may quote
    a business key or an action name from the log: an escape sequence in it is shown, never obeyed)."""
    message = show_controls(str(error)).strip().splitlines()
    return f"{type(error).__name__}: {message[0] if message else 'no message'}"


def running_shell() -> Any:
    """The running IPython shell, or None (IPython is never imported here)."""
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


def install(shell: Any = None) -> bool:
    """Show our errors as one line in ``shell`` (default: the running one); True when newly installed.

    A custom exception handler already set (``shell.set_custom_exc``) keeps the exceptions it handled.
    """
    shell = running_shell() if shell is None else shell
    if shell is None or hasattr(shell, _PREVIOUS):
        return False
    previous_types: tuple[type[BaseException], ...] = tuple(shell.custom_exceptions or ())
    previous: Callable[..., Any] | None = shell.CustomTB if previous_types else None

    def handler(self: Any, etype: type[BaseException], value: BaseException, tb: TracebackType | None,
                tb_offset: int | None = None) -> Any:
        if isinstance(value, InspectError) or previous is None:
            sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb  # what %tb reads
            print(one_line(value) + _HINT, file=sys.stderr)
            return None
        return previous(etype, value, tb, tb_offset=tb_offset)

    shell.set_custom_exc((InspectError, *previous_types), handler)
    setattr(shell, _PREVIOUS, (previous_types, previous))
    return True


def uninstall(shell: Any = None) -> bool:
    """Give ``shell`` back the handler it had before :func:`install`; True when one was installed."""
    shell = running_shell() if shell is None else shell
    if shell is None or not hasattr(shell, _PREVIOUS):
        return False
    previous_types, previous = getattr(shell, _PREVIOUS)
    delattr(shell, _PREVIOUS)
    shell.custom_exceptions = previous_types
    if previous is not None:
        shell.CustomTB = previous
    return True
