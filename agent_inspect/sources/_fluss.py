"""Read a Fluss action-state log table with pyfluss (module ``fluss``), every call under a timeout.

pyfluss is async only and hangs forever on a peer that accepts TCP but never answers, so each call
goes through ``asyncio.wait_for``; when the caller already runs an event loop (Jupyter), the whole
read runs in a worker thread with its own loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from agent_inspect._errors import BrokerUnreachable, SourceError
from agent_inspect._glossary import did_you_mean
from agent_inspect.raw import RawBatch, SourceInfo
from agent_inspect.sources._keys import business_key_filter
from agent_inspect.sources._offsets import merge_markers, plan_reads, read_options
from agent_inspect.sources._progress import progress_bar
from agent_inspect.sources._urls import resolve_timeout

if TYPE_CHECKING:
    from agent_inspect._types import MarkersLike

__all__ = ["ConnectionFactory", "read_fluss", "plan_fluss", "read_fluss_bucket"]

ConnectionFactory = Callable[[dict[str, str]], Awaitable[Any]]
"""Builds a connection from pyfluss config properties, like ``fluss.FlussConnection.create(fluss.Config(p))``."""

_T = TypeVar("_T")
_CLIENT_ERROR = -2
_NETWORK_EXCEPTION = 1
_TABLE_NOT_EXIST = 7
_SECRET_HINTS = ("password", "secret", "jaas", "token")
_POLL_MS = 200


def read_fluss(bootstrap: str | None, table: str, *, markers: MarkersLike = None,
               start_offsets: Mapping[int, int] | None = None, business_keys: Iterable[str] | None = None,
               config: Mapping[str, Any] | None = None, progress: bool = True, timeout: float | None = None,
               allow_data_loss: bool = False, connection_factory: ConnectionFactory | None = None,
               other_keys: set[str] | None = None) -> tuple[RawBatch, SourceInfo]:
    """Read ``db.table`` per bucket from its start (marker, offset or earliest) to the latest offset taken first.

    With ``business_keys``, ``other_keys`` (a set) collects the business keys of the records read but left out:
    a missing key's close matches.

    For example::

        batches, info = ai.sources.read_fluss("127.0.0.1:9123", "agents.action_state", markers=[{0: 5}])
        ai.log.build_log(batches, info)                # what ai.load_fluss does
    """
    if markers is not None and start_offsets is not None:
        raise SourceError("pass either markers or start_offsets, not both")
    db, name = _split_table(table)
    timeout = resolve_timeout(timeout)
    props = _props(bootstrap, config)
    fluss = _client()
    factory = connection_factory or _default_factory(fluss)
    keys = list(business_keys) if business_keys is not None else None

    async def main() -> tuple[RawBatch, SourceInfo]:
        return await _read(fluss, factory, props, db, name, markers=markers, start_offsets=start_offsets,
                           keys=keys, progress=progress, timeout=timeout, allow_data_loss=allow_data_loss,
                           others=other_keys)

    return _run(main)


def plan_fluss(bootstrap: str | None, table: str, *, markers: MarkersLike = None, config: Mapping[str, Any] | None = None,
               timeout: float | None = None, allow_data_loss: bool = False,
               connection_factory: ConnectionFactory | None = None) -> SourceInfo:
    """The buckets of ``db.table`` and the offsets a read would take (marker or earliest, to latest); no records.

    Each bucket's ``[start_offsets[b], end_offsets[b])`` can then be read on its own with
    :func:`read_fluss_bucket` (one task per bucket of a fleet scan).

    For example::

        spec = ai.sources.plan_fluss("127.0.0.1:9123", "agents.action_state")
        spec.start_offsets, spec.end_offsets           # one window per bucket
    """
    db, name = _split_table(table)
    timeout = resolve_timeout(timeout)
    props = _props(bootstrap, config)
    fluss = _client()
    factory = connection_factory or _default_factory(fluss)
    merged = merge_markers(markers) if markers is not None else None

    async def main() -> SourceInfo:
        where = props["bootstrap.servers"]
        conn = await _call(factory(props), timeout=timeout, what="connecting", where=where)
        try:
            path, tbl, buckets = await _open_table(fluss, conn, db, name, timeout=timeout, where=where)
            del tbl
            earliest, latest = await _offsets(fluss, conn, path, buckets, timeout=timeout, where=where)
        finally:
            await _close(conn, timeout)
        plan = plan_reads(partitions=buckets, earliest=earliest, latest=latest, markers=merged,
                          require_same_set=True, allow_data_loss=allow_data_loss, what="bucket",
                          where=f"table {db}.{name}")
        options = read_options(plan, markers=merged, start_offsets=None, business_keys=None, config=_public(props))
        return SourceInfo(kind="fluss", location=f"fluss://{where}/{db}.{name}", topic=f"{db}.{name}",
                          start_offsets=dict(plan.start), end_offsets=dict(plan.end), options=options)

    return _run(main)


def read_fluss_bucket(bootstrap: str | None, table: str, bucket: int, start: int, end: int, *,
                      config: Mapping[str, Any] | None = None, timeout: float | None = None,
                      connection_factory: ConnectionFactory | None = None) -> RawBatch:
    """Read offsets ``[start, end)`` of one bucket of ``db.table`` (a window planned by :func:`plan_fluss`).

    For example::

        batch = ai.sources.read_fluss_bucket("127.0.0.1:9123", "agents.action_state", 0, 0, 500)
    """
    db, name = _split_table(table)
    timeout = resolve_timeout(timeout)
    props = _props(bootstrap, config)
    fluss = _client()
    factory = connection_factory or _default_factory(fluss)

    async def main() -> RawBatch:
        where = props["bootstrap.servers"]
        out = {bucket: RawBatch(agent_key=[])}
        if start >= end:
            return out[bucket]
        conn = await _call(factory(props), timeout=timeout, what="connecting", where=where)
        try:
            _path, tbl, buckets = await _open_table(fluss, conn, db, name, timeout=timeout, where=where)
            if bucket not in buckets:
                raise SourceError(f"table {db}.{name} has no bucket {bucket} (buckets 0-{len(buckets) - 1}); "
                                  f"was it recreated since the scan was planned?")
            scanner = await _call(tbl.new_scan().create_log_scanner(), timeout=timeout,
                                  what="creating a log scanner", where=where)
            scanner.subscribe_buckets({bucket: start})
            await _drain(scanner, out, {bucket: end}, {bucket}, timeout=timeout, where=where,
                         desc=f"fluss {db}.{name}#{bucket}", total=end - start, progress=False)
        finally:
            await _close(conn, timeout)
        return out[bucket]

    return _run(main)


def _split_table(table: str) -> tuple[str, str]:
    db, dot, name = table.partition(".")
    if not dot or not db or not name:
        raise SourceError(f"Fluss table {table!r} must be written 'database.table'")
    return db, name


def _props(bootstrap: str | None, config: Mapping[str, Any] | None) -> dict[str, str]:
    props = {str(k): str(v) for k, v in (config or {}).items()}
    if bootstrap:
        props["bootstrap.servers"] = bootstrap
    props.setdefault("bootstrap.servers", "localhost:9123")
    return props


def _public(props: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in props.items()
            if k != "bootstrap.servers" and not any(h in k.lower() for h in _SECRET_HINTS)}


def _client() -> Any:
    try:
        import fluss
    except ImportError:
        raise SourceError("reading Fluss needs pyfluss: pip install 'agent_inspect[fluss]'") from None
    return fluss


def _default_factory(fluss: Any) -> ConnectionFactory:
    def create(props: dict[str, str]) -> Awaitable[Any]:
        try:
            cfg = fluss.Config(props)
        except Exception as exc:  # noqa: BLE001 - pyfluss raises its own FlussError for bad keys
            raise SourceError(f"bad Fluss client config: {_message(exc)}; keys are Java-style, "
                              f"e.g. 'security.protocol'") from None
        connecting: Awaitable[Any] = fluss.FlussConnection.create(cfg)
        return connecting

    return create


def _run(main: Callable[[], Awaitable[_T]]) -> _T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())  # type: ignore[arg-type]
    # A loop already runs here (Jupyter): give the read its own loop in a worker thread. The pool is
    # not joined on exit, so a client call stuck past its timeout cannot block the caller.
    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="agent-inspect-fluss")
    try:
        return pool.submit(asyncio.run, main()).result()  # type: ignore[arg-type]
    finally:
        pool.shutdown(wait=False)


def _message(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return str(text).splitlines()[0][:300]


async def _call(awaitable: Awaitable[_T], *, timeout: float, what: str, where: str) -> _T:
    try:
        return await asyncio.wait_for(awaitable, timeout)
    except TimeoutError:
        said = f"Fluss at {where} did not answer within {timeout:g}s while {what}; check the address and network"
        raise BrokerUnreachable(f"{said}, or raise timeout=", cli=f"{said}, or raise --timeout") from None
    except SourceError:
        raise
    except Exception as exc:  # noqa: BLE001 - pyfluss reports everything as FlussError
        code = getattr(exc, "error_code", None)
        if code == _NETWORK_EXCEPTION:
            raise BrokerUnreachable(f"Fluss at {where} is unreachable while {what}: {_message(exc)}; "
                                    f"check the address and that the cluster is up") from None
        if code == _CLIENT_ERROR and "lookup address" in str(exc):   # pyfluss: "failed to lookup address information"
            raise BrokerUnreachable(f"Fluss at {where}: no such host ({_message(exc).rstrip('.')}); check the host "
                                    f"name in the address") from None
        if code == _TABLE_NOT_EXIST:
            raise _NoTable(f"Fluss table does not exist ({_message(exc)}); check the database.table name") from None
        raise SourceError(f"Fluss failed while {what}: {_message(exc)}") from None


async def _open_table(fluss: Any, conn: Any, db: str, name: str, *, timeout: float,
                      where: str) -> tuple[Any, Any, list[int]]:
    """The table's path, handle and buckets, after checking it is an unpartitioned action-state log table."""
    path = fluss.TablePath(db, name)
    try:
        table = await _call(conn.get_table(path), timeout=timeout, what=f"opening table {db}.{name}", where=where)
    except _NoTable:
        close = did_you_mean([f"{db}.{name}"], await _table_names(conn, db, timeout=timeout))
        raise SourceError(f"Fluss table {db}.{name} does not exist on {where}; check the database.table name"
                          + close) from None
    info = table.get_table_info()
    if table.has_primary_key():
        raise SourceError(f"{db}.{name} is a primary-key table; the action-state store writes a log table")
    if getattr(info, "get_partition_keys", list)():
        raise SourceError(f"{db}.{name} is a partitioned table; the action-state store writes an "
                          f"unpartitioned log table")
    columns = set(table.arrow_schema.names)
    if not {"state_key", "state_payload"} <= columns:
        raise SourceError(f"{db}.{name} has columns {sorted(columns)}, not state_key/state_payload; "
                          f"is this an action-state table?")
    return path, table, list(range(info.num_buckets))


class _NoTable(SourceError):
    """The table asked for does not exist (pyfluss's TABLE_NOT_EXIST)."""


async def _table_names(conn: Any, db: str, *, timeout: float) -> list[str]:
    """The ``db.table`` names a missing table may have been meant as: the tables of ``db``, else of every
    database (a misspelt database); none when the client cannot list them. Only for a hint: never raises."""
    admin = conn.get_admin()

    async def tables(database: str) -> list[str]:
        return [f"{database}.{t}" for t in await asyncio.wait_for(admin.list_tables(database), timeout)]

    try:
        try:
            return await tables(db)
        except Exception:  # noqa: BLE001 - no such database: look at them all
            names: list[str] = []
            for database in await asyncio.wait_for(admin.list_databases(), timeout):
                names += await tables(database)
            return names
    except Exception:  # noqa: BLE001 - a hint only; the error says what to check without it
        return []


async def _offsets(fluss: Any, conn: Any, path: Any, buckets: list[int], *, timeout: float,
                   where: str) -> tuple[Mapping[int, int], Mapping[int, int]]:
    admin = conn.get_admin()
    earliest = await _call(admin.list_offsets(path, bucket_ids=buckets, offset_spec=fluss.OffsetSpec.earliest()),
                           timeout=timeout, what="listing earliest offsets", where=where)
    latest = await _call(admin.list_offsets(path, bucket_ids=buckets, offset_spec=fluss.OffsetSpec.latest()),
                         timeout=timeout, what="listing latest offsets", where=where)
    return earliest, latest


async def _close(conn: Any, timeout: float) -> None:
    try:
        await asyncio.wait_for(conn.close(), timeout)
    except Exception:  # noqa: BLE001 - closing a broken connection must not hide the real error
        pass


async def _read(fluss: Any, factory: ConnectionFactory, props: dict[str, str], db: str, name: str, *,
                markers: Any, start_offsets: Mapping[int, int] | None, keys: list[str] | None,
                progress: bool, timeout: float, allow_data_loss: bool,
                others: set[str] | None = None) -> tuple[RawBatch, SourceInfo]:
    where = props["bootstrap.servers"]
    conn = await _call(factory(props), timeout=timeout, what="connecting", where=where)
    try:
        path, table, buckets = await _open_table(fluss, conn, db, name, timeout=timeout, where=where)
        earliest, latest = await _offsets(fluss, conn, path, buckets, timeout=timeout, where=where)
        merged = merge_markers(markers) if markers is not None else None
        starts = merge_markers(start_offsets) if start_offsets is not None else None
        plan = plan_reads(partitions=buckets, earliest=earliest, latest=latest, markers=merged,
                          start_offsets=starts, require_same_set=True, allow_data_loss=allow_data_loss, what="bucket",
                          where=f"table {db}.{name}")
        remaining = {b for b in plan.start if plan.start[b] < plan.end[b]}
        by_bucket = {b: RawBatch(agent_key=[]) for b in sorted(remaining)}
        if remaining:
            scanner = await _call(table.new_scan().create_log_scanner(), timeout=timeout,
                                  what="creating a log scanner", where=where)
            scanner.subscribe_buckets({b: plan.start[b] for b in sorted(remaining)})
            await _drain(scanner, by_bucket, plan.end, remaining, timeout=timeout, where=where,
                         desc=f"fluss {db}.{name}", total=plan.total, progress=progress)
    finally:
        await _close(conn, timeout)
    batch = _in_bucket_order(by_bucket)
    if keys is not None:
        batch = business_key_filter(keys, others=others)(batch)
    options = read_options(plan, markers=merged, start_offsets=starts, business_keys=keys, config=_public(props))
    source = SourceInfo(kind="fluss", location=f"fluss://{where}/{db}.{name}", topic=f"{db}.{name}",
                        start_offsets=dict(plan.start), end_offsets=dict(plan.end), options=options)
    return batch, source


def _in_bucket_order(by_bucket: Mapping[int, RawBatch]) -> RawBatch:
    """One batch, buckets ascending, each in offset order: the log's physical order, so it needs no sort."""
    out = RawBatch(agent_key=[])
    for b in sorted(by_bucket):
        part = by_bucket[b]
        out.partition += part.partition
        out.offset += part.offset
        out.timestamp_ms += part.timestamp_ms
        out.key += part.key
        out.value += part.value
        out.agent_key += part.agent_key  # type: ignore[operator]
    return out


async def _drain(scanner: Any, by_bucket: Mapping[int, RawBatch], end: Mapping[int, int], remaining: set[int], *,
                 timeout: float, where: str, desc: str, total: int, progress: bool) -> None:
    bar = progress_bar(total=total, desc=desc, enabled=progress)
    poll_ms = max(1, min(_POLL_MS, int(timeout * 500)))  # a poll may wait its full time: stay inside the timeout
    try:
        last_progress = time.monotonic()
        while remaining:
            records = await _call(scanner.poll(poll_ms), timeout=timeout, what="polling", where=where)
            got = 0
            for bucket, recs in records.items():
                b = bucket.bucket_id
                if b not in remaining:
                    continue
                last = end[b] - 1
                for r in recs:
                    o = r.offset
                    if o > last:
                        remaining.discard(b)
                        break
                    row = r.row
                    key = row.get("state_key")
                    by_bucket[b].append(b, o, r.timestamp, None if key is None else str(key).encode("utf-8"),
                                        _bytes(row.get("state_payload")), _text(row.get("agent_key")))
                    got += 1
                    if o == last:
                        remaining.discard(b)
                        break
            if got:
                bar.update(got)
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > timeout:
                said = (f"Fluss at {where} sent nothing for {timeout:g}s while buckets {sorted(remaining)} still had "
                        "records to read; retry or raise")
                raise BrokerUnreachable(f"{said} timeout=", cli=f"{said} --timeout")
    finally:
        bar.close()


def _bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return str(value).encode("utf-8")


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
