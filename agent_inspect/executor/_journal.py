"""Production mode: the overlay's writes as a journal of raw records, markers, and the combined log."""

from __future__ import annotations

import datetime
import numbers
from collections.abc import Sequence
from typing import Any

from agent_inspect._errors import ReplayError
from agent_inspect.raw import RawBatch, SourceInfo

__all__ = ["build_journal", "end_offsets", "combined_log", "epoch_ms", "JOURNAL_LOCATION"]

JOURNAL_LOCATION = "agent_inspect:replay-journal"
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def epoch_ms(t: Any) -> int:
    """Milliseconds since the epoch of an int (taken as is) or a datetime (naive means UTC)."""
    if isinstance(t, datetime.datetime):
        if t.tzinfo is None:
            t = t.replace(tzinfo=datetime.UTC)
        return int((t - _EPOCH) // datetime.timedelta(milliseconds=1))
    if isinstance(t, bool) or not isinstance(t, numbers.Integral):
        raise ReplayError(f"a journal clock gives epoch milliseconds (int) or a datetime, not {t!r}")
    return int(t)


def _base_ends(log: Any) -> dict[int, int]:
    if log is None:
        return {}
    ends = dict(getattr(getattr(log, "source", None), "end_offsets", None) or {})
    recs = log.records
    if len(recs):
        for p, off in recs.groupby("partition", observed=True)["offset"].max().items():
            ends[int(p)] = max(ends.get(int(p), 0), int(off) + 1)
    return {int(p): int(o) for p, o in ends.items()}


def build_journal(writes: Sequence[tuple[str, Any, Any]], *, log: Any, value_format: str, num_partitions: int,
                  source_kind: str = "kafka", timestamps: Sequence[int | None] | None = None) -> RawBatch:
    """A ``RawBatch`` of ``writes`` (:data:`Write`) in write order, stamped with ``timestamps`` (epoch ms) if given.

    Partition per the upstream Kafka partitioner (§6.3); offsets continue after the base log's end. Fluss rows also
    carry ``agent_key``; the Kafka partitioner stands in for Fluss's bucket function (every row of a key still lands
    in one bucket, in write order).
    """
    from agent_inspect.codec import encode_action_state, kafka_partition

    nxt = _base_ends(log)
    fluss = source_kind == "fluss"
    batch = RawBatch(agent_key=[] if fluss else None)
    stamps = list(timestamps) if timestamps is not None else [None] * len(writes)
    for (sk, task, view), ts in zip(writes, stamps, strict=True):
        p = kafka_partition(sk, num_partitions) if num_partitions > 1 else 0
        off = nxt.get(p, 0)
        nxt[p] = off + 1
        if view is None:  # a prune's tombstone (Kafka only)
            batch.append(p, off, ts, sk.encode("utf-8"), None, None)
            continue
        # a checkpoint-time refresh row (0.4+) is the retained state's bytes again, unchanged
        value = view if isinstance(view, bytes) else \
            encode_action_state(view.to_state(value_format=value_format), value_format=value_format)
        agent_key = (task.key_text if task.key_format not in ("K1.6", "K2") else task.business_key) if fluss \
            else None
        batch.append(p, off, ts, sk.encode("utf-8"), value, agent_key)
    return batch


def end_offsets(journal: Any, *, log: Any, num_partitions: int) -> dict[int, int]:
    """The recovery marker now: per partition, the next offset to be written (§6.4)."""
    ends = _base_ends(log)
    for p in range(num_partitions):
        ends.setdefault(p, 0)
    for p, off in zip(journal.partition, journal.offset):
        ends[p] = max(ends.get(p, 0), off + 1)
    return dict(sorted(ends.items()))


def combined_log(log: Any, journal: Any, *, num_partitions: int = 1) -> Any:
    """The base records followed by the journal, decoded as one ``ActionStateLog``."""
    from agent_inspect.log import ActionStateLog

    batches = []
    if log is not None:
        batches.append(log.raw)
    batches.append(journal)
    src = getattr(log, "source", None)
    starts: dict[int, int] = dict(getattr(src, "start_offsets", None) or {})
    n = max([num_partitions - 1, *journal.partition, *starts]) + 1
    for p in range(n):                          # every partition/bucket of the topic, as a source reports it
        starts.setdefault(p, 0)
    ends = end_offsets(journal, log=log, num_partitions=n)
    kind = getattr(src, "kind", None) or ("fluss" if journal.agent_key is not None else "kafka")
    source = SourceInfo(kind=kind, location=getattr(src, "location", JOURNAL_LOCATION),
                        topic=getattr(src, "topic", None), start_offsets=starts, end_offsets=ends,
                        file_format=getattr(src, "file_format", None),
                        options={**dict(getattr(src, "options", {}) or {}), "replay_journal": True})
    return ActionStateLog.from_raw(batches, source)
