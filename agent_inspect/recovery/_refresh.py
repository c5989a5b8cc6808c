"""Checkpoint-time refresh rows (0.4+ pending states kept across checkpoints; addendum §2).

From #1158 / #1175 on, a checkpoint re-appends every retained (not yet pruned) action state, so a
restore of that checkpoint brings back the pending state of every round in flight at it. Those
rows are the same state key with a byte-identical value: not attempts, durable calls or divergences.
A row is a refresh row iff its bytes equal the latest earlier value of its state key in the same
partition (a tombstone in between ends the chain). A row whose bytes differ is never one.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from agent_inspect._types import LogLike, RuntimeLike

from typing import Any

from agent_inspect.history import subagent_result_events
from agent_inspect.recovery._rebuild import source_kind_of
from agent_inspect.store import runtime_model

__all__ = ["refresh_positions", "subagent_result_events", "RetainedRounds", "retained_rounds"]


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


@dataclass(frozen=True)
class RetainedRounds:
    """The rounds a restore brings back through refresh rows alone, as the restored checkpoint held them.

    A round is *retained* when its states first appear in the rebuild window as refresh rows and no input
    of it arrives after the marker (its input was consumed before the checkpoint). ``finished``: retained
    rounds whose every state was complete at the checkpoint (done, not yet pruned) and whose only records
    after the marker are refresh rows: nothing replays them.
    ``pending``: per in-flight retained round, the positions of the refresh rows holding its incomplete
    states (the tasks the restore re-submits, RESUME). ``settled``: state keys of in-flight rounds that were
    complete at the checkpoint (their tasks are not sent again).
    """

    finished: frozenset[tuple[str, int]] = frozenset()
    pending: Mapping[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)
    settled: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.finished or self.pending)


def retained_rounds(records: pd.DataFrame, refresh: Collection[int], window: np.ndarray | pd.Series) -> RetainedRounds:
    """Classify the rounds of ``records`` whose states the window holds only through refresh rows.

    ``refresh``: positions of refresh rows (:func:`refresh_positions`); ``window``: one bool per row, the
    rebuild window. A state key's *first* record in the window is its state at the restored checkpoint
    when it is a refresh row (the checkpoint re-appended it, byte-identical to its latest earlier value).
    A round with a root whose first in-window record is not a refresh row got a new input after the
    marker is not retained; a round complete at the checkpoint but written again after it (a row whose bytes
    differ is a write, never a refresh) is left to the as-logged reading. Empty without refresh rows (0.3,
    or a records frame without bytes).
    """
    if not refresh:
        return RetainedRounds()
    import numpy as np

    mask = np.asarray(window, dtype=bool)
    ok = mask & records["error"].isna().to_numpy() & records["seq"].notna().to_numpy()
    if "tombstone" in records:
        ok &= ~records["tombstone"].fillna(False).to_numpy(dtype=bool)
    sub = records[ok]
    first: set[str] = set()
    at_checkpoint: dict[tuple[str, int], list[tuple[int, str, bool]]] = {}
    new_input: set[tuple[str, int]] = set()
    written: set[tuple[str, int]] = set()     # rounds with a write after the marker that is no refresh row
    completed = sub["completed"].fillna(False).to_numpy(dtype=bool).tolist()
    roots = sub["is_root"].fillna(False).to_numpy(dtype=bool).tolist()
    for pos, sk, bk, seq, done, root in zip(sub.index.tolist(), sub["state_key"].astype(object), sub["business_key"],
                                            sub["seq"], completed, roots):
        rnd = (str(bk), int(seq))
        if int(pos) not in refresh:
            written.add(rnd)
        if sk in first:
            continue
        first.add(sk)
        if int(pos) in refresh:
            at_checkpoint.setdefault(rnd, []).append((int(pos), str(sk), done))
        elif root:
            new_input.add(rnd)
    finished: set[tuple[str, int]] = set()
    pending: dict[tuple[str, int], tuple[int, ...]] = {}
    settled: set[str] = set()
    for rnd, states in at_checkpoint.items():
        if rnd in new_input:
            continue
        open_ = tuple(p for p, _, done in states if not done)
        if open_:
            pending[rnd] = open_
            settled.update(sk for _, sk, done in states if done)
        elif rnd not in written:
            finished.add(rnd)
    return RetainedRounds(frozenset(finished), pending, frozenset(settled))


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
