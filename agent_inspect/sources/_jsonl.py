"""JSONL dumps, kcat ``-J`` and plain: read in bulk when every line is clean, line by line otherwise; and written."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import repeat
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any, cast

import msgspec

from agent_inspect._errors import DecodeError
from agent_inspect._types import LogLike
from agent_inspect.codec import lone_surrogate_object
from agent_inspect.raw import RawBatch
from agent_inspect.sources._filecommon import (
    _INT64_END,
    _PARTITION_END,
    NO_PARTITION,
    FileRead,
    _check_position,
    _file_info,
    _malformed,
    _reason,
    _replacing,
)
from agent_inspect.sources._outputs import check_not_source

__all__ = ["write_jsonl"]

_OPEN, _CLOSE, _CR, _LF = b"{}\r\n"
_KEY, _VALUE, _AGENT = attrgetter("key"), attrgetter("value"), attrgetter("agent_key")
_PART, _OFF, _TS = attrgetter("partition"), attrgetter("offset"), attrgetter("timestamp")
_PAYLOAD, _TOPIC, _TSTYPE, _KCAT_TS = attrgetter("payload"), attrgetter("topic"), attrgetter("tstype"), attrgetter("ts")

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
        texts: list[str | None] = list(map(_KEY, records))
        keys: list[bytes | None] = ([None if k is None else k.encode("utf-8") for k in texts] if None in texts
                                    else list(map(str.encode, cast("list[str]", texts))))
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
                rec = _lone_surrogate_line(lines[lineno])
            if rec is None:
                raise failure  # type: ignore[misc]
            k = rec.key
            key = k.encode("utf-8") if k is not None and rec.key_base64 is None else _plain_key(rec)
            inline = bytes(rec.value)
            # the common inline object needs no work; a line without "value" goes the slow way too
            value = inline if inline[:1] == b"{" and rec.value_base64 is None else _plain_value(rec, inline)
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


def _lone_surrogate_line(line: bytes) -> _Plain | None:
    """A line msgspec refused for an escaped lone surrogate (``"\\ud800"``) in its inline value, read by the codec's
    reader as a Kafka value is (its value written again as Jackson writes it); None for any other fault."""
    try:
        obj = lone_surrogate_object(line, raw=["value"])
        rec = None if obj is None else msgspec.convert(obj, _Plain)
    except (ValueError, DecodeError, msgspec.ValidationError, RecursionError):
        return None
    if rec is None or any(_has_lone_surrogate(text) for text in (rec.key, rec.agent_key)):
        return None   # a key cut inside a surrogate pair is no state key: msgspec's error row stands
    return rec


def _has_lone_surrogate(text: str | None) -> bool:
    try:
        (text or "").encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


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

def _timestamp(value: int | str | None) -> int | None:
    if value is None or isinstance(value, int):
        return value
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"timestamp {value[:40]!r} is neither epoch milliseconds nor ISO-8601") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)

def _read_kcat(data: bytes, b64: bool, location: str) -> FileRead:
    batch, errors, topics = _read_kcat_lines(data, _whole(_KCAT, data), b64)
    topic = next(iter(topics)) if len(topics) == 1 else None
    info = _file_info(batch, errors, location, "kcat-jsonl", topic, extra={"base64": True} if b64 else None)
    return FileRead(batch, info, errors)

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

def _kcat_field(value: str | None, b64: bool, name: str) -> bytes | None:
    if value is None:
        return None
    if b64:
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"{name} is not base64 although this file's payloads are") from None
    return value.encode("utf-8", "surrogatepass")

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

def write_jsonl(log: LogLike, path: str | os.PathLike[str]) -> Path:
    """Write a log's raw records as plain JSONL: one ``{"partition", "offset", "timestamp", "key", "value"}`` per line.

    ``value`` is the stored JSON text inlined (exact bytes), a JSON string when the bytes are not
    inlinable JSON, null for a tombstone; bytes that are not UTF-8 go to ``key_base64`` /
    ``value_base64``. A row that stands for a malformed line of a file carries its reason in
    ``malformed`` (its value is the line). Reading the file back gives the same records and errors.

    For example::

        ai.sources.write_jsonl(log, "copy.jsonl")      # exact bytes, read back as the same records
        ai.load("copy.jsonl").records.equals(log.records)
    """
    raw: RawBatch = log.raw
    agent = raw.agent_key
    malformed = _malformed(log, len(raw))
    out = Path(path)
    check_not_source(log.source, out)   # never over the file it was read from
    with _replacing(out) as tmp, open(tmp, "wb") as fh:
        for i in range(len(raw)):
            head: dict[str, Any] = {"partition": raw.partition[i], "offset": raw.offset[i],
                                    "timestamp": raw.timestamp_ms[i]}
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
