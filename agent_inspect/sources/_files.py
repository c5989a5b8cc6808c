"""Dump files: kcat ``-J`` JSONL, plain JSONL and the toolkit's Parquet; readers and writers.

Readers never raise for a bad line: it becomes a row (offset = 1-based line number, key None, value
= the line's bytes) with a reason, which the loader puts into the log's ``error`` column. A Parquet
row with a null or out-of-range position keeps its key and value and gets a reason too ("row N: …").
The writers mark such rows (JSONL ``malformed``, Parquet column ``malformed``) so that reading an
export back restores them exactly, position and reason included.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import gzip
import json
import os
import re
import secrets
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from itertools import repeat
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any

import msgspec

from agent_inspect._errors import SourceError
from agent_inspect._bulk import gc_paused
from agent_inspect.sources._progress import progress_bar
from agent_inspect.sources._raw import RawBatch, SourceInfo

__all__ = ["FileRead", "read_file", "write_jsonl", "write_parquet", "SOURCE_METADATA_KEY"]

SOURCE_METADATA_KEY = b"agent_inspect.source"
NO_PARTITION = -1  # malformed lines of files that carry positions: their partition is unknown
_PARTITION_END = 2**31  # Kafka partitions and Fluss buckets are int32, offsets and timestamps int64
_INT64_END = 2**63


@dataclasses.dataclass(frozen=True)
class FileRead:
    """What a file reader produced: the records, where they came from, and per-row reasons for bad lines."""

    batch: RawBatch
    source: SourceInfo
    line_errors: Mapping[int, str]  # row index in ``batch`` -> reason


_ABSENT = msgspec.Raw(b"")  # a line without "value" (an explicit null is b"null": a tombstone)


class _Plain(msgspec.Struct, gc=False):
    key: str | None = None
    value: msgspec.Raw = _ABSENT
    partition: int | None = None
    offset: int | None = None
    timestamp: int | str | None = None
    agent_key: str | None = None
    key_base64: str | None = None
    value_base64: str | None = None
    malformed: str | None = None  # an exported error row: the reason, restored as the row's error


class _Kcat(msgspec.Struct, gc=False):
    partition: int
    offset: int
    key: str | None
    payload: str | None
    topic: str | None = None
    tstype: str | None = None
    ts: int | None = None
    key_error: str | None = None
    payload_error: str | None = None


_PLAIN = msgspec.json.Decoder(_Plain)
_KCAT = msgspec.json.Decoder(_Kcat)
_ANY = msgspec.json.Decoder()


# ---------------------------------------------------------------------------------------------- reading

def read_file(path: str | os.PathLike[str], *, file_format: str | None = None, progress: bool = False) -> FileRead:
    """Read a dump file; ``file_format`` is "kcat-jsonl", "jsonl" or "parquet" (default: detected).

    ``progress`` shows a records bar while JSONL lines are read.
    """
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise SourceError(f"cannot open {str(p)!r}: {exc.strerror or exc}; check the path") from None
    if file_format is None and (head == b"PAR1" or p.suffix == ".parquet"):
        file_format = "parquet"
    if file_format == "parquet":
        return _read_parquet(p)
    if file_format not in (None, "jsonl", "kcat-jsonl"):
        raise SourceError(f"unknown file_format {file_format!r}; use 'kcat-jsonl', 'jsonl' or 'parquet'")
    gz = head[:2] == b"\x1f\x8b"
    # Plain files stream through a small buffer that stays in cache while it is decoded and copied
    # out; gzip files are inflated whole, like before, and then walked the same way.
    data = _read_all(p, gz) if gz else None
    with _reading(p):
        head_lines = _head_lines(data, 2000) if data is not None else _file_head(p, 2000)
    if file_format is None:
        file_format = _sniff(head_lines)
    kcat = file_format == "kcat-jsonl"
    b64 = kcat and _kcat_is_base64(head_lines)
    location = str(p)
    with gc_paused(), progress_bar(total=None, desc=f"file {p.name}", enabled=progress) as bar:
        with _reading(p):
            read = _read_columns(_file_chunks(p) if data is None else _data_chunks(data), location, kcat=kcat, b64=b64,
                                 bar=bar)
        if read is not None:
            return read
        # some line needs the per-line rules: they read the whole file again, with exact line numbers
        if data is None:
            data = _read_all(p, False)
        if kcat:
            return _read_kcat(data, b64, location)
        return _read_plain(data, location)


@contextlib.contextmanager
def _reading(p: Path) -> Iterator[None]:
    try:
        yield
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise SourceError(f"cannot read {str(p)!r}: {exc}; check the file") from None


def _read_all(p: Path, gz: bool) -> bytes:
    with _reading(p):
        return gzip.decompress(p.read_bytes()) if gz else p.read_bytes()


def _head_lines(data: bytes, n: int) -> list[bytes]:
    out: list[bytes] = []
    start = 0
    while len(out) < n and start < len(data):
        end = data.find(b"\n", start)
        if end < 0:
            end = len(data)
        out.append(data[start:end])
        start = end + 1
    return out


def _file_head(p: Path, n: int) -> list[bytes]:
    """What ``_head_lines`` gives for the file's bytes, reading only the head."""
    out: list[bytes] = []
    with open(p, "rb") as fh:
        for line in fh:
            if len(out) == n:
                break
            out.append(line[:-1] if line.endswith(b"\n") else line)
    return out


_CHUNK = 1 << 20  # bytes per piece: decoding and copying out then run in cache


def _file_chunks(p: Path) -> Iterator[memoryview]:
    """The file in pieces that end after a line break (the last one where the file ends), in one reused buffer.

    A piece is only valid until the next one is asked for: nothing may keep a reference into it.
    """
    buf = bytearray(_CHUNK)
    filled = 0
    with open(p, "rb", buffering=0) as fh:
        while True:
            got = fh.readinto(memoryview(buf)[filled:])
            filled += got
            if got and filled < len(buf):
                continue
            cut = buf.rfind(b"\n", 0, filled) + 1 if got else filled
            if got and not cut:  # a line longer than the buffer: a bigger one (a new object, so no live view breaks)
                buf = buf + bytes(len(buf))
                continue
            if cut:
                yield memoryview(buf)[:cut]
            if not got:
                return
            buf[:filled - cut] = buf[cut:filled]  # same length: allowed while old pieces are still referenced
            filled -= cut


def _data_chunks(data: bytes) -> Iterator[memoryview]:
    """``data`` in pieces of about ``_CHUNK`` bytes that end after a line break (the last one where it ends)."""
    view = memoryview(data)
    start = 0
    while start < len(data):
        cut = data.rfind(b"\n", start, start + _CHUNK) + 1
        if not cut:
            cut = data.find(b"\n", start) + 1 or len(data)
        yield view[start:cut]
        start = cut


_COLUMNS = tuple(f.name for f in dataclasses.fields(RawBatch))


def _read_columns(chunks: Iterator[memoryview], location: str, *, kcat: bool, b64: bool,
                  bar: Any = None) -> FileRead | None:
    """The file read column-wise piece by piece; None as soon as some line needs the per-line rules."""
    batch = RawBatch(agent_key=None if kcat else [])
    topics: set[str | None] = set()
    for chunk in chunks:
        records = _whole(_KCAT if kcat else _PLAIN, chunk)
        if records is None:
            return None
        if kcat:
            got = _kcat_columns(records, b64)
            part, more = got if got is not None else (None, set())
            topics |= more
        else:
            part = _plain_columns(records, len(batch) + 1)
        del records, chunk  # they reference the buffer that the next piece overwrites
        if part is None:
            return None
        for name in _COLUMNS:
            mine = getattr(batch, name)
            if mine is not None:
                mine.extend(getattr(part, name))
        if bar is not None:
            bar.update(len(part))
    if not len(batch):
        return None
    if batch.agent_key is not None and batch.agent_key.count(None) == len(batch):
        batch.agent_key = None
    if kcat:
        topic = next(iter(topics)) if len(topics) == 1 else None
        return FileRead(batch, _file_info(batch, {}, location, "kcat-jsonl", topic,
                                          extra={"base64": True} if b64 else None), {})
    return FileRead(batch, _file_info(batch, {}, location, "jsonl", None), {})


def _whole(decoder: Any, data: bytes | memoryview) -> list[Any] | None:
    """Every line's record from one ``decode_lines`` call, or None unless each line provably held exactly one object."""
    try:
        records = decoder.decode_lines(data)
    except Exception:  # noqa: BLE001 - some line is bad: the per-line path finds it
        return None
    return records if _one_object_per_line(data, len(records)) else None


def _decoded(decoder: Any, data: bytes) -> Iterator[tuple[int, Any, BaseException | None]]:
    """``(line number, record, None)`` per non-blank line, or ``(line number, None, error)`` when it does not decode.

    The fast path decodes every line in one call and is kept only when each line provably held
    exactly one object; otherwise the per-line path decides, which keeps line numbers exact and
    makes a line with two objects (or part of one) an error.
    """
    return _numbered(decoder, data, _whole(decoder, data))


def _numbered(decoder: Any, data: bytes, records: list[Any] | None) -> Iterator[tuple[int, Any, BaseException | None]]:
    """What ``_decoded`` yields, given what ``_whole`` returned for ``data``."""
    if records is not None:
        for i, rec in enumerate(records):
            yield i + 1, rec, None
        return
    for i, line in enumerate(data.split(b"\n")):
        if not line or line.isspace():
            continue
        try:
            yield i + 1, decoder.decode(line), None
        except Exception as exc:  # noqa: BLE001 - every bad line becomes an error row, never an exception
            yield i + 1, None, exc


def _one_object_per_line(data: bytes | memoryview, objects: int) -> bool:
    # JSON never continues a complete value with "{" and a string holds no raw line break, so when
    # every line starts with "{" and ends with "}" (or "}\r") no object spans two lines; as many
    # objects as lines then means one per line.
    view = _bytes_view(data)
    end = len(view) - 1 if len(view) and view[-1] == _LF else len(view)
    if end <= 0:
        return objects == 0
    closed = view[end - 1] == _CLOSE or end > 1 and view[end - 1] == _CR and view[end - 2] == _CLOSE
    if view[0] != _OPEN or not closed:
        return False
    breaks = _line_breaks(view, end)
    if objects != len(breaks) + 1:
        return False
    if not len(breaks):
        return True
    if not (view[breaks + 1] == _OPEN).all():
        return False
    before = view[breaks - 1]
    return bool(((before == _CLOSE) | (before == _CR) & (view[breaks - 2] == _CLOSE)).all())


_OPEN, _CLOSE, _CR, _LF = b"{}\r\n"
_SCAN = 1 << 20  # bytes compared at a time: the scratch stays in cache


def _line_breaks(view: Any, end: int) -> Any:
    """Positions of the "\n" in ``view[:end]``, as an int64 array (numpy: a file is too big for a Python loop)."""
    import numpy as np

    found = [np.flatnonzero(view[start:min(start + _SCAN, end)] == _LF) + start for start in range(0, end, _SCAN)]
    return np.concatenate(found) if found else np.empty(0, np.int64)


def _bytes_view(data: bytes | memoryview) -> Any:
    import numpy as np

    return np.frombuffer(data, np.uint8)


class _Lines:
    """The file's lines by 1-based number, split once on first use (only bad records need them)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.lines: list[bytes] | None = None

    def __getitem__(self, lineno: int) -> bytes:
        if self.lines is None:
            self.lines = self.data.split(b"\n")
        return self.lines[lineno - 1]


def _sniff(lines: list[bytes]) -> str:
    """The format most of the first lines have; a line that is not UTF-8 is read with replacements for this."""
    kcat = plain = 0
    for line in lines[:1000]:
        if not line.strip():
            continue
        try:
            obj = _ANY.decode(line)
        except Exception:  # noqa: BLE001 - maybe only a bad byte: the field names still tell the format
            try:
                obj = _ANY.decode(line.decode("utf-8", "replace").encode("utf-8"))
            except Exception:  # noqa: BLE001 - a bad line says nothing about the format
                continue
        if isinstance(obj, dict):
            if "payload" in obj and "value" not in obj and ("partition" in obj or "offset" in obj):
                kcat += 1
            elif "value" in obj or "value_base64" in obj or "key" in obj:
                plain += 1
    return "kcat-jsonl" if kcat > plain else "jsonl"


class _Rows:
    """Column builder that remembers malformed lines until their partition can be decided."""

    def __init__(self, with_agent_key: bool = False) -> None:
        self.batch = RawBatch(agent_key=[] if with_agent_key else None)
        self.errors: dict[int, str] = {}
        self.restored: set[int] = set()  # exported error rows read back: they keep their position
        self.positioned = False

    def bad(self, lineno: int, line: bytes, reason: str) -> None:
        self.errors[len(self.batch)] = f"line {lineno}: {reason}"
        self.batch.append(0, lineno, None, None, line)

    def restore(self, row: int, reason: str) -> None:
        self.errors[row] = reason
        self.restored.add(row)

    def finish(self) -> None:
        # Positioned files: a bad line's partition is unknown, and its line number could collide
        # with a real offset, so it gets a partition of its own.
        if self.positioned:
            for i in self.errors:
                if i not in self.restored:
                    self.batch.partition[i] = NO_PARTITION
        if self.batch.agent_key is not None and all(a is None for a in self.batch.agent_key):
            self.batch.agent_key = None


def _read_plain(data: bytes, location: str) -> FileRead:
    return _read_plain_lines(data, location, _whole(_PLAIN, data))


_KEY, _VALUE, _AGENT = attrgetter("key"), attrgetter("value"), attrgetter("agent_key")
_PART, _OFF, _TS = attrgetter("partition"), attrgetter("offset"), attrgetter("timestamp")
_RARE = tuple(map(attrgetter, ("key_base64", "value_base64", "malformed")))
_FIRST = itemgetter(0)


def _plain_columns(records: list[_Plain], first_line: int) -> RawBatch | None:
    """The columns built column-wise, or None when any record needs the per-line rules (then they decide).

    Whole-column checks find the rare cases (base64, exported error rows, values that are not an
    inline object, ISO timestamps, out-of-range or missing positions); clean files never loop in Python.
    """
    n = len(records)
    if not n or any(list(map(get, records)).count(None) != n for get in _RARE):
        return None
    try:
        keys: list[bytes | None] = list(map(_KEY, records))
        keys = ([None if k is None else k.encode("utf-8") for k in keys] if None in keys
                else list(map(str.encode, keys)))  # type: ignore[arg-type]
        values: list[bytes | None] = list(map(bytes, map(_VALUE, records)))
        if bytes(map(_FIRST, values)).count(b"{") != n:  # type: ignore[arg-type] # b"" (no value) raises
            return None
        stamps = list(map(_TS, records))
        present = [t for t in stamps if t is not None] if None in stamps else stamps
        # a str (ISO) stamp makes min/max or the comparison raise TypeError
        if present and not (-_INT64_END <= min(present) and max(present) < _INT64_END):
            return None
        # without errors a file's being positioned changes nothing: only error rows' partitions depend on it
        parts = _filled(list(map(_PART, records)), None)
        offsets = _filled(list(map(_OFF, records)), range(first_line, first_line + n))
        if not (0 <= min(parts) and max(parts) < _PARTITION_END and 0 <= min(offsets) and max(offsets) < _INT64_END):
            return None
    except (TypeError, IndexError, UnicodeError):
        return None
    return RawBatch(partition=parts, offset=offsets, timestamp_ms=stamps, key=keys, value=values,
                    agent_key=list(map(_AGENT, records)))


def _filled(column: list[int | None], default: range | None) -> list[int]:
    """``column`` with None replaced by 0 (``default`` None) or by the line number."""
    if None not in column:
        return column  # type: ignore[return-value]
    if default is None:
        return [0 if v is None else v for v in column]
    return [d if v is None else v for v, d in zip(column, default)]


def _read_plain_lines(data: bytes, location: str, records: list[_Plain] | None) -> FileRead:
    rows = _Rows(with_agent_key=True)
    b = rows.batch
    part_l, off_l, ts_l, key_l, val_l, agent_l = b.partition, b.offset, b.timestamp_ms, b.key, b.value, b.agent_key
    assert agent_l is not None
    positioned = False
    lines = _Lines(data)
    for lineno, rec, failure in _numbered(_PLAIN, data, records):
        try:
            if rec is None:
                raise failure  # type: ignore[misc]
            k = rec.key
            key = k.encode("utf-8") if k is not None and rec.key_base64 is None else _plain_key(rec)
            value = bytes(rec.value)
            # the common inline object needs no work; a line without "value" goes the slow way too
            if value[:1] != b"{" or rec.value_base64 is not None:
                value = _plain_value(rec, value)
            ts = rec.timestamp
            if ts is not None and not isinstance(ts, int):
                ts = _timestamp(ts)
            p, o = rec.partition, rec.offset
            low = 0 if rec.malformed is None else NO_PARTITION
            if (p is not None and not low <= p < _PARTITION_END or o is not None and not 0 <= o < _INT64_END
                    or ts is not None and not -_INT64_END <= ts < _INT64_END):
                _check_position(p, o, ts, "timestamp", low_partition=low)
        except Exception as exc:  # noqa: BLE001 - every bad line becomes an error row, never an exception
            rows.bad(lineno, lines[lineno], _reason(exc))
            continue
        if rec.malformed is not None:
            rows.restore(len(b), rec.malformed)
        if p is None:
            p = 0
        else:
            positioned = True
        if o is None:
            o = lineno
        else:
            positioned = True
        part_l.append(p)
        off_l.append(o)
        ts_l.append(ts)
        key_l.append(key)
        val_l.append(value)
        agent_l.append(rec.agent_key)
    rows.positioned = positioned
    rows.finish()
    return FileRead(b, _file_info(b, rows.errors, location, "jsonl", None), rows.errors)


def _plain_key(rec: _Plain) -> bytes | None:
    if rec.key is not None and rec.key_base64 is None:
        return rec.key.encode("utf-8")
    if rec.key_base64 is not None:
        return base64.b64decode(rec.key_base64, validate=True)
    return None if rec.key is None else rec.key.encode("utf-8")


def _plain_value(rec: _Plain, raw: bytes) -> bytes | None:
    if rec.value_base64 is not None:
        return base64.b64decode(rec.value_base64, validate=True)
    if not raw:
        raise ValueError('no "value" (null for a tombstone) nor "value_base64"; is this a plain JSONL line?')
    if raw == b"null":
        return None
    if raw[:1] == b'"':
        # a JSON string holds the value's text (the store's JSON as a string)
        return msgspec.json.decode(raw, type=str).encode("utf-8")
    return raw


def _check_position(partition: int | None, offset: int | None, ts: int | None, ts_name: str, *,
                    low_partition: int = 0) -> None:
    """Raise for the first field outside what Kafka and Fluss can hold (int32 partition, int64 offset and time)."""
    for name, value, low, end in (("partition", partition, low_partition, _PARTITION_END),
                                  ("offset", offset, 0, _INT64_END),
                                  (ts_name, ts, -_INT64_END, _INT64_END)):
        if value is not None and not low <= value < end:
            shown = str(value) if len(str(value)) <= 24 else f"{str(value)[:20]}…"
            raise ValueError(f"{name} {shown} is out of range ({low} to {end - 1})")


def _timestamp(value: int | str | None) -> int | None:
    if value is None or isinstance(value, int):
        return value
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"timestamp {value[:40]!r} is neither epoch milliseconds nor ISO-8601") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def _read_kcat(data: bytes, b64: bool, location: str) -> FileRead:
    batch, errors, topics = _read_kcat_lines(data, _whole(_KCAT, data), b64)
    topic = next(iter(topics)) if len(topics) == 1 else None
    info = _file_info(batch, errors, location, "kcat-jsonl", topic, extra={"base64": True} if b64 else None)
    return FileRead(batch, info, errors)


_PAYLOAD, _TOPIC, _TSTYPE, _KCAT_TS = attrgetter("payload"), attrgetter("topic"), attrgetter("tstype"), attrgetter("ts")
_KCAT_ERRORS = (attrgetter("key_error"), attrgetter("payload_error"))


def _kcat_columns(records: list[_Kcat], b64: bool) -> tuple[RawBatch, set[str | None]] | None:
    """The columns and topics built column-wise, or None when any record needs the per-line rules."""
    if not records or any(any(map(get, records)) for get in _KCAT_ERRORS):
        return None
    parts, offsets = list(map(_PART, records)), list(map(_OFF, records))
    stamps = list(map(_KCAT_TS, records))
    present = [t for t in stamps if t is not None] if None in stamps else stamps
    if not (0 <= min(parts) and max(parts) < _PARTITION_END and 0 <= min(offsets) and max(offsets) < _INT64_END
            and (not present or -_INT64_END <= min(present) and max(present) < _INT64_END)):
        return None
    try:
        keys, values = _kcat_bytes(list(map(_KEY, records)), b64), _kcat_bytes(list(map(_PAYLOAD, records)), b64)
    except (binascii.Error, ValueError):
        return None
    kinds = list(map(_TSTYPE, records))
    if not _TS_TYPES.issuperset(kinds):
        stamps = [t if kind in _TS_TYPES else None for t, kind in zip(stamps, kinds)]
    topics = set(map(_TOPIC, records))
    topics.discard(None)
    return RawBatch(partition=parts, offset=offsets, timestamp_ms=stamps, key=keys, value=values), topics


def _kcat_bytes(texts: list[str | None], b64: bool) -> list[bytes | None]:
    if b64:
        return [None if t is None else base64.b64decode(t, validate=True) for t in texts]
    if None in texts:
        return [None if t is None else t.encode("utf-8", "surrogatepass") for t in texts]
    return list(map(str.encode, texts, repeat("utf-8"), repeat("surrogatepass")))  # type: ignore[arg-type]


def _read_kcat_lines(data: bytes, records: list[_Kcat] | None, b64: bool) -> tuple[RawBatch, dict[int, str], set[str]]:
    rows = _Rows()
    rows.positioned = True
    b = rows.batch
    part_l, off_l, ts_l, key_l, val_l = b.partition, b.offset, b.timestamp_ms, b.key, b.value
    topics: set[str] = set()
    lines = _Lines(data)
    for lineno, rec, failure in _numbered(_KCAT, data, records):
        try:
            if rec is None:
                raise failure  # type: ignore[misc]
            if (not 0 <= rec.partition < _PARTITION_END or not 0 <= rec.offset < _INT64_END
                    or rec.ts is not None and not -_INT64_END <= rec.ts < _INT64_END):
                _check_position(rec.partition, rec.offset, rec.ts, "ts")
            if rec.key_error or rec.payload_error:
                raise ValueError(f"kcat could not read the record: {rec.key_error or rec.payload_error}")
            if b64:
                key, value = _kcat_field(rec.key, b64, "key"), _kcat_field(rec.payload, b64, "payload")
            else:
                key = None if rec.key is None else rec.key.encode("utf-8", "surrogatepass")
                value = None if rec.payload is None else rec.payload.encode("utf-8", "surrogatepass")
        except Exception as exc:  # noqa: BLE001 - every bad line becomes an error row, never an exception
            rows.bad(lineno, lines[lineno], _reason(exc))
            continue
        if rec.topic is not None:
            topics.add(rec.topic)
        part_l.append(rec.partition)
        off_l.append(rec.offset)
        ts_l.append(rec.ts if rec.tstype in _TS_TYPES else None)
        key_l.append(key)
        val_l.append(value)
    rows.finish()
    return b, rows.errors, topics


_TS_TYPES = frozenset(("create", "logappend"))


def _kcat_is_base64(lines: list[bytes]) -> bool:
    """kcat writes payloads as text unless told to base64 them; JSON text never is valid base64 of JSON."""
    text = encoded = 0
    for line in lines[:2000]:
        try:
            rec = _ANY.decode(line)
        except Exception:  # noqa: BLE001
            continue
        payload = rec.get("payload") if isinstance(rec, dict) else None
        if not isinstance(payload, str) or not payload:
            continue
        if payload.lstrip()[:1] in ("{", "["):
            text += 1
        else:
            try:
                decoded = base64.b64decode(payload, validate=True)
            except (binascii.Error, ValueError):
                continue
            if decoded.lstrip()[:1] in (b"{", b"["):
                encoded += 1
        if text + encoded >= 100:
            break
    return encoded > 0 and text == 0


def _kcat_field(value: str | None, b64: bool, name: str) -> bytes | None:
    if value is None:
        return None
    if b64:
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"{name} is not base64 although this file's payloads are") from None
    return value.encode("utf-8", "surrogatepass")


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


# ---------------------------------------------------------------------------------------------- Parquet

def _schema() -> Any:
    import pyarrow as pa

    return pa.schema([("partition", pa.int32()), ("offset", pa.int64()), ("timestamp_ms", pa.int64()),
                      ("key", pa.binary()), ("value", pa.binary()), ("agent_key", pa.string()),
                      ("malformed", pa.string())])


_OPTIONAL_COLUMNS = ("agent_key", "malformed")  # older exports and other writers may lack them
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


def _source_json(source: SourceInfo) -> bytes:
    return json.dumps(dataclasses.asdict(source), default=str, sort_keys=True).encode("utf-8")


def _source_from_json(data: bytes) -> dict[str, Any]:
    obj = json.loads(data)
    for name in ("start_offsets", "end_offsets"):
        obj[name] = {int(k): int(v) for k, v in (obj.get(name) or {}).items()}
    options = obj.get("options") or {}
    for name in ("markers", "start_offsets", "data_loss"):  # JSON made their partition keys strings
        if isinstance(options.get(name), dict):
            options[name] = {int(k): v for k, v in options[name].items()}
    obj["options"] = options
    return obj


def write_parquet(log: Any, path: str | os.PathLike[str]) -> Path:
    """Write a log's raw records (exact key/value bytes) and source metadata to a Parquet file.

    Columns: partition int32, offset int64, timestamp_ms int64, key binary, value binary (null =
    tombstone), agent_key string, and when the log has them malformed string (the reason of a row
    that stands for a malformed line of a file; null otherwise); file metadata
    ``agent_inspect.source`` holds the SourceInfo as JSON.
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
    with _replacing(out) as tmp:
        pq.write_table(table, tmp, compression="zstd")
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


def _read_parquet(path: Path, *, partition: int | None = None) -> FileRead:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:  # ``partition``: only that partition's rows (a fleet scan's share of the file)
        table = pq.read_table(path, filters=None if partition is None else [("partition", "=", partition)])
    except (pa.ArrowException, OSError) as exc:
        raise SourceError(f"{str(path)!r} is not a readable Parquet file ({str(exc).splitlines()[0]}); "
                          f"re-export it with ActionStateLog.to_parquet") from None
    missing = [f.name for f in _schema() if f.name not in table.column_names and f.name not in _OPTIONAL_COLUMNS]
    if missing:
        raise SourceError(f"{str(path)!r} lacks column(s) {', '.join(missing)}; it was not written by "
                          f"agent_inspect (use ActionStateLog.to_parquet)")
    cols = {f.name: _parquet_column(table, f.name, f.type, path) for f in _schema() if f.name in table.column_names}
    part, off = cols["partition"], cols["offset"]
    errors = _parquet_positions(part, off, cols.get("malformed"))
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
            batch.partition[i], batch.offset[i] = NO_PARTITION, i + 1
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


def _parquet_positions(part: Any, off: Any, malformed: Any) -> dict[int, str]:
    """Row index -> reason for rows with a null or out-of-range position, and for exported error rows."""
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
        errors[i] = f"row {i + 1}: {problem}"
    return errors


# ---------------------------------------------------------------------------------------------- JSONL

_ENC = msgspec.json.Encoder()


def _inline_json(value: bytes) -> bool:
    """True when ``value`` can sit in a JSONL line as-is (valid JSON, one line, not a bare string)."""
    if value[:1] not in (b"{", b"[") or value[-1:] not in (b"}", b"]") or b"\n" in value or b"\r" in value:
        return False
    try:
        msgspec.json.decode(value)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):  # invalid UTF-8 goes to value_base64
        return False
    return True


def write_jsonl(log: Any, path: str | os.PathLike[str]) -> Path:
    """Write a log's raw records as plain JSONL: one ``{"partition", "offset", "timestamp", "key", "value"}`` per line.

    ``value`` is the stored JSON text inlined (exact bytes), a JSON string when the bytes are not
    inlinable JSON, null for a tombstone; bytes that are not UTF-8 go to ``key_base64`` /
    ``value_base64``. A row that stands for a malformed line of a file carries its reason in
    ``malformed`` (its value is the line). Reading the file back gives the same records and errors.
    """
    raw: RawBatch = log.raw
    agent = raw.agent_key
    malformed = _malformed(log, len(raw))
    out = Path(path)
    with _replacing(out) as tmp, open(tmp, "wb") as fh:
        for i in range(len(raw)):
            head = {"partition": raw.partition[i], "offset": raw.offset[i], "timestamp": raw.timestamp_ms[i]}
            if agent is not None and agent[i] is not None:
                head["agent_key"] = agent[i]
            if malformed is not None and malformed[i] is not None:
                head["malformed"] = malformed[i]
            key, value = raw.key[i], raw.value[i]
            parts = [_ENC.encode(head)[:-1]]
            parts.append(b',"key":' + _text_or_b64(key, "key"))
            if value is None:
                parts.append(b',"value":null')
            elif _inline_json(value):
                parts.append(b',"value":' + value)
            else:
                parts.append(b',"value":' + _text_or_b64(value, "value"))
            fh.write(b"".join(parts) + b"}\n")
    return out


def _text_or_b64(data: bytes | None, name: str) -> bytes:
    if data is None:
        return b"null"
    try:
        return _ENC.encode(data.decode("utf-8"))
    except UnicodeDecodeError:
        return b"null," + _ENC.encode(f"{name}_base64") + b":" + _ENC.encode(base64.b64encode(data).decode())
