"""Checkpoint-time refresh rows: a 0.4+ checkpoint re-appends every retained state byte for byte (addendum §2.2).

They are no attempts, executions or calls: the history reads a log without them.
"""

from __future__ import annotations

import weakref
from typing import Any, cast

import pandas as pd

from agent_inspect._bulk import once_per_log
from agent_inspect._types import LogLike, RecordSource
from agent_inspect.log import KEEPS_PENDING

__all__ = ["repeated_values", "refresh_rows"]

_REPEATED: weakref.WeakKeyDictionary[Any, frozenset[int]] = weakref.WeakKeyDictionary()


def repeated_values(log: LogLike) -> frozenset[int]:
    """Positions of the records whose bytes equal the latest earlier value of their state key in their partition (a
    tombstone ends the chain): the refresh rows of a runtime that writes them. Needs ``log.raw``; made once per log.

    For example::

        v4 = ai.load(ai.samples.path("production_v4"))
        sorted(ai.history.repeated_values(v4))[:5]      # the rows its checkpoints re-appended
    """
    raw = log.raw
    return once_per_log(_REPEATED, log, lambda: _repeated(log.records, raw))


def refresh_rows(log: RecordSource) -> frozenset[int]:
    """The refresh rows of ``log`` as its own (inferred) runtime writes them: :func:`repeated_values` under 0.4 and
    main, none under 0.3 or for a records frame (no bytes to compare).

    For example::

        v4 = ai.load(ai.samples.path("production_v4"))
        len(ai.history.refresh_rows(v4)), ai.history.attempts(v4)["attempt"].max()   # 392 refresh rows, 2 attempts
    """
    if getattr(log, "raw", None) is None or not hasattr(log, "runtime") or log.runtime().model not in KEEPS_PENDING:
        return frozenset()
    return repeated_values(cast("LogLike", log))     # it has the raw bytes and a runtime: a log


def _repeated(records: pd.DataFrame, raw: Any) -> frozenset[int]:
    errors = records["error"].notna().tolist() if "error" in records else [False] * len(records)
    latest: dict[tuple[int, bytes], bytes] = {}
    found = []
    keys, values, partitions = raw.key, raw.value, raw.partition   # the raw lists read once, not per record
    for pos, error in zip(records.index.tolist(), errors):
        key = keys[pos]
        if key is None:
            continue
        value, slot = values[pos], (partitions[pos], key)
        if value is None:
            latest.pop(slot, None)
            continue
        if not error and latest.get(slot) == value:
            found.append(int(pos))
        latest[slot] = value
    return frozenset(found)
