"""A tqdm.auto progress bar (notebook widget or terminal) that can be switched off."""

from __future__ import annotations

from typing import Any

__all__ = ["progress_bar"]


def progress_bar(*, total: int | None, desc: str, enabled: bool) -> Any:
    """Records read so far, with records/s; a no-op bar when ``enabled`` is false.

    For example::

        with ai.sources.progress_bar(total=None, desc="records", enabled=False) as bar:
            bar.update(10)                             # a no-op bar when not enabled
    """
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="rec", unit_scale=True, disable=not enabled,
                mininterval=0.5, leave=False)
