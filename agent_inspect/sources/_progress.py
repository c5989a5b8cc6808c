"""A tqdm.auto progress bar (notebook widget or terminal) that can be switched off."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tqdm.auto import tqdm

__all__ = ["progress_bar"]


class Counter(Protocol):
    """What a read counts its records on: a tqdm bar, or anything with ``update(n)``."""

    def update(self, n: int) -> object: ...


def progress_bar(*, total: int | None, desc: str, enabled: bool) -> tqdm:
    """Records read so far, with records/s; a no-op bar when ``enabled`` is false.

    For example::

        with ai.sources.progress_bar(total=None, desc="records", enabled=False) as bar:
            bar.update(10)                             # a no-op bar when not enabled
    """
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="rec", unit_scale=True, disable=not enabled,
                mininterval=0.5, leave=False)
