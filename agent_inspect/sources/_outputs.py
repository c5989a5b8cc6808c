"""Outputs never overwrite inputs: sources are read-only, so no verb writes over a file it reads."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urlsplit

from agent_inspect._errors import SourceError
from agent_inspect.sources._filecommon import DUMP_SUFFIXES
from agent_inspect.sources._urls import source_scheme

__all__ = ["input_files", "check_output", "check_not_source", "source_files", "empty_source"]



def input_files(given: str | os.PathLike[str] | None, *, kind: str = "any") -> list[str]:
    """The local files an input argument names, as the verb reading it would find them: a file, the files of a
    directory (``kind="dump"``: its dumps and a scan's parts; ``"trace"``: its trace files; ``"any"``: all of
    them, as a checkpoint folder), or a glob's matches. ``@`` before a path and ``file://`` are read as the verbs
    read them; a topic, a table, a remote URL or JSON text names no local file (``[]``).

    For example::

        ai.sources.input_files("sample_logs/*.trace.log")[:2]   # the trace files a --trace glob reads
    """
    if given is None:
        return []
    text = os.fspath(given)
    if text.lstrip().startswith(("{", "[")):   # markers given as JSON text, not a file (may pass 255 bytes)
        return []
    text = text[1:] if text.startswith("@") else text
    if text.startswith("file:"):
        text = unquote(urlsplit(text).path)
    elif "://" in text:
        return []
    if kind == "trace":
        from agent_inspect.sources._trace import trace_files

        try:
            return [str(f.path) for f in trace_files(text)]
        except (SourceError, OSError, ValueError):
            return []
    # os.path's tests, not Path's: a text no file can be named (too long, a NUL) is no file, not an OSError
    if os.path.isfile(text):
        return [text]
    if os.path.isdir(text):
        return [str(f) for f in Path(text).rglob("*")
                if f.is_file() and (kind != "dump" or f.name.endswith(DUMP_SUFFIXES))]
    if any(c in text for c in "*?["):
        return [m for m in glob.glob(text) if os.path.isfile(m)]
    return []


def check_output(output: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]]) -> None:
    """A :class:`SourceError` when writing ``output`` would overwrite one of ``inputs`` (files, as
    :func:`input_files` lists them; the same file under another name or a link counts too).

    For example::

        try:
            ai.sources.check_output("sample_logs/G01.jsonl", ai.sources.input_files("sample_logs", kind="dump"))
        except ai.SourceError as exc:
            message = str(exc)      # "will not write 'sample_logs/G01.jsonl': it is an input of this command, …"
        message
    """
    out = Path(output)
    if not out.exists():
        return
    for f in inputs:
        try:
            same = os.path.samefile(out, f)
        except OSError:
            continue
        if same:
            shown = "" if os.path.abspath(f) == os.path.abspath(out) else f" ({os.fspath(f)})"
            raise SourceError(f"will not write {str(out)!r}: it is an input of this command{shown}, and sources are "
                              "read-only; choose another output path")


def source_files(subject: object) -> list[str]:
    """The files ``subject`` was read from: a path (a dump, a directory of dumps), or a log's (or a result's log's)
    ``source`` when it was loaded from a file; ``[]`` for a topic or a table.

    For example::

        ai.sources.source_files(ai.load("sample_logs/G01.jsonl"))   # ["sample_logs/G01.jsonl"]
    """
    if isinstance(subject, (str, os.PathLike)):
        return input_files(subject, kind="dump")
    return _files_of(getattr(subject, "source", None) or getattr(getattr(subject, "log", None), "source", None))


def check_not_source(source: object, output: str | os.PathLike[str]) -> None:
    """:func:`check_output` against the file (or directory of dumps) a log was loaded from, for its writers."""
    check_output(output, _files_of(source))


def _files_of(source: object) -> list[str]:
    location = getattr(source, "location", None)
    if getattr(source, "kind", None) == "file" and isinstance(location, str) and location:
        return input_files(location, kind="dump")
    return []


def empty_source(source: str) -> SourceError:
    """The one-line error of a source (a URL or a path) that holds no records, saying what to check: every verb's
    (and ``ai.scan``'s, before it starts a cluster) for a source with nothing to read.

    For example::

        str(ai.sources.empty_source("kafka://broker:9092/topic"))
    """
    from agent_inspect._glossary import plural

    scheme = source_scheme(source)
    if scheme in ("kafka", "fluss"):
        name = "topic" if scheme == "kafka" else "table"
        return SourceError(f"{source} holds no records from the offsets read: check the {name}'s name (a broker "
                           f"may create a misspelt one) and the markers or start offsets")
    if os.path.isdir(source):
        n = len(input_files(source, kind="dump"))
        return SourceError(f"{source} holds no records (its {plural(n, 'dump')} {'is' if n == 1 else 'are'} empty): "
                           "is it the right directory, and did the dumps that wrote them finish?")
    try:
        size = f" ({plural(os.path.getsize(source), 'byte')})" if os.path.isfile(source) else ""
    except OSError:
        size = ""
    return SourceError(f"{source} holds no records{size}: is it the right file, and did the dump that wrote it "
                       "finish?")
