"""Checkpoint-time refresh rows: a 0.4+ checkpoint re-appends every retained state byte for byte (addendum §2.2).

They are no attempts, executions or calls: the history reads a log without them.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from agent_inspect._bulk import once_per_log
from agent_inspect._errors import RecoveryError
from agent_inspect._types import LogLike, RecordSource
from agent_inspect.log import KEEPS_PENDING, resolve_runtime, source_kind_of

if TYPE_CHECKING:
    from agent_inspect._types import RuntimeLike

__all__ = ["repeated_values", "refresh_rows", "writes_refresh_rows", "source_kind_of", "KAFKA_PENDING"]

KAFKA_PENDING = ("refresh", "marker")
"""How a Kafka store keeps pending states across checkpoints (addendum §2.3): ``"refresh"`` (the default) re-appends
them at each checkpoint as Fluss does, ``"marker"`` moves the marker back and writes no refresh rows."""

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


def refresh_rows(log: RecordSource, runtime: str | RuntimeLike | None = "auto", *,
                 kafka_pending: str | None = None) -> frozenset[int]:
    """The refresh rows of ``log`` as ``runtime`` writes them (``"auto"``: the log's own, inferred):
    :func:`repeated_values` when :func:`writes_refresh_rows` says that runtime writes them for the log's source
    kind and ``kafka_pending`` (default: the runtime's own, else ``"refresh"``); none for a records frame (no bytes
    to compare). ``ai.recovery.refresh_positions`` is this reading under a recovery's runtime.

    For example::

        v4 = ai.load(ai.samples.path("production_v4"))
        len(ai.history.refresh_rows(v4)), ai.history.attempts(v4)["attempt"].max()   # 392 refresh rows, 2 attempts
        len(ai.history.refresh_rows(v4, kafka_pending="marker"))   # 0: a Kafka marker writer re-appends nothing
    """
    if getattr(log, "raw", None) is None:
        return frozenset()
    keeps_pending = getattr(runtime, "keeps_pending", None)     # a RuntimeModel: its own flags
    if keeps_pending is None:
        keeps_pending = _runtime_name(log, runtime) in KEEPS_PENDING
    if kafka_pending is None:
        kafka_pending = getattr(runtime, "kafka_pending", None)
    if not writes_refresh_rows(bool(keeps_pending), source_kind_of(log), kafka_pending):
        return frozenset()
    return repeated_values(cast("LogLike", log))     # it has the raw bytes: a log


def writes_refresh_rows(keeps_pending: bool, source_kind: str | None, kafka_pending: str | None = None) -> bool:
    """Whether a log of ``source_kind`` ("kafka", "fluss", or None: read as Kafka) has checkpoint-time refresh rows
    when its runtime ``keeps_pending`` states (0.4 and main) and a Kafka store keeps them by ``kafka_pending``
    (:data:`KAFKA_PENDING`; None: ``"refresh"``). The one rule: ``ai.store.RuntimeModel.refresh_rows``,
    :func:`refresh_rows` and ``ai.recovery.refresh_positions`` all ask it.

    For example::

        ai.history.writes_refresh_rows(True, "kafka"), ai.history.writes_refresh_rows(True, "kafka", "marker")
        ai.history.writes_refresh_rows(True, "fluss", "marker")   # True: Fluss has no marker option
    """
    if kafka_pending is not None and kafka_pending not in KAFKA_PENDING:
        raise RecoveryError(f"unknown kafka_pending {kafka_pending!r}; use one of {', '.join(KAFKA_PENDING)}")
    if not keeps_pending:
        return False
    return source_kind == "fluss" or kafka_pending in (None, "refresh")


def _runtime_name(log: RecordSource, runtime: str | RuntimeLike | None) -> str:
    """The model name of ``runtime``: a name, a ``RuntimeInfo``, anything with a ``name``; "auto" / None: the log's."""
    if runtime is None or runtime == "auto":
        return str(log.runtime().model) if hasattr(log, "runtime") else resolve_runtime("auto", log).model
    name = getattr(runtime, "model", None) or getattr(runtime, "name", runtime)
    return resolve_runtime(str(name)).model


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
