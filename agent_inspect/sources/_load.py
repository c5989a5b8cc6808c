"""The loading entry points: ``load`` (dispatch on a URL or path), ``load_kafka``, ``load_fluss``, ``load_file``."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from agent_inspect._errors import SourceError
from agent_inspect.sources._files import read_file
from agent_inspect.sources._fluss import ConnectionFactory, read_fluss
from agent_inspect.sources._kafka import open_kafka
from agent_inspect.sources._keys import business_key_rows, take
from agent_inspect.sources._parallel import Workers, estimate_file_records, plan_workers
from agent_inspect.sources._raw import RawBatch, SourceInfo

if TYPE_CHECKING:
    from agent_inspect.log import ActionStateLog

__all__ = ["load", "load_file", "load_fluss", "load_kafka"]


def load(source: str | os.PathLike[str], **options: Any) -> ActionStateLog:
    """Load an action-state log from ``kafka://host:port/topic``, ``fluss://host:port/db.table`` or a file path.

    ``options`` are the keyword options of :func:`load_kafka`, :func:`load_fluss` or :func:`load_file`.
    """
    text = os.fspath(source)
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme in ("kafka", "fluss"):
        servers, name = _split_url(text, scheme)
        if scheme == "kafka":
            return load_kafka(servers, name, **options)
        return load_fluss(servers, name, **options)
    if scheme and scheme != "file":
        raise SourceError(f"unknown source scheme {scheme!r}; use kafka://host:port/topic, "
                          f"fluss://host:port/db.table or a file path")
    if scheme == "file":
        text = unquote(urlsplit(text).path)
    return load_file(text, **options)


def _split_url(url: str, scheme: str) -> tuple[str, str]:
    what = "topic" if scheme == "kafka" else "database.table"
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # e.g. an unclosed IPv6 bracket; the URL may hold credentials: not echoed
        raise SourceError(f"{scheme} URL does not parse ({exc}); it must look like {scheme}://host:port/{what}") \
            from None
    servers = parts.netloc.rsplit("@", 1)[-1]  # never keep credentials in a URL
    name = unquote(parts.path.lstrip("/"))
    if parts.query:
        raise SourceError(f"{scheme}:// URLs take no query; pass client settings as config={{…}}")
    if not servers or not name or "/" in name:
        shown = f"{scheme}://{servers}/{parts.path.lstrip('/')}"  # without any credentials
        raise SourceError(f"{scheme} URL {shown!r} must look like {scheme}://host:port/{what}")
    for server in servers.split(","):
        _check_port(server, scheme)
    return servers, name


def _check_port(server: str, scheme: str) -> None:
    """``host``, ``host:port`` or ``[v6]:port`` with a port from 1 to 65535 (clients would take any text)."""
    if server.startswith("["):
        host, _, rest = server.partition("]")
        port = rest[1:] if rest.startswith(":") else None
        bad_host = not rest.startswith(":") and rest != ""
    else:
        host, sep, port_text = server.rpartition(":")
        host, port = (host, port_text) if sep else (server, None)
        bad_host = ":" in host  # a bare IPv6 address
    if not host or bad_host:
        raise SourceError(f"{scheme} URL server {server!r} must be host:port (IPv6 in brackets: [::1]:port)")
    if port is None:
        return
    if not port.isdigit():
        raise SourceError(f"{scheme} URL server {server!r}: port {port!r} is not a number")
    if not 1 <= int(port) <= 65535:
        raise SourceError(f"{scheme} URL server {server!r}: port {int(port)} is outside 1..65535")


def _check_timeout(timeout: float) -> None:
    # librdkafka takes 0 or less as "wait forever": a silent peer would hang the load
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not (
            math.isfinite(timeout) and timeout > 0):
        raise SourceError(f"timeout must be a positive, finite number of seconds, not {timeout!r}")


def load_kafka(bootstrap_servers: str | None, topic: str, *, markers: Any = None,
               start_offsets: Mapping[int, int] | None = None, business_keys: Iterable[str] | None = None,
               config: Mapping[str, Any] | None = None, progress: bool = True, timeout: float = 10.0,
               allow_data_loss: bool = False, workers: int | None = 1) -> ActionStateLog:
    """Read an action-state topic, read-only, up to the end offsets captured when the load starts.

    - ``markers``: recovery markers (``{partition: offset}``, the versioned ``{"offsets": …}`` form, or a
      list of them, merged by minimum like the store's rebuild); only their partitions are read.
    - ``start_offsets``: ``{partition: offset}`` starts; other partitions are read from the earliest offset.
    - ``business_keys``: read only the partitions these keys hash to (spec §6.3) and keep only their records.
    - ``config``: librdkafka settings passed through (SASL/SSL…); commits and auto-creation stay off.
    - ``timeout``: seconds to wait for the broker before :class:`~agent_inspect.BrokerUnreachable`.
    - ``allow_data_loss``: read from the earliest retained offset instead of raising
      :class:`~agent_inspect.DataLossError` when a start offset is no longer retained.
    - ``workers``: processes that read and build partition groups in parallel (the same log); 1 = one
      process, None = the idle cores for reads of 50k records or more.
    """
    _check_timeout(timeout)
    plan_workers(workers, 0)  # a bad value fails before any I/O
    batches, info = open_kafka(bootstrap_servers, topic, markers=markers, start_offsets=start_offsets,
                               business_keys=business_keys, config=config, progress=progress,
                               timeout=timeout, allow_data_loss=allow_data_loss)
    n = plan_workers(workers, sum(info.end_offsets[p] - info.start_offsets[p] for p in info.start_offsets))
    user = {**(config or {}), **({"bootstrap.servers": bootstrap_servers} if bootstrap_servers else {})}
    # workers get the config by pipe: callbacks (oauth_cb…) cannot travel, so such loads stay in one process
    if n > 1 and all(v is None or isinstance(v, (str, int, float, bool)) for v in user.values()):
        with Workers(n) as pool:
            return pool.load_kafka(user, topic, info, keys=info.options.get("business_keys"), timeout=timeout,
                                   progress=progress)
    return build_log(batches, info)


def load_fluss(bootstrap_servers: str | None, table: str, *, markers: Any = None,
               start_offsets: Mapping[int, int] | None = None, business_keys: Iterable[str] | None = None,
               config: Mapping[str, Any] | None = None, progress: bool = True, timeout: float = 10.0,
               allow_data_loss: bool = False,
               connection_factory: ConnectionFactory | None = None, workers: int | None = 1) -> ActionStateLog:
    """Read a Fluss action-state log table ``database.table`` up to the latest offsets taken at the start.

    Markers are ``{bucket: offset}`` maps (several are merged by minimum) and must name exactly the
    table's buckets (spec §7.4). ``config`` holds pyfluss properties (Java-style keys). Every client call
    is bounded by ``timeout`` seconds. ``connection_factory(properties)`` replaces
    ``fluss.FlussConnection.create`` (tests, custom clients). Other options as in :func:`load_kafka`
    (``workers`` builds the log of the read records in parallel).
    """
    _check_timeout(timeout)
    plan_workers(workers, 0)
    batch, info = read_fluss(bootstrap_servers, table, markers=markers, start_offsets=start_offsets,
                             business_keys=business_keys, config=config, progress=progress, timeout=timeout,
                             allow_data_loss=allow_data_loss, connection_factory=connection_factory)
    with Workers(plan_workers(workers, len(batch))) as pool:
        return build_log([batch], info, pool=pool)


def load_file(path: str | os.PathLike[str], *, file_format: str | None = None,
              business_keys: Iterable[str] | None = None, progress: bool = False,
              workers: int | None = 1) -> ActionStateLog:
    """Read a dump file: kcat ``-J`` JSONL, plain JSONL (``key``/``value`` per line) or the toolkit's Parquet.

    ``file_format`` ("kcat-jsonl", "jsonl", "parquet") is detected when omitted; gzip is detected too.
    A directory written by a fleet scan (``ai.scan(..., output=DIR)``) is reopened from its Parquet parts,
    only the partitions of ``business_keys`` when given.
    A malformed line becomes a row (offset = its line number) whose ``error`` says what was wrong.
    ``progress`` shows a records bar while JSONL lines are read (off by default: files read quickly).
    ``workers``: processes that build partition groups in parallel (the same log; for files whose
    records carry partitions); 1 = one process, None = the idle cores for files of 50k records or more.
    """
    from agent_inspect.sources._window import is_dataset, load_dataset

    if is_dataset(path):  # a fleet scan's output directory (hive-partitioned Parquet parts)
        return load_dataset(path, business_keys=business_keys)
    n = plan_workers(workers, estimate_file_records(path) if workers is None else 0)
    with Workers(n) as pool:  # started now: workers import while the file is read
        return _load_file(path, file_format=file_format, business_keys=business_keys, progress=progress,
                          pool=pool)


def _load_file(path: str | os.PathLike[str], *, file_format: str | None, business_keys: Iterable[str] | None,
               progress: bool, pool: Workers) -> ActionStateLog:
    read = read_file(path, file_format=file_format, progress=progress)
    batch, errors = read.batch, dict(read.line_errors)
    info = read.source
    if business_keys is not None:
        keys = list(business_keys)
        idx = business_key_rows(keys)(batch)
        batch = take(batch, idx)
        errors = {new: errors[old] for new, old in enumerate(idx) if old in errors}
        info = SourceInfo(kind=info.kind, location=info.location, topic=info.topic,
                          start_offsets=info.start_offsets, end_offsets=info.end_offsets,
                          file_format=info.file_format, options={**info.options, "business_keys": keys})
    return build_log([batch], info, line_errors=errors, pool=pool)


def build_log(batches: Iterable[RawBatch], source: SourceInfo, *,
              line_errors: Mapping[int, str] | None = None, pool: Workers | None = None) -> ActionStateLog:
    """Hand raw batches to the log builder; reasons of malformed file lines go into the ``error`` column.

    ``line_errors`` (row index → reason) needs a single batch.
    """
    from agent_inspect.log import ActionStateLog

    build = ActionStateLog.from_raw if pool is None else pool.build  # the pool builds partition groups apart
    if not line_errors:
        return build(batches, source)
    (batch,) = list(batches)
    batch, line_errors = _in_physical_order(batch, line_errors)
    log = build([batch], source)
    _attach_line_errors(log, line_errors)
    return log


def _in_physical_order(batch: RawBatch, line_errors: Mapping[int, str]) -> tuple[RawBatch, Mapping[int, str]]:
    # Sorted here, stably by (partition, offset) like the log builder, so the builder keeps the order
    # and row indexes are positions: an error finds its row even when positions repeat.
    import numpy as np

    part = np.asarray(batch.partition, dtype=np.int64)
    off = np.asarray(batch.offset, dtype=np.int64)
    order = np.lexsort((off, part))
    if bool(np.all(order[1:] > order[:-1])):
        return batch, line_errors
    moved_to = np.empty_like(order)
    moved_to[order] = np.arange(len(order))
    idx = order.tolist()

    def pick(col: list[Any]) -> list[Any]:
        return [col[i] for i in idx]

    out = RawBatch(pick(batch.partition), pick(batch.offset), pick(batch.timestamp_ms), pick(batch.key),
                   pick(batch.value), None if batch.agent_key is None else pick(batch.agent_key))
    return out, {int(moved_to[row]): reason for row, reason in line_errors.items()}


def _attach_line_errors(log: Any, line_errors: Mapping[int, str]) -> None:
    import pandas as pd

    records = log.records
    errors = records["error"].to_numpy(dtype=object, na_value=None).copy()
    for pos, reason in line_errors.items():
        errors[pos] = reason
    records["error"] = pd.array(errors, dtype=records["error"].dtype)
