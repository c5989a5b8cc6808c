"""A tqdm.auto progress bar (notebook widget or terminal) that can be switched off."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Protocol

from agent_inspect._controls import show_controls

if TYPE_CHECKING:
    from tqdm.auto import tqdm

__all__ = ["progress_bar"]


class Counter(Protocol):
    """What a read counts its records on: a tqdm bar, or anything with ``update(n)``."""

    def update(self, n: int) -> object: ...


def progress_bar(*, total: int | None, desc: str, enabled: bool, unit: str = "rec") -> tqdm:
    """Records (or other ``unit``) done so far, with their rate; a no-op bar when ``enabled`` is false.

    For example::

        with ai.sources.progress_bar(total=None, desc="records", enabled=False) as bar:
            bar.update(10)                             # a no-op bar when not enabled
    """
    from tqdm.auto import tqdm

    # the bar redraws its line with carriage returns, which the CLI's inert stderr would write out: it draws on the
    # stream beneath, its description (a topic or file name) made inert here
    return tqdm(total=total, desc=show_controls(desc), unit=unit, unit_scale=unit == "rec", disable=not enabled,
                mininterval=0.5, leave=False, dynamic_ncols=True, file=_redraw_stream())


def _redraw_stream() -> Any:
    return getattr(sys.stderr, "redraw_stream", sys.stderr)
