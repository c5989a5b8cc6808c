"""Windows of a source: plan one read per partition (or file), read one window, write and reopen its Parquet part.

A fleet scan (``agent_inspect.fleet``) runs one task per window on a distributed engine. The plan is
made once, where the scan starts (metadata and offsets only, no records); each window is then read
by whoever runs its task, straight from the source, read-only like the loaders (assign + explicit
offsets, no commits, no consumer group left behind).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_inspect._errors import SourceError
from agent_inspect.log._assemble import build_log, check_business_keys, key_texts
from agent_inspect.log._log import ActionStateLog
from agent_inspect.raw import RawBatch, SourceInfo
from agent_inspect.sources import (
    DUMP_SUFFIXES,
    ConnectionFactory,
    FileKind,
    ReadPlan,
    business_key_rows,
    business_key_texts,
    candidate_partitions,
    check_timeout,
    expect_kind,
    merge_markers,
    open_kafka,
    plan_fluss,
    read_file,
    read_fluss_bucket,
    read_parquet_partition,
    read_partitions,
    resolve_timeout,
    source_scheme,
    split_source_url,
    take,
    write_parquet,
)

if TYPE_CHECKING:
    from agent_inspect._types import MarkersLike

__all__ = ["SourceSpec", "Window", "plan_windows", "read_window", "write_window", "write_dataset_meta", "load_dataset",
           "is_dataset", "DATASET_FILE"]

DATASET_FILE = "_agent_inspect_dataset.json"  # beside the hive partitions of a scan's output


@dataclass(frozen=True)
class SourceSpec:
    """What a worker needs to read any window of one source. Plain data, so it travels to workers.

    ``config`` holds the client settings (it may hold credentials: never shown in ``repr``).

    For example::

        plan = ai.log.plan_windows("sample_logs/production.parquet")
        spec, windows = plan[0], plan[1]
        spec.kind, spec.location
    """

    kind: str                                  # "kafka" | "fluss" | "file"
    location: str                              # URL or path, without credentials
    topic: str | None = None
    bootstrap: str | None = None
    config: Mapping[str, object] = field(default_factory=dict, repr=False)
    timeout: float = resolve_timeout(None)
    num_partitions: int | None = None          # of the topic (None for files)
    options: Mapping[str, object] = field(default_factory=dict)  # non-secret, as SourceInfo.options
    connection_factory: ConnectionFactory | None = field(default=None, repr=False, compare=False)  # Fluss: pyfluss connect


@dataclass(frozen=True)
class Window:
    """One task's share: a Kafka partition's (or Fluss bucket's) offsets ``[start, end)``, or a file (one
    partition of it, or all, or one row group of a Parquet dump: ``row_group``).

    For example::

        spec, windows = ai.log.plan_windows("sample_logs/production.parquet")
        windows[0].partition, windows[0].path
        ai.log.read_window(spec, windows[0]).records.shape
    """

    partition: int | None
    start: int | None = None
    end: int | None = None
    path: str | None = None
    file_format: str | None = None
    row_group: int | None = None
    keys: tuple[str, ...] | None = None        # only these business keys' records (keys split across row groups)

    @property
    def records_planned(self) -> int | None:
        """Records in the window when known before reading (Kafka), else None."""
        return None if self.start is None or self.end is None else self.end - self.start

    @property
    def name(self) -> str:
        """A short stable label: ``p3@120-980`` or ``dump.parquet#p3``."""
        if self.path is None:
            return f"p{self.partition}@{self.start}-{self.end}"
        base = os.path.basename(self.path)
        if self.row_group is not None:
            return f"{base}#rg{self.row_group}"
        return base if self.partition is None else f"{base}#p{self.partition}"


def plan_windows(source: str | os.PathLike[str], *, markers: MarkersLike = None, config: Mapping[str, object] | None = None,
                 timeout: float | None = None, allow_data_loss: bool = False, file_format: str | None = None,
                 connection_factory: ConnectionFactory | None = None) -> tuple[SourceSpec, list[Window]]:
    """Plan one window per partition of ``kafka://host:port/topic``, per bucket of ``fluss://host:port/db.table``,
    or per partition (or row group) of each file of a path.

    Kafka and Fluss: metadata and offsets only (end offsets captured now), ``markers`` as :func:`load_kafka`
    / :func:`load_fluss` take them (Kafka: only their partitions; Fluss: they name every bucket), read from
    their merged offsets; ``connection_factory`` as :func:`load_fluss` takes it (it travels to the workers).
    Files: a Parquet file gives one window per partition, or per row group when it has more row groups
    than partitions and each row group holds whole partitions (only its ``partition`` column and
    footer are read here); a JSONL file one window; a directory one window per file below it (a scan's
    output directory is read as its parts).

    For example::

        spec, windows = ai.log.plan_windows("sample_logs/production.parquet")   # or a kafka:// or fluss:// URL
        [(w.partition, w.start, w.end) for w in windows]
    """
    text = os.fspath(source)
    scheme = source_scheme(text)
    timeout = resolve_timeout(timeout)
    if scheme == "kafka":
        check_timeout(timeout)
        servers, topic = split_source_url(text, "kafka")
        return _plan_kafka(servers, topic, markers=markers, config=config, timeout=timeout,
                           allow_data_loss=allow_data_loss)
    if scheme == "fluss":
        check_timeout(timeout)
        servers, table = split_source_url(text, "fluss")
        info = plan_fluss(servers, table, markers=markers, config=config, timeout=timeout,
                          allow_data_loss=allow_data_loss, connection_factory=connection_factory)
        spec = SourceSpec(kind="fluss", location=info.location, topic=table, bootstrap=servers,
                          config=dict(config or {}), timeout=timeout, num_partitions=None,
                          options=dict(info.options), connection_factory=connection_factory)
        return spec, [Window(b, info.start_offsets[b], info.end_offsets[b]) for b in sorted(info.start_offsets)]
    if scheme and scheme != "file":
        raise SourceError(f"unknown source scheme {scheme!r}; use kafka://host:port/topic or a path")
    if scheme == "file":
        from urllib.parse import unquote, urlsplit

        text = unquote(urlsplit(text).path)
    return _plan_files(Path(text), file_format=file_format,
                       markers=merge_markers(markers) if markers is not None else None)


def _plan_kafka(servers: str, topic: str, *, markers: MarkersLike, config: Mapping[str, Any] | None, timeout: float,
                allow_data_loss: bool) -> tuple[SourceSpec, list[Window]]:
    batches, info = open_kafka(servers, topic, markers=markers, config=config, progress=False, timeout=timeout,
                               allow_data_loss=allow_data_loss)
    getattr(batches, "close", lambda: None)()  # a generator not started: no consumer was made
    from confluent_kafka.admin import AdminClient  # the partition count, for business-key pruning on reopen

    user = {**dict(config or {}), "bootstrap.servers": servers}
    try:
        meta = AdminClient({k: v for k, v in user.items() if isinstance(v, (str, int, float, bool))}).list_topics(
            timeout=timeout)
        count = len(meta.topics[topic].partitions)
    except Exception:  # noqa: BLE001 - open_kafka just answered; a count is only a pruning aid
        count = None
    spec = SourceSpec(kind="kafka", location=info.location, topic=topic, bootstrap=servers,
                      config=dict(config or {}), timeout=timeout, num_partitions=count, options=dict(info.options))
    windows = [Window(p, info.start_offsets[p], info.end_offsets[p]) for p in sorted(info.start_offsets)]
    return spec, windows


def _plan_files(path: Path, *, file_format: str | None,
                markers: Mapping[int, int] | None) -> tuple[SourceSpec, list[Window]]:
    if not path.exists():
        raise SourceError(f"{str(path)!r} does not exist; check the path")
    if file_format not in (None, "jsonl", "kcat-jsonl", "parquet"):   # here, not once per window on a worker
        raise SourceError(f"unknown file_format {file_format!r}; use 'kcat-jsonl', 'jsonl' or 'parquet'")
    options: dict[str, Any] = {} if markers is None else {"markers": dict(markers)}
    if is_dataset(path):  # a scan's output: one window per partition directory, all its parts together
        meta = _dataset_meta(path)
        parts_windows = [Window(p, path=str(d), file_format="dataset") for p, d in _partition_dirs(path)]
        if not parts_windows:
            raise SourceError(f"{str(path)!r} holds no partition=N/ Parquet parts; is it a scan's output directory?")
        return SourceSpec(kind="file", location=str(path), topic=meta.get("topic"),
                          num_partitions=meta.get("num_partitions"), options={**options, "dataset": meta}), parts_windows
    if path.is_dir():
        # hidden directories (a virtualenv, .git) hold no dumps of this topic
        files = sorted(f for f in path.rglob("*") if f.is_file() and f.name.endswith(DUMP_SUFFIXES)
                       and not any(part.startswith((".", "_")) for part in f.relative_to(path).parts))
        if not files:
            raise SourceError(f"directory {str(path)!r} holds no dump files ({', '.join(DUMP_SUFFIXES)})")
        meta = _dataset_meta(path)
        if meta:
            options["dataset"] = meta
    else:
        if file_format is None:   # a Trace Log, a picture: said as ai.load says it, not scanned as bad records
            expect_kind(path, (FileKind.ACTION_STATE, FileKind.KCAT), "ai.load")
        files = [path]
    windows: list[Window] = []
    for f in files:
        parts = _parquet_partitions(f) if (file_format in (None, "parquet") and _is_parquet(f)) else None
        fmt = "parquet" if parts is not None else file_format
        groups = _row_group_partitions(f) if parts is not None else []
        if parts is not None and len(groups) > max(1, len(parts)):
            # more row groups than partitions: one window per row group (keys that straddle row groups
            # are analysed again together by the scan, see agent_inspect.fleet)
            windows.extend(Window(p, path=str(f), file_format="parquet", row_group=i) for i, p in enumerate(groups))
        elif parts is None or len(parts) <= 1:
            windows.append(Window(parts[0] if parts else None, path=str(f), file_format=fmt))
        else:
            windows.extend(Window(p, path=str(f), file_format="parquet") for p in parts)
    spec = SourceSpec(kind="file", location=str(path), options=options)
    return spec, windows


def _is_parquet(path: Path) -> bool:
    if path.suffix == ".parquet":
        return True
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"PAR1"
    except OSError as exc:
        raise SourceError(f"cannot open {str(path)!r}: {exc.strerror or exc}; check the path") from None


def _parquet_partitions(path: Path) -> list[int] | None:
    """The distinct partitions of a Parquet dump, or None when a window cannot be cut by partition."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        col = pq.read_table(path, columns=["partition"]).column("partition")
    except (pa.ArrowException, OSError, KeyError) as exc:
        raise SourceError(f"{str(path)!r} is not a readable Parquet dump ({str(exc).splitlines()[0]}); "
                          f"re-export it with ActionStateLog.to_parquet") from None
    if col.null_count:
        return None  # rows of unknown partition (malformed lines): the file stays one window
    return sorted(int(p) for p in pc.unique(col).to_pylist())


def _row_group_partitions(path: Path) -> list[int | None]:
    """Per row group of a Parquet dump, its partition when the footer's statistics say it holds one, else None."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    col = meta.schema.names.index("partition")
    out: list[int | None] = []
    for i in range(meta.num_row_groups):
        stats = meta.row_group(i).column(col).statistics
        same = stats is not None and stats.has_min_max and stats.min == stats.max
        out.append(int(stats.min) if same else None)
    return out


def _dataset_meta(directory: Path) -> dict[str, Any]:
    meta = directory / DATASET_FILE
    if not meta.is_file():
        return {}
    try:
        return dict(json.loads(meta.read_text()))
    except (ValueError, TypeError):
        return {}


class _Uncounted:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def read_window(spec: SourceSpec, window: Window, *, source: SourceInfo | None = None,
                lost_into: dict[int, dict[str, int]] | None = None) -> ActionStateLog:
    """Read and decode one window into its own log (positions are the window's records only).

    ``source``: the log's SourceInfo when the window is a part of a bigger load (default: the window's own).
    ``lost_into``: for a Kafka window of a load with ``allow_data_loss``, where the records retention deleted
    during the read are noted by partition (as ``source.options["data_loss"]`` notes them) instead of raising
    :class:`~agent_inspect.DataLossError`.

    For example::

        spec, windows = ai.log.plan_windows("sample_logs/production.parquet")
        part = ai.log.read_window(spec, windows[0])     # positions are the window's own
        part.records["partition"].unique()
    """

    if spec.kind == "kafka":
        if window.start is None or window.end is None or window.partition is None or spec.topic is None:
            raise SourceError(f"a Kafka window needs a partition and an offset range, got {window!r}")
        user = {**dict(spec.config), "bootstrap.servers": spec.bootstrap}
        plan = ReadPlan(start={window.partition: window.start}, end={window.partition: window.end})
        keys = None if window.keys is None else list(window.keys)
        batches = read_partitions(user, spec.topic, plan, keys=keys, timeout=spec.timeout, bar=_Uncounted(),
                                  lost_into=lost_into)
        info = source or SourceInfo(kind="kafka", location=spec.location, topic=spec.topic,
                                    start_offsets={window.partition: window.start},
                                    end_offsets={window.partition: window.end}, options=dict(spec.options))
        return build_log(batches, info)
    if spec.kind == "fluss":
        if window.start is None or window.end is None or window.partition is None or spec.topic is None:
            raise SourceError(f"a Fluss window needs a bucket and an offset range, got {window!r}")
        batch = read_fluss_bucket(spec.bootstrap, spec.topic, window.partition, window.start, window.end,
                                  config=spec.config, timeout=spec.timeout, connection_factory=spec.connection_factory)
        info = SourceInfo(kind="fluss", location=spec.location, topic=spec.topic,
                          start_offsets={window.partition: window.start}, end_offsets={window.partition: window.end},
                          options=dict(spec.options))
        return build_log([batch], info)
    if window.path is None:
        raise SourceError(f"a file window needs a path, got {window!r}")
    if window.file_format == "dataset":
        return _read_parts(Path(window.path).parent, [window.partition], keys=None)
    if window.row_group is not None:
        read = read_parquet_partition(Path(window.path), row_group=window.row_group)
    elif window.partition is not None and window.file_format == "parquet":
        read = read_parquet_partition(Path(window.path), window.partition)
    else:
        read = read_file(window.path, file_format=window.file_format)
    batch, errors = read.batch, read.line_errors
    if window.keys is not None:
        idx = business_key_rows(list(window.keys))(batch)
        batch = take(batch, idx)
        errors = {new: errors[old] for new, old in enumerate(idx) if old in errors}
    return build_log([batch], read.source, line_errors=errors)


def _part_name(window: Window) -> str:
    if window.path is None:
        return f"part-{window.start:012d}-{window.end:012d}.parquet"
    import hashlib

    stem = os.path.basename(window.path).split(".")[0]  # the same name on a retry: a rerun task replaces its part
    group = "" if window.row_group is None else f"-rg{window.row_group:06d}"
    return f"part-{stem}-{hashlib.sha1(window.path.encode()).hexdigest()[:10]}{group}.parquet"


def write_window(log: ActionStateLog, directory: str | os.PathLike[str], window: Window) -> list[Path]:
    """Write a window's records (exact bytes) as Parquet under ``directory/partition=P/`` (hive layout).

    A window of a whole multi-partition file is written as one part per partition. Returns the paths.

    For example::

        spec, windows = ai.log.plan_windows("sample_logs/production.parquet")
        ai.log.write_window(ai.log.read_window(spec, windows[0]), "parts/", windows[0])   # hive layout
    """

    root = Path(directory)
    raw = log.raw
    parts = sorted(set(raw.partition)) if len(raw) else ([window.partition] if window.partition is not None else [])
    out: list[Path] = []
    for p in parts:
        if len(parts) == 1:
            piece = log
        else:
            idx = [i for i, q in enumerate(raw.partition) if q == p]
            piece = ActionStateLog(log.records.iloc[idx].reset_index(drop=True), take(raw, idx), log.source)
        target = root / f"partition={p}"
        target.mkdir(parents=True, exist_ok=True)
        out.append(write_parquet(piece, target / _part_name(window)))
    return out


def write_dataset_meta(directory: str | os.PathLike[str], spec: SourceSpec, **extra: object) -> Path:
    """Describe a scan's output directory (source kind, topic, partition count) for :func:`load_dataset`.

    For example::

        spec, windows = ai.log.plan_windows("sample_logs/production.parquet")
        ai.log.write_window(ai.log.read_window(spec, windows[0]), "out/", windows[0])
        ai.log.write_dataset_meta("out/", spec, note="one partition only")
        ai.log.is_dataset("out/")                # True: load_dataset reopens it
    """
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    meta = {"kind": spec.kind, "location": spec.location, "topic": spec.topic, "num_partitions": spec.num_partitions,
            **extra}
    path = root / DATASET_FILE
    tmp = root / f".{DATASET_FILE}.tmp"
    tmp.write_text(json.dumps(meta, default=str, sort_keys=True))
    tmp.replace(path)
    return path


def is_dataset(path: str | os.PathLike[str]) -> bool:
    """True for a directory a scan wrote (hive-partitioned Parquet parts).

    For example::

        ai.log.is_dataset("sample_logs/production.parquet")   # False: a scan's output directory is one
    """
    p = Path(path)
    return p.is_dir() and (p / DATASET_FILE).is_file()


def _partition_dirs(root: Path) -> list[tuple[int, Path]]:
    out = []
    for d in root.glob("partition=*"):
        try:
            out.append((int(d.name.split("=", 1)[1]), d))
        except ValueError:
            continue
    return sorted(out)


def load_dataset(directory: str | os.PathLike[str], *, business_keys: Iterable[str | int] | None = None) -> ActionStateLog:
    """Reopen a scan's Parquet output as one log; ``business_keys`` reads only the partitions they hash to.

    For example::

        spec, windows = ai.log.plan_windows("sample_logs/production.parquet")
        for window in windows:                   # what ai.scan(..., output="scan-out/") writes
            ai.log.write_window(ai.log.read_window(spec, window), "scan-out/", window)
        ai.log.write_dataset_meta("scan-out/", spec)
        ai.log.load_dataset("scan-out/", business_keys=["user-0011"]).records.shape
    """
    root = Path(directory)
    meta = _dataset_meta(root)
    chosen = [p for p, _ in _partition_dirs(root)]
    if not chosen:
        raise SourceError(f"{str(root)!r} holds no partition=N/ Parquet parts; is it a scan's output directory?")
    keys = business_key_texts(business_keys)
    if keys is not None and meta.get("kind") == "kafka" and meta.get("num_partitions"):
        wanted = candidate_partitions(keys, int(meta["num_partitions"]))
        chosen = [p for p in chosen if p in wanted]
    log = _read_parts(root, chosen, keys=keys)
    # a typo gets its close matches from the partitions read (re-read only then), as the other loaders give them
    return log if keys is None else check_business_keys(log, keys, known=lambda: _part_keys(root, chosen))


def _part_keys(root: Path, chosen: Sequence[int | None]) -> set[str]:
    """The business keys the Parquet parts of partitions ``chosen`` name (text, or digest for K1.6 and K2)."""
    out: set[str] = set()
    for p in chosen:
        for f in sorted((root / f"partition={p}").glob("*.parquet")):
            out |= key_texts(read_file(f, file_format="parquet").batch)
    return out


def _read_parts(root: Path, chosen: Sequence[int | None], *, keys: list[str] | None) -> ActionStateLog:

    meta = _dataset_meta(root)
    batch = RawBatch(agent_key=None)
    agent_keys: list[str | None] = []
    start: dict[int, int] = {}
    end: dict[int, int] = {}
    origin_options: dict[str, Any] = {}
    line_errors: dict[int, str] = {}
    for p in chosen:
        reads = [read_file(f, file_format="parquet") for f in sorted((root / f"partition={p}").glob("*.parquet"))]
        reads.sort(key=lambda r: (r.batch.offset[0] if len(r.batch) else -1))
        for read in reads:
            b = read.batch
            if keys is not None:
                idx = business_key_rows(keys)(b)
                errs = {new: read.line_errors[old] for new, old in enumerate(idx) if old in read.line_errors}
                b = take(b, idx)
            else:
                errs = dict(read.line_errors)
            base = len(batch)
            line_errors.update({base + i: r for i, r in errs.items()})
            batch.partition.extend(b.partition)
            batch.offset.extend(b.offset)
            batch.timestamp_ms.extend(b.timestamp_ms)
            batch.key.extend(b.key)
            batch.value.extend(b.value)
            agent_keys.extend(b.agent_key if b.agent_key is not None else [None] * len(b))
            src = read.source
            origin_options = dict(src.options)
            for q in (p,) if p is not None and p in src.start_offsets else ():
                start[q] = min(start.get(q, src.start_offsets[q]), src.start_offsets[q])
                end[q] = max(end.get(q, src.end_offsets[q]), src.end_offsets[q])
    if any(a is not None for a in agent_keys):
        batch.agent_key = agent_keys
    options = {k: v for k, v in origin_options.items() if k not in ("business_keys",)}
    options["origin"] = {"kind": meta.get("kind"), "location": meta.get("location"), "file_format": "scan-dataset"}
    if keys is not None:
        options["business_keys"] = keys
    info = SourceInfo(kind="file", location=str(root), topic=meta.get("topic"), start_offsets=dict(sorted(start.items())),
                      end_offsets=dict(sorted(end.items())), file_format="parquet", options=options)
    return build_log([batch], info, line_errors=line_errors or None)
