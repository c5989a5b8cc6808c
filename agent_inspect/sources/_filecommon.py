"""What every dump-file reader and writer shares: positions' bounds, the read result, error reasons, atomic writes."""

from __future__ import annotations

import binascii
import contextlib
import dataclasses
import os
import re
import secrets
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import msgspec

from agent_inspect._errors import SourceError
from agent_inspect.raw import RawBatch, SourceInfo

__all__ = ["FileRead", "SOURCE_METADATA_KEY", "NO_PARTITION", "DUMP_SUFFIXES"]

DUMP_SUFFIXES = (".parquet", ".jsonl", ".json", ".gz", ".ndjson")
"""The file names a directory of dumps is read for (a scan, the inputs a verb must not overwrite, the files a
directory given to ``ai.load`` is told to pass); a gzip file is read by its magic bytes, whatever precedes .gz."""

SOURCE_METADATA_KEY = b"agent_inspect.source"

NO_PARTITION = -1  # malformed lines of files that carry positions: their partition is unknown

_PARTITION_END = 2**31  # Kafka partitions and Fluss buckets are int32, offsets and timestamps int64

_INT64_END = 2**63

@dataclasses.dataclass(frozen=True)
class FileRead:
    """What a file reader produced: the records, where they came from, and per-row reasons for bad lines.

    For example::

        read = ai.sources.read_file("sample_logs/production.kcat.jsonl")
        len(read.batch.offset), read.source.file_format, len(read.line_errors)   # lines that are not records
        ai.log.build_log([read.batch], read.source, line_errors=read.line_errors)   # what ai.load does next
    """

    batch: RawBatch
    source: SourceInfo
    line_errors: Mapping[int, str]  # row index in ``batch`` -> reason

def _check_position(partition: int | None, offset: int | None, ts: int | None, ts_name: str, *,
                    low_partition: int = 0) -> None:
    """Raise for the first field outside what Kafka and Fluss can hold (int32 partition, int64 offset and time)."""
    for name, value, low, end in (("partition", partition, low_partition, _PARTITION_END),
                                  ("offset", offset, 0, _INT64_END),
                                  (ts_name, ts, -_INT64_END, _INT64_END)):
        if value is not None and not low <= value < end:
            shown = str(value) if len(str(value)) <= 24 else f"{str(value)[:20]}…"
            raise ValueError(f"{name} {shown} is out of range ({low} to {end - 1})")

def _reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "JSON nested too deeply"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if isinstance(exc, msgspec.ValidationError):
        return f"bad record envelope: {text}"
    if isinstance(exc, msgspec.DecodeError):
        return f"not valid JSON: {text}"
    if isinstance(exc, (binascii.Error, UnicodeError)):
        return f"bad encoding: {text}"
    return text[:200]

def _file_info(b: RawBatch, errors: Mapping[int, str], location: str, fmt: str, topic: str | None,
               extra: Mapping[str, Any] | None = None) -> SourceInfo:
    import numpy as np

    part = np.asarray(b.partition, dtype=np.int64)
    off = np.asarray(b.offset, dtype=np.int64)
    if errors:
        keep = np.ones(len(part), dtype=bool)
        keep[list(errors)] = False
        part, off = part[keep], off[keep]
    start: dict[int, int] = {}
    end: dict[int, int] = {}
    for p in np.unique(part).tolist():
        mine = off[part == p]
        start[p], end[p] = int(mine.min()), int(mine.max()) + 1
    options: dict[str, Any] = dict(extra or {})
    if errors:
        options["malformed_lines"] = len(errors)
    return SourceInfo(kind="file", location=location, topic=topic, start_offsets=dict(sorted(start.items())),
                      end_offsets=dict(sorted(end.items())), file_format=fmt, options=options)

_MALFORMED = re.compile(r"(?:line|row) \d+: ")

def _malformed(log: Any, n: int) -> list[str | None] | None:
    """Per raw row, the reason when the row stands for a malformed line or row of a file, else None.

    Only the file readers give reasons starting "line N: " / "row N: " (the log's own start "key:" /
    "value:"), and a reloaded error row keeps its reason, so the prefix is what marks these rows.
    """
    records = getattr(log, "records", None)
    if records is None or len(records) != n or "error" not in records:
        return None
    errors = records["error"]
    if not errors.notna().any():
        return None
    hit = errors.str.match(_MALFORMED, na=False).to_numpy(dtype=bool)
    if not hit.any():
        return None
    out: list[str | None] = [None] * n
    for pos in hit.nonzero()[0].tolist():
        out[pos] = errors.iat[pos]
    return out

@contextlib.contextmanager
def _replacing(out: Path) -> Iterator[Path]:
    """A temporary path beside ``out`` that replaces it on success, so a failed export leaves no half file."""
    tmp = out.with_name(f".{out.name}.{secrets.token_hex(4)}.tmp")
    # created here, not by mkstemp, so the export gets the usual umask permissions, not 0600
    try:
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except OSError as exc:
        raise SourceError(f"cannot write {str(out)!r}: {exc.strerror or exc}; check the directory") from None
    try:
        yield tmp
        os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise

def _inflate(data: bytes) -> tuple[bytes, str | None]:
    """``data`` inflated when it is gzip (by its magic bytes), and what stopped the inflating early (None: nothing).

    A cut-off or damaged gzip stream keeps what inflated before the damage.
    """
    if data[:2] != b"\x1f\x8b":
        return data, None
    parts: list[bytes] = []
    rest = data
    while rest:
        inflater = zlib.decompressobj(wbits=31)
        try:
            parts.append(inflater.decompress(rest))
        except zlib.error as exc:
            return b"".join(parts), f"gzip data is damaged ({exc}); the lines before the damage were read"
        if not inflater.eof:
            parts.append(inflater.flush())
            return b"".join(parts), "gzip stream ends early (a cut-off file); the lines before the cut were read"
        rest = inflater.unused_data.lstrip(b"\x00")  # the next member of a multi-member file
        if rest and rest[:2] != b"\x1f\x8b":
            return b"".join(parts), "text after the end of the gzip stream was not read"
    return b"".join(parts), None
