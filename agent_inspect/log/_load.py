"""The loading entry points: ``load`` (dispatch on a URL or path), ``load_kafka``, ``load_fluss``, ``load_file``."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from agent_inspect._errors import SourceError
from agent_inspect.log._assemble import (
    build_log,
    check_business_keys,
    key_texts,
    note_repeated_positions,
)
from agent_inspect.log._log import ActionStateLog
from agent_inspect.log._parallel import Workers, estimate_file_records, plan_workers
from agent_inspect.raw import SourceInfo
from agent_inspect.sources import (
    ConnectionFactory,
    FileKind,
    business_key_rows,
    business_key_texts,
    check_timeout,
    expect_kind,
    open_kafka,
    read_file,
    read_fluss,
    resolve_timeout,
    source_scheme,
    split_source_url,
    take,
)

if TYPE_CHECKING:
    from agent_inspect._types import MarkersLike

__all__ = ["load", "load_file", "load_fluss", "load_kafka", "build_log"]


def load(source: str | os.PathLike[str], **options: Any) -> ActionStateLog:
    """Load an action-state log from ``kafka://host:port/topic``, ``fluss://host:port/db.table`` or a file path.

    ``options`` are the keyword options of :func:`load_kafka`, :func:`load_fluss` or :func:`load_file`.

    For example::

        log = ai.load("sample_logs/production.jsonl")     # or "kafka://broker:9092/topic", "fluss://host:9123/db.table"
    """
    text = os.fspath(source)
    scheme = source_scheme(text)
    if scheme in ("kafka", "fluss"):
        servers, name = split_source_url(text, scheme)
        if scheme == "kafka":
            return load_kafka(servers, name, **options)
        return load_fluss(servers, name, **options)
    if scheme and scheme != "file":
        raise SourceError(f"unknown source scheme {scheme!r}; use kafka://host:port/topic, "
                          f"fluss://host:port/db.table or a file path")
    if scheme == "file":
        text = unquote(urlsplit(text).path)
    return load_file(text, **options)


def load_kafka(bootstrap_servers: str | None, topic: str, *, markers: MarkersLike = None,
               start_offsets: Mapping[int, int] | None = None, business_keys: Iterable[str | int] | None = None,
               config: Mapping[str, Any] | None = None, progress: bool = True, timeout: float | None = None,
               allow_data_loss: bool = False, workers: int | None = 1) -> ActionStateLog:
    """Read an action-state topic, read-only, up to the end offsets captured when the load starts.

    - ``markers``: recovery markers (``{partition: offset}``, the versioned ``{"offsets": …}`` form, or a
      list of them, merged by minimum like the store's rebuild); only their partitions are read.
    - ``start_offsets``: ``{partition: offset}`` starts; other partitions are read from the earliest offset.
    - ``business_keys``: read only the partitions these keys hash to (spec §6.3) and keep only their records.
    - ``config``: librdkafka settings passed through (SASL/SSL…); commits and auto-creation stay off.
    - ``timeout``: seconds to wait for the broker before :class:`~agent_inspect.BrokerUnreachable` (None: 10).
    - ``allow_data_loss``: read from the earliest retained offset instead of raising
      :class:`~agent_inspect.DataLossError` when a start offset is no longer retained, or when retention deletes
      records while the load reads them (``source.options["data_loss"]`` notes each gap, with ``workers`` too).
    - ``workers``: Dask worker processes (a ``LocalCluster`` on 127.0.0.1 for this load) that read and build
      one partition each in parallel (the same log); 1 = this process only, None = the idle cores for reads
      of 50k records or more.

    For example::

        log = ai.load_kafka("broker:9092", "flink-agents-action-state", business_keys=["user-42"])
    """
    timeout = resolve_timeout(timeout)
    check_timeout(timeout)
    plan_workers(workers, 0)  # a bad value fails before any I/O
    business_keys = business_key_texts(business_keys)   # a list: read twice, load then check
    others: set[str] = set()      # the keys of the partitions read that were left out: a typo's close matches
    batches, info = open_kafka(bootstrap_servers, topic, markers=markers, start_offsets=start_offsets,
                               business_keys=business_keys, config=config, progress=progress,
                               timeout=timeout, allow_data_loss=allow_data_loss, other_keys=others)
    n = plan_workers(workers, sum(info.end_offsets[p] - info.start_offsets[p] for p in info.start_offsets))
    user = {**(config or {}), **({"bootstrap.servers": bootstrap_servers} if bootstrap_servers else {})}
    # workers get the config pickled: callbacks (oauth_cb…) cannot travel, so such loads stay in one process
    if n > 1 and all(v is None or isinstance(v, (str, int, float, bool)) for v in user.values()):
        with Workers(n) as pool:
            log = pool.load_kafka(user, topic, info, keys=info.options.get("business_keys"), timeout=timeout,
                                  progress=progress, allow_data_loss=allow_data_loss)
    else:
        log = build_log(batches, info)
    # suggestions come from the partitions this process read (a parallel load's workers keep theirs)
    return check_business_keys(log, business_keys, known=lambda: others) if business_keys is not None else log


def load_fluss(bootstrap_servers: str | None, table: str, *, markers: MarkersLike = None,
               start_offsets: Mapping[int, int] | None = None, business_keys: Iterable[str | int] | None = None,
               config: Mapping[str, Any] | None = None, progress: bool = True, timeout: float | None = None,
               allow_data_loss: bool = False,
               connection_factory: ConnectionFactory | None = None, workers: int | None = 1) -> ActionStateLog:
    """Read a Fluss action-state log table ``database.table`` up to the latest offsets taken at the start.

    Markers are ``{bucket: offset}`` maps (several are merged by minimum) and must name exactly the
    table's buckets (spec §7.4). ``config`` holds pyfluss properties (Java-style keys). Every client call
    is bounded by ``timeout`` seconds (None: 10). ``connection_factory(properties)`` replaces
    ``fluss.FlussConnection.create`` (tests, custom clients). Other options as in :func:`load_kafka`
    (``workers`` builds the log of the read records in parallel).

    For example::

        log = ai.load_fluss("fluss-coordinator:9123", "agents.action_state", business_keys=["user-42"])
    """
    timeout = resolve_timeout(timeout)
    check_timeout(timeout)
    plan_workers(workers, 0)
    business_keys = business_key_texts(business_keys)
    others: set[str] = set()      # every bucket is read: the other keys of the table, a typo's close matches
    batch, info = read_fluss(bootstrap_servers, table, markers=markers, start_offsets=start_offsets,
                             business_keys=business_keys, config=config, progress=progress, timeout=timeout,
                             allow_data_loss=allow_data_loss, connection_factory=connection_factory,
                             other_keys=others)
    with Workers(plan_workers(workers, len(batch))) as pool:
        log = build_log([batch], info, pool=pool)
    return check_business_keys(log, business_keys, known=lambda: others) if business_keys is not None else log


def load_file(path: str | os.PathLike[str], *, file_format: str | None = None,
              business_keys: Iterable[str | int] | None = None, progress: bool = False,
              workers: int | None = 1) -> ActionStateLog:
    """Read a dump file: kcat ``-J`` JSONL, plain JSONL (``key``/``value`` per line) or the toolkit's Parquet.

    ``file_format`` ("kcat-jsonl", "jsonl", "parquet") is detected when omitted; gzip is detected too.
    A directory written by a fleet scan (``ai.scan(..., output=DIR)``) is reopened from its Parquet parts,
    only the partitions of ``business_keys`` when given.
    A malformed line becomes a row (offset = its line number) whose ``error`` says what was wrong.
    ``progress`` shows a records bar while JSONL lines are read (off by default: files read quickly).
    ``workers``: Dask worker processes (a ``LocalCluster`` for this load) that build partition groups in
    parallel (the same log; for files whose records carry partitions); 1 = one process, None = the idle
    cores for files of 50k records or more.

    For example::

        log = ai.load_file("sample_logs/production.kcat.jsonl")     # kcat -J, plain JSONL or Parquet
    """
    from agent_inspect.log._window import is_dataset, load_dataset

    business_keys = business_key_texts(business_keys)
    if is_dataset(path):  # a fleet scan's output directory (hive-partitioned Parquet parts)
        return load_dataset(path, business_keys=business_keys)
    if file_format is None and os.path.isfile(path):  # a Trace Log or no dump at all: say which call reads it
        expect_kind(path, (FileKind.ACTION_STATE, FileKind.KCAT), "ai.load")
    n = plan_workers(workers, estimate_file_records(path) if workers is None else 0)
    with Workers(n) as pool:  # started now: workers import while the file is read
        return _load_file(path, file_format=file_format, business_keys=business_keys, progress=progress,
                          pool=pool)


def _load_file(path: str | os.PathLike[str], *, file_format: str | None, business_keys: Iterable[str] | None,
               progress: bool, pool: Workers) -> ActionStateLog:
    read = read_file(path, file_format=file_format, progress=progress)
    batch, errors = read.batch, dict(read.line_errors)
    info = read.source
    keys: list[str] = []
    if business_keys is not None:
        keys = list(business_keys)
        idx = business_key_rows(keys)(batch)
        batch = take(batch, idx)
        errors = {new: errors[old] for new, old in enumerate(idx) if old in errors}
        info = SourceInfo(kind=info.kind, location=info.location, topic=info.topic,
                          start_offsets=info.start_offsets, end_offsets=info.end_offsets,
                          file_format=info.file_format, options={**info.options, "business_keys": keys})
    log = note_repeated_positions(build_log([batch], info, line_errors=errors, pool=pool))
    # the other keys are in memory: a typo gets its close matches (parsed only when every key is missing)
    return log if business_keys is None else check_business_keys(log, keys, known=lambda: key_texts(read.batch))
