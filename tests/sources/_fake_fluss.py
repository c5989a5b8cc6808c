"""A fake of the small pyfluss surface the Fluss loader uses (the only fake allowed: no Fluss server runs here).

It mirrors pyfluss 1.0 (docs/platform-notes §4): async ``get_table`` / ``list_offsets`` / ``list_databases`` / ``list_tables`` /
``create_log_scanner`` / ``poll`` / ``close``, sync ``get_admin`` / ``get_table_info`` /
``subscribe_buckets``; ``poll`` returns records grouped by ``TableBucket``-like keys with
``.offset``, ``.timestamp`` and ``.row``; errors carry ``error_code`` like ``fluss.FlussError``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import fluss
import pyarrow as pa


class FakeFlussError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"FlussError(code={code}): {message}")
        self.error_code, self.message, self.is_retriable = code, message, code == 1


@dataclass(frozen=True)
class Bucket:
    table_id: int
    bucket_id: int


@dataclass(frozen=True)
class Record:
    offset: int
    timestamp: int
    row: dict[str, Any]


@dataclass
class FakeTable:
    """One log table: ``buckets[b]`` is the list of rows; ``earliest[b]`` the first retained offset."""

    buckets: dict[int, list[dict[str, Any]]]
    earliest: dict[int, int] = field(default_factory=dict)
    primary_key: bool = False
    columns: tuple[str, ...] = ("state_key", "state_payload", "agent_key")
    table_id: int = 42
    batch: int = 3  # records per bucket per poll, so reads span several polls

    def first(self, b: int) -> int:
        return self.earliest.get(b, 0)

    def latest(self, b: int) -> int:
        return self.first(b) + len(self.buckets[b])


@dataclass
class Behaviour:
    silent: str | None = None  # name of the call that never answers ("create", "get_table", "list_offsets", "poll")
    refuse: bool = False       # connection refused, like a closed port
    grow_by: int = 0           # rows appended to bucket 0 after the offsets are listed (a live table)


class FakeConnection:
    def __init__(self, tables: dict[str, FakeTable], behaviour: Behaviour) -> None:
        self.tables, self.behaviour, self.closed = tables, behaviour, False

    def get_admin(self) -> FakeAdmin:
        return FakeAdmin(self)

    async def get_table(self, path: fluss.TablePath) -> FakeHandle:
        await _maybe_hang(self.behaviour, "get_table")
        table = self.tables.get(f"{path.database_name}.{path.table_name}")
        if table is None:
            raise FakeFlussError(7, f"Table '{path}' does not exist.")
        return FakeHandle(table, self.behaviour)

    async def close(self) -> None:
        self.closed = True


class FakeAdmin:
    def __init__(self, conn: FakeConnection) -> None:
        self.conn = conn

    async def list_offsets(self, path: fluss.TablePath, bucket_ids: list[int], offset_spec: Any) -> dict[int, int]:
        await _maybe_hang(self.conn.behaviour, "list_offsets")
        table = self.conn.tables[f"{path.database_name}.{path.table_name}"]
        if repr(offset_spec) == repr(fluss.OffsetSpec.earliest()):
            return {b: table.first(b) for b in bucket_ids}
        if repr(offset_spec) == repr(fluss.OffsetSpec.latest()):
            result = {b: table.latest(b) for b in bucket_ids}
            grow = self.conn.behaviour.grow_by
            for i in range(grow):
                table.buckets[0].append({"state_key": f"late_{i}", "state_payload": b"{}", "agent_key": "late"})
            self.conn.behaviour.grow_by = 0
            return result
        raise AssertionError(f"unexpected offset spec {offset_spec!r}")

    async def list_databases(self) -> list[str]:
        return sorted({name.split(".", 1)[0] for name in self.conn.tables})

    async def list_tables(self, database_name: str) -> list[str]:
        if database_name not in await self.list_databases():
            raise FakeFlussError(4, f"Database '{database_name}' does not exist.")
        return sorted(n.split(".", 1)[1] for n in self.conn.tables if n.split(".", 1)[0] == database_name)


class FakeHandle:
    def __init__(self, table: FakeTable, behaviour: Behaviour) -> None:
        self.table, self.behaviour = table, behaviour

    def get_table_info(self) -> Any:
        return type("TableInfo", (), {"table_id": self.table.table_id, "num_buckets": len(self.table.buckets)})()

    def has_primary_key(self) -> bool:
        return self.table.primary_key

    @property
    def arrow_schema(self) -> pa.Schema:
        types = {"state_key": pa.string(), "state_payload": pa.binary(), "agent_key": pa.string()}
        return pa.schema([(c, types.get(c, pa.string())) for c in self.table.columns])

    def new_scan(self) -> FakeScan:
        return FakeScan(self)


class FakeScan:
    def __init__(self, handle: FakeHandle) -> None:
        self.handle = handle

    async def create_log_scanner(self) -> FakeScanner:
        return FakeScanner(self.handle)


class FakeScanner:
    def __init__(self, handle: FakeHandle) -> None:
        self.handle, self.position = handle, {}  # type: dict[int, int]

    def subscribe_buckets(self, bucket_offsets: dict[int, int]) -> None:
        self.position.update(bucket_offsets)

    async def poll(self, timeout_ms: int) -> dict[Bucket, list[Record]]:
        await _maybe_hang(self.handle.behaviour, "poll")
        table, out = self.handle.table, {}
        for b, pos in self.position.items():
            rows = table.buckets[b]
            first = table.first(b)
            chunk = rows[pos - first: pos - first + table.batch]
            if chunk:
                out[Bucket(table.table_id, b)] = [Record(pos + i, 1_700_000_000_000 + pos + i, r)
                                                  for i, r in enumerate(chunk)]
                self.position[b] = pos + len(chunk)
        if not out:
            await asyncio.sleep(timeout_ms / 1000)
        return out  # dict has .items(), which is all the loader uses of ScanRecords


async def _maybe_hang(behaviour: Behaviour, call: str) -> None:
    if behaviour.silent == call:
        await asyncio.Event().wait()  # like a peer that accepted the connection and never answers


def factory(tables: dict[str, FakeTable], behaviour: Behaviour | None = None):  # type: ignore[no-untyped-def]
    """A ``connection_factory`` for ``load_fluss`` serving ``tables`` ("db.table" -> FakeTable)."""
    behaviour = behaviour or Behaviour()
    seen: list[dict[str, str]] = []

    async def create(props: dict[str, str]) -> FakeConnection:
        seen.append(props)
        await _maybe_hang(behaviour, "create")
        if behaviour.refuse:
            raise FakeFlussError(1, 'connection error: ConnectionError("IO Error: Connection refused (os error 111)")')
        return FakeConnection(tables, behaviour)

    create.seen = seen  # type: ignore[attr-defined]
    return create
