"""Bulk work: without the cyclic GC (loads and reconstructions allocate millions of small objects), and done
once per log (every rule and verb over one log reads the same records)."""

from __future__ import annotations

import contextlib
import gc
import weakref
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

__all__ = ["gc_paused", "once_per_log"]

T = TypeVar("T")


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


def once_per_log(cache: weakref.WeakKeyDictionary[Any, T], log: object, make: Callable[[], T]) -> T:
    """``make()`` for ``log``, made once and kept in ``cache`` for as long as the log lives; a log that cannot be
    weakly referenced (a bare frame) gets a fresh one on every call."""
    try:
        made = cache.get(log)
    except TypeError:
        return make()
    if made is None:
        made = cache[log] = make()
    return made
