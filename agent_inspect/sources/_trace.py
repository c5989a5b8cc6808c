"""Trace Log files (addendum §3.1): find them, split them into JSON objects, write them back.

Only I/O lives here: the lines become :class:`TraceItem` s (an object, or the reason the text is not
one); :mod:`agent_inspect.trace` interprets them. Three layouts are read by one scanner:

- FILE output: ``traces-{jobId}-{taskName}-{subtaskId}.log``, one JSON object per line (JSONL);
- the same with ``trace-log.pretty-print``: one object spread over several lines;
- SLF4J output (``{log.file}.trace-log.log``): each object after the logger's line prefix.

A line that is not an object (cut off, not JSON, nested too deeply, a prefix with nothing after it)
becomes an item with its file, line number and reason; nothing is dropped and nothing raises. Lines end
at ``\n`` only (a stray form feed or NUL inside a line does not split it), and gzip-rotated files
(``*.log.gz``) are read like the others.
"""

from __future__ import annotations

import glob as _glob
import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from agent_inspect._errors import SourceError
from agent_inspect._glossary import plural
from agent_inspect.sources._filecommon import _inflate

__all__ = ["TraceItem", "TraceFile", "trace_files", "read_trace_files", "read_bytes", "write_trace",
           "TRACE_FILE_RE"]

#: ``traces-{jobId}-{taskName}-{subtaskId}.log`` (FileTraceLogger); a Flink JobID is 32 hex digits
TRACE_FILE_RE = re.compile(r"^traces-(?P<job>[0-9a-fA-F]{32}|[^-]+)-(?P<task>.*)-(?P<subtask>\d+)\.log(?:\.gz)?$")
#: the names a directory's trace files have (FILE output, SLF4J output, the samples), each also gzip-rotated
_DIR_PATTERNS = ("traces-*.log", "*.trace-log.log", "*.trace.log")

_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class TraceFile:
    """One trace file and what its name says (job, task, subtask; None when the name has another form).

    For example::

        files = ai.sources.trace_files("sample_logs/production.trace.log")
        files[0].path, files[0].job_id, files[0].subtask_id   # what the file name says
    """

    path: str
    job_id: str | None = None
    task_name: str | None = None
    subtask_id: int | None = None
    #: the file's size in bytes when it was listed (None when it could not be read)
    size: int | None = field(default=None, compare=False)


@dataclass(frozen=True)
class TraceItem:
    """One object of a trace file, or the reason a stretch of text is not one.

    ``line`` is the 1-based line the object (or the bad text) starts on; ``prefix`` the text before
    the object on that line (an SLF4J layout's timestamp, level and logger), None when there was none.
    ``digest`` identifies the object's exact text (two items with one digest are exact duplicates).

    For example::

        [(trace_file, items)] = ai.sources.read_trace_files(ai.sources.trace_files("sample_logs/G01.trace.log"))
        items[0].line, items[0].obj, items[0].error
    """

    file: str
    line: int
    obj: Mapping[str, Any] | None
    error: str | None = None
    prefix: str | None = None
    text: str | None = None
    digest: bytes | None = None


def trace_files(source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[TraceFile]:
    """The trace files a path, a directory (its ``traces-*.log`` and ``*.trace-log.log`` files, else every
    ``*.log``; each also as ``*.log.gz``) or a glob names, sorted; raises :class:`SourceError` when there are none.

    For example::

        ai.sources.trace_files("sample_logs/*.trace.log")[:2]   # a file, a directory or a glob
    """
    if isinstance(source, (list, tuple)):
        found = [f for s in source for f in trace_files(s)]
        return sorted(dict.fromkeys(found), key=lambda f: f.path)
    text = os.fspath(cast("str | os.PathLike[str]", source))    # lists and tuples returned above
    p = Path(text)
    if p.is_dir():
        paths = sorted({x for pat in _DIR_PATTERNS for x in (*p.glob(pat), *p.glob(pat + ".gz"))})
        if not paths:
            paths = sorted({*p.glob("*.log"), *p.glob("*.log.gz")})
        if not paths:
            raise SourceError(f"no trace files in directory {text!r}: expected traces-<job>-<task>-<subtask>.log "
                              "(FILE output) or <log.file>.trace-log.log (SLF4J output)")
        names = [str(x) for x in paths]
    elif p.is_file():
        names = [text]
    elif any(c in text for c in "*?["):
        names = sorted(_glob.glob(text))
        if not names:
            raise SourceError(f"no trace file matches {text!r}")
    else:
        raise SourceError(f"trace path {text!r} does not exist; pass a trace file, a directory or a glob")
    return [_describe(n) for n in names]


def _describe(path: str) -> TraceFile:
    try:
        size: int | None = os.path.getsize(path)
    except OSError:
        size = None
    m = TRACE_FILE_RE.match(Path(path).name)
    if m is None:
        return TraceFile(path, size=size)
    return TraceFile(path, m.group("job"), m.group("task"), int(m.group("subtask")), size=size)


def read_trace_files(files: Iterable[TraceFile]) -> list[tuple[TraceFile, list[TraceItem]]]:
    """Every object (or bad stretch) of each file, in file order.

    For example::

        for trace_file, items in ai.sources.read_trace_files(ai.sources.trace_files("sample_logs/G01.trace.log")):
            print(trace_file.path, len(items))
    """
    out = []
    for f in files:
        data, problem = read_bytes(f.path)
        data = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte order mark is no line prefix
        try:
            text, bad = data.decode("utf-8"), []
        except UnicodeDecodeError:
            text, bad = data.decode("utf-8", errors="replace"), _undecodable_lines(data)
        items = list(scan(text, f.path))
        if bad:
            more = f" (and {plural(len(bad) - 1, 'more line')})" if len(bad) > 1 else ""
            items.insert(0, TraceItem(f.path, bad[0], None, f"line {bad[0]}{more} is not valid UTF-8; undecodable"
                                      " bytes were replaced"))
        if problem:
            items.append(TraceItem(f.path, text.count("\n") + 1, None, problem))
        out.append((f, items))
    return out


def _undecodable_lines(data: bytes) -> list[int]:
    """The 1-based lines of ``data`` that are not UTF-8 (a character never spans a line break)."""
    out = []
    for lineno, line in enumerate(data.split(b"\n"), 1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            out.append(lineno)
    return out


def read_bytes(path: str) -> tuple[bytes, str | None]:
    """A file's bytes, inflated when it is gzip (by its magic bytes), and what stopped the inflating early (None:
    nothing). A cut-off or damaged gzip stream keeps what inflated before the damage."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise SourceError(f"cannot read trace file {path!r}: {exc.strerror or exc}; check the path") from None
    return _inflate(data)


def scan(text: str, file: str = "<text>") -> Iterable[TraceItem]:
    """Split ``text`` into JSON objects: JSONL, pretty-printed objects, or objects after a line prefix."""
    lines = [ln + "\n" for ln in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    if not lines[-1]:
        lines.pop()
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        stripped = line.strip()
        if not stripped:
            i += 1
            continue
        brace = line.find("{")
        if brace < 0:
            yield TraceItem(file, i + 1, None, "no JSON object on this line", text=_clip(stripped))
            i += 1
            continue
        prefix = line[:brace].strip() or None
        # decode within the lines this object can span (a pretty-printed object's continuation lines start
        # with blanks or a closing bracket): error positions stay local, so a bad line costs its own length
        j = i + 1
        while j < n and (not lines[j].strip() or lines[j][:1] in (" ", "\t", "}", "]", '"')):
            j += 1
        window = "".join(lines[i:j]) if j > i + 1 else line
        try:
            obj, end_w = _DECODER.raw_decode(window, brace)
        except RecursionError:
            yield TraceItem(file, i + 1, None, "JSON nested too deeply to read", prefix=prefix, text=_clip(stripped))
            i += 1
            continue
        except json.JSONDecodeError as exc:
            # a pretty-printed object opens alone on its line: one item for the whole broken object, up to
            # the next line that can start a record; a JSONL line is one item by itself
            stop = j if stripped.endswith("{") and stripped.count("{") == 1 else i + 1
            line_end = len(line.rstrip("\r\n"))
            reason = ("truncated JSON object (the line ends inside it)" if exc.pos >= line_end and stop == i + 1
                      else f"not valid JSON ({exc.msg}, line {i + 1} column {exc.pos + 1})"
                      if exc.pos < line_end else
                      f"truncated or malformed pretty-printed JSON object (lines {i + 1}-{stop})")
            yield TraceItem(file, i + 1, None, reason, prefix=prefix, text=_clip(stripped))
            i = stop
            continue
        end = starts[i] + end_w
        if not isinstance(obj, dict):
            yield TraceItem(file, i + 1, None, f"a JSON {type(obj).__name__}, not an object", prefix=prefix,
                            text=_clip(stripped))
        else:
            digest = hashlib.blake2b(window[brace:end_w].encode("utf-8", "surrogatepass"), digest_size=16).digest()
            yield TraceItem(file, i + 1, obj, None, prefix=prefix, digest=digest)
        # the object ends on line j (later than i when pretty-printed)
        j = i
        while j + 1 < n and starts[j + 1] < end:
            j += 1
        rest = text[end:starts[j + 1]]
        if rest.strip():
            yield TraceItem(file, j + 1, None, "text after the JSON object on this line", text=_clip(rest.strip()))
        i = j + 1


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def write_trace(records: Iterable[Mapping[str, Any]], path: str | os.PathLike[str]) -> Path:
    """Write trace records as FILE output does: one compact JSON object per line, member order kept.

    Written to a temporary file and renamed into place, so a reader never sees half a file.

    For example::

        ai.sources.write_trace(ai.samples.sample_trace(ai.samples.scenario("G01")), "G01.trace.log")
        ai.load_trace("G01.trace.log").records.shape
    """
    out = Path(path)
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
    os.replace(tmp, out)
    return out
