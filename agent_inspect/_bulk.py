"""Bulk work without the cyclic GC: loads and reconstructions allocate millions of small objects."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["gc_paused"]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC (it would rescan the growing heap again and again, platform notes §3).

    On the way out the objects made meanwhile join the oldest generation: left in the youngest, the
    first collection after the pause would scan them all at once (a quarter of a second for a
    500k-record log). ``gc.freeze()`` then ``gc.unfreeze()`` moves them without a scan; it is skipped
    when the process keeps frozen objects of its own.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if enabled:
            gc.enable()
