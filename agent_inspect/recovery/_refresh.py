"""Checkpoint-time refresh rows (0.4+ pending states kept across checkpoints; addendum §2).

From #1158 / #1175 on, a checkpoint re-appends every retained (not yet pruned) action state, so a
restore of that checkpoint brings back the pending state of every round in flight at it. Those
rows are the same state key with a byte-identical value: not attempts, durable calls or divergences.
A row is a refresh row iff its bytes equal the latest earlier value of its state key in the same
partition (a tombstone in between ends the chain). A row whose bytes differ is never one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from agent_inspect._types import LogLike, RuntimeLike

from typing import Any

from agent_inspect.history import subagent_result_events
from agent_inspect.recovery._rebuild import source_kind_of
from agent_inspect.store import runtime_model

__all__ = ["refresh_positions", "subagent_result_events"]


def refresh_positions(log: LogLike | pd.DataFrame, runtime: str | RuntimeLike | None = None, *, kafka_pending: str | None = None) -> frozenset[int]:
    """Positions of the refresh rows of ``log`` when ``runtime`` writes them (``0.4`` and ``main``;
    for Kafka only with ``kafka_pending="refresh"``, the default — see :mod:`agent_inspect.store`'s
    runtime table); empty for ``0.3`` or without the raw bytes (a records frame alone)."""
    model = runtime_model(runtime, kafka_pending=kafka_pending)
    raw = getattr(log, "raw", None)
    if raw is None or not model.refresh_rows(source_kind_of(log)):
        return frozenset()
    records = log.records
    errors = records["error"].notna().tolist() if "error" in records else [False] * len(records)
    latest: dict[tuple[int, bytes], bytes] = {}
    found = []
    for i, pos in enumerate(records.index.tolist()):
        key, value = raw.key[pos], raw.value[pos]
        if key is None:
            continue
        slot = (raw.partition[pos], key)
        if value is None:
            latest.pop(slot, None)
            continue
        if not errors[i] and latest.get(slot) == value:
            found.append(int(pos))
        latest[slot] = value
    return frozenset(found)


def with_subagent_result_events(state: Any, events: Any) -> Any:
    """``state`` carrying ``events`` as its ``subagentResultEvents`` (V4), for writers of synthetic logs.

    Through the codec's field when it has one, else through ``extra`` (written after ``completed``
    until the codec writes V4 in Jackson's order)."""
    import msgspec

    from agent_inspect import codec

    events = tuple(events)
    if "subagent_result_events" in getattr(type(state), "__struct_fields__", ()):
        return msgspec.structs.replace(state, subagent_result_events=events)
    items = [{"@class": e.event_class, "id": e.id, "type": e.type, "attributes": e.attrs()} for e in events]
    extra = dict(state.extra)
    extra["subagentResultEvents"] = items
    return msgspec.structs.replace(state, extra=extra) if isinstance(state, codec.ActionState) else state
