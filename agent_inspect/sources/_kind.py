"""What kind of file a path holds, from its first lines: an action-state dump, a kcat dump, a Trace Log, an old
Event Log, or none of these. Loading the wrong kind then names the call that reads it."""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from agent_inspect._errors import SourceError

__all__ = ["FileKind", "file_kind", "kind_of_objects", "expect_kind", "KIND_CALLS"]

_HEAD_BYTES = 256 * 1024
_HEAD_OBJECTS = 200


class FileKind(StrEnum):
    """The kinds of file agent_inspect reads, and ``OTHER`` (none of them) and ``EMPTY``.

    For example::

        ai.sources.file_kind("sample_logs/production.jsonl") is ai.sources.FileKind.ACTION_STATE
        [kind.value for kind in ai.sources.FileKind]
    """

    ACTION_STATE = "action-state dump"
    KCAT = "kcat dump"
    TRACE = "Trace Log"
    EVENT_LOG = "old Event Log"
    OTHER = "none of these"
    EMPTY = "empty"


#: the call that reads each kind
KIND_CALLS = {FileKind.ACTION_STATE: "ai.load", FileKind.KCAT: "ai.load", FileKind.TRACE: "ai.load_trace",
              FileKind.EVENT_LOG: "ai.load_trace"}


def _kind_of(obj: Mapping[str, Any]) -> FileKind | None:
    keys = obj.keys()
    if "payload" in keys and not keys.isdisjoint(("partition", "offset", "topic")):
        return FileKind.KCAT
    if "value" in keys or "value_base64" in keys or ("key" in keys and not keys.isdisjoint(("partition", "offset"))):
        return FileKind.ACTION_STATE
    if "entityType" in keys or ("attributes" in keys and not keys.isdisjoint(("inputRunId", "executionId",
                                                                               "entityName", "businessKey"))):
        return FileKind.TRACE
    if "eventType" in keys or "eventAttributes" in keys:
        return FileKind.EVENT_LOG
    return None


_QUOTED_KEY = re.compile(r'(?<!\\)"(\w+)"\s*:')


def _kind_of_text(text: str) -> FileKind | None:
    """A guess from the member names in a broken object's text (a cut-off first line still names its fields)."""
    names = set(_QUOTED_KEY.findall(text))
    if not names.isdisjoint(("entityType", "inputRunId", "executionId", "parentExecutionId")):
        return FileKind.TRACE
    return _kind_of(dict.fromkeys(names))


def kind_of_objects(objects: Iterable[Mapping[str, Any] | str | None]) -> FileKind:
    """The kind most of ``objects`` (a file's first records; the text of a broken one; None for a line that is
    no object) have."""
    votes: Counter[FileKind] = Counter()
    seen = False
    for obj in objects:
        seen = True
        kind = _kind_of(obj) if isinstance(obj, Mapping) else _kind_of_text(obj) if isinstance(obj, str) else None
        if kind is not None:
            votes[kind] += 1
    if votes:
        return votes.most_common(1)[0][0]
    return FileKind.OTHER if seen else FileKind.EMPTY


def _head(path: str) -> bytes:
    with open(path, "rb") as fh:
        data = fh.read(_HEAD_BYTES)
    if data[:2] == b"\x1f\x8b":
        try:
            data = zlib.decompressobj(wbits=31).decompress(data, _HEAD_BYTES)
        except zlib.error:
            return b""
    if len(data) >= _HEAD_BYTES and b"\n" in data:
        data = data[: data.rfind(b"\n")]  # a whole number of lines
    return data


def file_kind(path: str | os.PathLike[str]) -> FileKind:
    """The kind of file ``path`` is, from its first lines (Parquet: an action-state dump, ``EMPTY`` without rows;
    gzip is inflated).

    For example::

        ai.sources.file_kind("sample_logs/production.parquet"), ai.sources.file_kind("sample_logs/G01.trace.log")
    """
    from agent_inspect.sources._trace import scan

    p = os.fspath(path)
    with open(p, "rb") as fh:
        magic = fh.read(4)
    if magic == b"PAR1":   # a dump's footer says how many rows it holds: none is an empty dump, as a 0-byte file
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            rows = pq.ParquetFile(p).metadata.num_rows
        except (pa.ArrowException, OSError):
            return FileKind.ACTION_STATE   # a broken footer: the reader says what is wrong with it
        return FileKind.ACTION_STATE if rows else FileKind.EMPTY
    head = _head(p)
    objects: list[Mapping[str, Any] | str | None] = []
    for item in scan(head.decode("utf-8", errors="replace"), p):
        objects.append(item.obj if item.obj is not None else item.text)
        if len(objects) >= _HEAD_OBJECTS:
            break
    return kind_of_objects(objects)


def expect_kind(path: str | os.PathLike[str], wanted: Iterable[FileKind], call: str) -> FileKind:
    """``path``'s kind, or :class:`SourceError` (one line naming the right call) when it is another known kind;
    ``OTHER`` raises too when ``call`` is ``ai.load`` (a dump must have records), not for ``ai.load_trace``
    (whose bad lines are kept as errors).

    For example::

        ai.sources.expect_kind("sample_logs/production.trace.log", [ai.sources.FileKind.TRACE], "ai.load_trace")
    """
    p = os.fspath(path)
    try:
        kind = file_kind(p)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise SourceError(f"cannot read {p!r}: {exc}; check the path") from None
    wanted = set(wanted)
    if kind in wanted or kind == FileKind.EMPTY:
        return kind
    if kind in KIND_CALLS:
        right = KIND_CALLS[kind]
        cli = "agent-inspect trace summary / verify --trace" if right == "ai.load_trace" else "agent-inspect summary"
        raise SourceError(f"{p!r} looks like {_article(kind)}, not {_article(next(iter(sorted(wanted))))}: use "
                          f"{right}({p!r}) ({cli})")
    if call == "ai.load":
        raise SourceError(f"{p!r} is none of the files agent_inspect reads (an action-state dump as JSONL, kcat -J "
                          "or Parquet, a Trace Log, an old Event Log): check the path")
    return kind


def _article(kind: FileKind) -> str:
    return {FileKind.ACTION_STATE: "an action-state dump", FileKind.KCAT: "a kcat dump of the action-state topic",
            FileKind.TRACE: "a Trace Log", FileKind.EVENT_LOG: "an old Event Log"}.get(kind, str(kind))
