"""The toolkit's Parquet dumps: exact bytes, positions, malformed rows and source metadata, both ways."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from agent_inspect._errors import SourceError
from agent_inspect._glossary import count_words
from agent_inspect._types import LogLike
from agent_inspect.raw import RawBatch, SourceInfo
from agent_inspect.sources._filecommon import (
    _PARTITION_END,
    NO_PARTITION,
    SOURCE_METADATA_KEY,
    FileRead,
    _check_position,
    _file_info,
    _malformed,
    _replacing,
)
from agent_inspect.sources._outputs import check_not_source

__all__ = ["write_parquet", "read_parquet_partition"]

def _schema() -> Any:
    import pyarrow as pa

    return pa.schema([("partition", pa.int32()), ("offset", pa.int64()), ("timestamp_ms", pa.int64()),
                      ("key", pa.binary()), ("value", pa.binary()), ("agent_key", pa.string()),
                      ("malformed", pa.string())])

_OPTIONAL_COLUMNS = ("agent_key", "malformed")  # older exports and other writers may lack them

def _source_json(source: SourceInfo) -> bytes:
    return json.dumps(dataclasses.asdict(source), default=str, sort_keys=True).encode("utf-8")

def _source_from_json(data: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = json.loads(data)
    for name in ("start_offsets", "end_offsets"):
        obj[name] = {int(k): int(v) for k, v in (obj.get(name) or {}).items()}
    options = obj.get("options") or {}
    for name in ("markers", "start_offsets", "data_loss"):  # JSON made their partition keys strings
        if isinstance(options.get(name), dict):
            options[name] = {int(k): v for k, v in options[name].items()}
    obj["options"] = options
    return obj

def write_parquet(log: LogLike, path: str | os.PathLike[str]) -> Path:
    """Write a log's raw records (exact key/value bytes) and source metadata to a Parquet file.

    Columns: partition int32, offset int64, timestamp_ms int64, key binary, value binary (null =
    tombstone), agent_key string, and when the log has them malformed string (the reason of a row
    that stands for a malformed line of a file; null otherwise); file metadata
    ``agent_inspect.source`` holds the SourceInfo as JSON.

    For example::

        ai.sources.write_parquet(log, "copy.parquet")
        ai.load("copy.parquet").records.shape == log.records.shape
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    raw: RawBatch = log.raw
    n = len(raw)
    malformed = _malformed(log, n)
    schema = _schema()
    if malformed is None:  # the column only when needed: files of clean logs stay as they always were
        schema = schema.remove(schema.get_field_index("malformed"))
    schema = schema.with_metadata({SOURCE_METADATA_KEY: _source_json(log.source)})
    columns = {
        "partition": pa.array(raw.partition, pa.int32()), "offset": pa.array(raw.offset, pa.int64()),
        "timestamp_ms": pa.array(raw.timestamp_ms, pa.int64()), "key": pa.array(raw.key, pa.binary()),
        "value": pa.array(raw.value, pa.binary()),
        "agent_key": pa.array(raw.agent_key if raw.agent_key is not None else [None] * n, pa.string()),
    }
    if malformed is not None:
        columns["malformed"] = pa.array(malformed, pa.string())
    table = pa.table(columns, schema=schema)
    out = Path(path)
    check_not_source(log.source, out)   # never over the file it was read from
    with _replacing(out) as tmp:
        pq.write_table(table, tmp, compression="zstd")
    return out

def _read_parquet(path: Path, *, partition: int | None = None, row_group: int | None = None) -> FileRead:
    import pyarrow as pa
    import pyarrow.parquet as pq

    base = 0  # rows before the row group read: row numbers of malformed rows stay those of the whole file
    try:  # ``partition`` / ``row_group``: only those rows (a fleet scan's share of the file)
        if row_group is not None:
            pf = pq.ParquetFile(path)
            base = sum(pf.metadata.row_group(i).num_rows for i in range(row_group))
            table = pf.read_row_group(row_group)
            table = table.replace_schema_metadata(pf.schema_arrow.metadata)
        else:
            table = pq.read_table(path, filters=None if partition is None else [("partition", "=", partition)])
    except (pa.ArrowException, OSError) as exc:
        unreadable = SourceError(f"{str(path)!r} is not a readable Parquet file ({str(exc).splitlines()[0]}); "
                                 f"re-export it with ActionStateLog.to_parquet")
        if partition is None and row_group is None:   # one damaged row group must not lose the others
            return _read_by_row_group(path, unreadable)
        raise unreadable from None
    missing = [f.name for f in _schema() if f.name not in table.column_names and f.name not in _OPTIONAL_COLUMNS]
    if missing:
        raise SourceError(f"{str(path)!r} lacks {count_words(len(missing), 'column')} {', '.join(missing)}; it was not "
                          "written by "
                          f"agent_inspect (use ActionStateLog.to_parquet)")
    cols = {f.name: _parquet_column(table, f.name, f.type, path) for f in _schema() if f.name in table.column_names}
    part, off = cols["partition"], cols["offset"]
    errors = _parquet_positions(part, off, cols.get("malformed"), base=base)
    agent = cols.get("agent_key")
    batch = RawBatch(partition=part.to_pylist(), offset=off.to_pylist(), timestamp_ms=cols["timestamp_ms"].to_pylist(),
                     key=cols["key"].to_pylist(), value=cols["value"].to_pylist(),
                     agent_key=agent.to_pylist() if agent is not None and agent.null_count < len(agent) else None)
    malformed = cols.get("malformed")
    for i in errors:
        p, o = batch.partition[i], batch.offset[i]
        kept = (malformed is not None and malformed[i].is_valid and p is not None and o is not None
                and NO_PARTITION <= p < _PARTITION_END and o >= 0)  # an exported error row keeps its place
        if not kept:  # like a malformed line of a positioned file: a partition of its own, the row number
            batch.partition[i], batch.offset[i] = NO_PARTITION, base + i + 1
    meta = (table.schema.metadata or {}).get(SOURCE_METADATA_KEY)
    origin: dict[str, Any] = {}
    if meta is not None:
        try:
            origin = _source_from_json(meta)
        except (ValueError, TypeError, AttributeError):
            origin = {}
    if origin:
        options = {**(origin.get("options") or {}),
                   "origin": {"kind": origin.get("kind"), "location": origin.get("location"),
                              "file_format": origin.get("file_format")}}
        info = SourceInfo(kind="file", location=str(path), topic=origin.get("topic"),
                          start_offsets=origin["start_offsets"], end_offsets=origin["end_offsets"],
                          file_format="parquet", options=options)
    else:
        info = _file_info(batch, errors, str(path), "parquet", None)
    return FileRead(batch, info, errors)

def _read_by_row_group(path: Path, unreadable: SourceError) -> FileRead:
    """The row groups of ``path`` that read, and an error row (at its first row) for each that does not."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path).metadata
        groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    except (pa.ArrowException, OSError):
        raise unreadable from None   # no footer: nothing says where the rows are
    batch = RawBatch(agent_key=[])
    errors: dict[int, str] = {}
    source: SourceInfo | None = None
    base = 0
    for i, rows in enumerate(groups):
        try:
            pq.ParquetFile(path).read_row_group(i)   # read twice, but only in a damaged file
        except (pa.ArrowException, OSError) as exc:
            errors[len(batch)] = (f"row {base + 1}: row group {i} (rows {base + 1} to {base + rows}) does not read "
                                  f"({str(exc).splitlines()[0]}); its rows are lost")
            batch.append(NO_PARTITION, base + 1, None, None, b"")
        else:
            read = _read_parquet(path, row_group=i)
            errors.update({len(batch) + j: reason for j, reason in read.line_errors.items()})
            for name in ("partition", "offset", "timestamp_ms", "key", "value"):
                getattr(batch, name).extend(getattr(read.batch, name))
            assert batch.agent_key is not None
            batch.agent_key.extend(read.batch.agent_key or [None] * len(read.batch))
            source = source or read.source
        base += rows
    if source is None:
        raise unreadable from None
    if batch.agent_key is not None and all(a is None for a in batch.agent_key):
        batch.agent_key = None
    if "origin" not in source.options:   # no source metadata: the positions are those read
        source = _file_info(batch, errors, str(path), "parquet", None)
    return FileRead(batch, source, errors)

def _parquet_column(table: Any, name: str, target: Any, path: Path) -> Any:
    """The column as ``target`` (positions as int64, checked per row later) if that loses nothing, else SourceError."""
    import pyarrow as pa

    col = table.column(name).combine_chunks()
    t = col.type
    want = pa.int64() if pa.types.is_integer(target) else target
    stamp = name == "timestamp_ms" and pa.types.is_timestamp(t)
    ok = (pa.types.is_null(t) or t == want
          or pa.types.is_integer(want) and (pa.types.is_integer(t) or stamp)
          or pa.types.is_binary(want) and (pa.types.is_string(t) or pa.types.is_large_string(t)
                                           or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t))
          or pa.types.is_string(want) and pa.types.is_large_string(t))
    try:
        if not ok:
            raise pa.ArrowInvalid("not convertible")
        if pa.types.is_timestamp(t):
            col = col.cast(pa.timestamp("ms", tz=t.tz), safe=True)
        return col.cast(want, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise SourceError(f"column {name!r} of {str(path)!r} is {t}, which does not convert to {target} without "
                          f"loss; re-export the file with ActionStateLog.to_parquet") from None

def _parquet_positions(part: Any, off: Any, malformed: Any, *, base: int = 0) -> dict[int, str]:
    """Row index -> reason for rows with a null or out-of-range position, and for exported error rows
    (``base``: rows of the file before these, for the row numbers in the reasons)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    errors: dict[int, str] = {}
    restored = pa.array([False] * len(part), pa.bool_()) if malformed is None else pc.is_valid(malformed)
    if malformed is not None and malformed.null_count < len(malformed):
        for i in pc.indices_nonzero(restored).to_pylist():
            errors[i] = malformed[i].as_py()
    bad = pc.or_kleene(pc.or_kleene(pc.is_null(part), pc.is_null(off)),
                       pc.or_kleene(pc.or_kleene(pc.less(part, 0), pc.greater_equal(part, _PARTITION_END)),
                                    pc.less(off, 0)))
    bad = pc.and_(pc.fill_null(bad, True), pc.invert(restored))
    for i in pc.indices_nonzero(bad).to_pylist():
        p, o = part[i].as_py(), off[i].as_py()
        if p is None or o is None:
            problem = f"{'partition' if p is None else 'offset'} is null"
        else:
            try:
                _check_position(p, o, None, "timestamp_ms")
            except ValueError as exc:
                problem = str(exc)
        errors[i] = f"row {base + i + 1}: {problem}"
    return errors


def read_parquet_partition(path: Path, partition: int | None = None, *, row_group: int | None = None) -> FileRead:
    """One partition's rows, or one row group, of a Parquet dump (a fleet scan's share of a big file).

    For example::

        from pathlib import Path
        read = ai.sources.read_parquet_partition(Path("sample_logs/production.parquet"), 1)
        set(read.batch.partition)                      # {1}
    """
    return _read_parquet(path, partition=partition, row_group=row_group)
