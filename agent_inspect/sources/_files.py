"""Dump files: kcat ``-J`` JSONL, plain JSONL and the toolkit's Parquet; readers and writers.

Readers never raise for a bad line: it becomes a row (offset = 1-based line number, key None, value
= the line's bytes) with a reason, which the loader puts into the log's ``error`` column. A Parquet
row with a null or out-of-range position keeps its key and value and gets a reason too ("row N: …").
A gzip file cut short and a Parquet row group that does not read are one such row each: the line the data
ends inside ("the file ends inside this line: cut off", as for a plain file whose last line stops mid-value) or
one after the lines read, and the group's first row; the rest loads.
The writers mark such rows (JSONL ``malformed``, Parquet column ``malformed``) so that reading an
export back restores them exactly, position and reason included.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import gzip
import os
from collections.abc import Iterator
from pathlib import Path

import msgspec

from agent_inspect._bulk import gc_paused
from agent_inspect._errors import SourceError
from agent_inspect._glossary import first_few
from agent_inspect.sources._filecommon import (
    DUMP_SUFFIXES,
    NO_PARTITION,
    SOURCE_METADATA_KEY,
    FileRead,
    _inflate,
)
from agent_inspect.sources._jsonl import (
    _read_columns,
    _read_kcat,
    _read_plain,
    write_jsonl,
)
from agent_inspect.sources._parquet import (
    _read_parquet,
    write_parquet,
)
from agent_inspect.sources._progress import progress_bar

__all__ = ["FileRead", "read_file", "write_jsonl", "write_parquet", "SOURCE_METADATA_KEY", "NO_PARTITION"]

_ANY = msgspec.json.Decoder()

def read_file(path: str | os.PathLike[str], *, file_format: str | None = None, progress: bool = False) -> FileRead:
    """Read a dump file; ``file_format`` is "kcat-jsonl", "jsonl" or "parquet" (default: detected).

    ``progress`` shows a records bar while JSONL lines are read.

    For example::

        read = ai.sources.read_file("sample_logs/production.parquet")   # or jsonl, kcat-jsonl
        read.source.kind, read.source.file_format, len(read.batch.value)
    """
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            head = fh.read(4)
    except IsADirectoryError:
        raise SourceError(_directory_message(p)) from None
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
    data, cut = _read_all(p) if gz else (None, None)
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
        if read is None:
            # some line needs the per-line rules: they read the whole file again, with exact line numbers
            if data is None:
                data, cut = _read_all(p)
            read = _read_kcat(data, b64, location) if kcat else _read_plain(data, location)
    return read if data is None else _with_cut(read, data, cut)

def _directory_message(p: Path) -> str:
    """What to pass instead of a directory that is not a fleet scan's output: one of its dump files."""
    names = sorted(c.name for c in p.iterdir() if c.is_file() and c.name.endswith(DUMP_SUFFIXES))
    if not names:
        return f"{str(p)!r} is a directory with no dump file in it; pass a dump file (.jsonl, .jsonl.gz or .parquet)"
    return f"{str(p)!r} is a directory; pass one of its dump files ({first_few(names, 5)})"

_TRUNCATED = ": not valid JSON: Input data was truncated"  # the decoder's words for a line that stops mid-value


def _with_cut(read: FileRead, data: bytes, cut: str | None) -> FileRead:
    """``read`` with what cut the data short said: on the error row of the line the data ends inside (a gzip file
    cut, or a plain one whose last line stops mid-value), else with one more error row after the last line read
    (a gzip file cut at a line's end)."""
    if cut is None and (data.endswith(b"\n") or len(read.batch) - 1 not in read.line_errors):
        return read                             # the common case: no need to count the lines
    partial = data[data.rfind(b"\n") + 1:]
    lineno = data.count(b"\n") + 1            # the line the data ends inside
    last = len(read.batch) - 1
    said = read.line_errors.get(last, "")
    inside = bool(partial.strip()) and said.startswith(f"line {lineno}: ") and read.batch.value[last] == partial
    if inside and (cut is not None or said.endswith(_TRUNCATED)):
        reason = f"line {lineno}: the file ends inside this line: cut off" + (f"; {cut}" if cut else "")
        return FileRead(read.batch, read.source, {**read.line_errors, last: reason})
    if cut is None:
        return read
    if partial.strip():                         # the last line read whole, only its line break lost
        lineno += 1
    errors = {**read.line_errors, len(read.batch): f"line {lineno}: {cut}"}
    read.batch.append(NO_PARTITION, lineno, None, None, b"")
    options = {**read.source.options, "malformed_lines": len(errors)}
    return FileRead(read.batch, dataclasses.replace(read.source, options=options), errors)


@contextlib.contextmanager
def _reading(p: Path) -> Iterator[None]:
    try:
        yield
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise SourceError(f"cannot read {str(p)!r}: {exc}; check the file") from None

def _read_all(p: Path) -> tuple[bytes, str | None]:
    """The file's bytes, inflated when it is gzip, and what cut a gzip file short (None: nothing)."""
    with _reading(p):
        data, cut = _inflate(p.read_bytes())
    return data.removeprefix(_BOM), cut

_BOM = b"\xef\xbb\xbf"  # a UTF-8 byte order mark some editors and Windows tools write: not part of line 1

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
    if out:
        out[0] = out[0].removeprefix(_BOM)
    return out

_CHUNK = 1 << 20  # bytes per piece: decoding and copying out then run in cache

def _file_chunks(p: Path) -> Iterator[memoryview]:
    """The file in pieces that end after a line break (the last one where the file ends), in one reused buffer.

    A piece is only valid until the next one is asked for: nothing may keep a reference into it.
    """
    buf = bytearray(_CHUNK)
    filled = 0
    with open(p, "rb", buffering=0) as fh:
        if fh.read(len(_BOM)) != _BOM:
            fh.seek(0)
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
