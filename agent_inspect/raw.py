"""What every source hands the log builder: raw columns with their physical positions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RawBatch", "SourceInfo"]


@dataclass(slots=True)
class RawBatch:
    """Raw records as parallel columns (equal lengths), in physical order per partition or bucket.

    ``value`` None is a tombstone. ``key`` and ``value`` are the bytes exactly as stored.

    For example::

        batch = ai.raw.RawBatch()
        batch.append(0, 0, 1700000000000, b"user-1_1_e_a", b'{"taskEvent": null}')
        batch.append(0, 1, None, b"user-1_1_e_a", None)    # a tombstone
        len(batch.offset), batch.value[1] is None
    """

    partition: list[int] = field(default_factory=list)
    offset: list[int] = field(default_factory=list)
    timestamp_ms: list[int | None] = field(default_factory=list)
    key: list[bytes | None] = field(default_factory=list)
    value: list[bytes | None] = field(default_factory=list)
    agent_key: list[str | None] | None = None

    def __len__(self) -> int:
        return len(self.offset)

    def append(self, partition: int, offset: int, timestamp_ms: int | None,
               key: bytes | None, value: bytes | None, agent_key: str | None = None) -> None:
        """Add one record (slow path; sources with batches extend the lists directly)."""
        self.partition.append(partition)
        self.offset.append(offset)
        self.timestamp_ms.append(timestamp_ms)
        self.key.append(key)
        self.value.append(value)
        if self.agent_key is not None:
            self.agent_key.append(agent_key)


@dataclass(frozen=True)
class SourceInfo:
    """Where a log came from and which range of it was read. Never holds credentials.

    For example::

        log.source.kind, log.source.location, log.source.file_format   # where the log came from
        ai.raw.SourceInfo("file", "dump.jsonl", file_format="jsonl")
    """

    kind: str
    location: str
    topic: str | None = None
    start_offsets: Mapping[int, int] = field(default_factory=dict)
    end_offsets: Mapping[int, int] = field(default_factory=dict)
    file_format: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
