"""The recovery markers of the command line, in one place: ``--markers JSON|@FILE|FILE`` or ``--checkpoint PATH``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

__all__ = ["add_markers_options", "markers_from_args", "parse_markers", "read_markers", "restore_of",
           "checkpoint_options"]

_MARKERS_HELP = ('recovery markers as JSON ([{"0": 120, "1": 98}, ...] or one map), or @FILE / FILE (a markers '
                 ".json file, e.g. a sample's <name>.markers.json), or a checkpoint folder (as --checkpoint)")
_CHECKPOINT_HELP = ("restore from this Flink checkpoint: its recovery markers (a chk-N or savepoint directory, a "
                    "_metadata file, or a checkpoint directory for the latest completed chk-N; local, file://, "
                    "s3://, gs://, hdfs://)")


def add_markers_options(parser: argparse.ArgumentParser, *, default: str = "default: the whole loaded log",
                        markers_help: str | None = None) -> None:
    """Add ``--markers`` and ``--checkpoint`` (one or the other) to a subcommand."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--markers", help=f"{markers_help or _MARKERS_HELP}; {default}")
    group.add_argument("--checkpoint", metavar="PATH", help=_CHECKPOINT_HELP)


def checkpoint_options(args: argparse.Namespace) -> dict[str, Any]:
    """The checkpoint reader's keywords of the command line: ``timeout``, ``--timeout`` (a checkpoint URL's
    storage waits as long as a broker; None, not given: the reader's 10)."""
    return {"timeout": getattr(args, "timeout", None)}


def markers_from_args(args: argparse.Namespace) -> Any:
    """The markers a subcommand's ``--markers`` or ``--checkpoint`` names (None when neither is given)."""
    path = getattr(args, "checkpoint", None)
    if path:
        from agent_inspect.checkpoint import read

        return read(path, **checkpoint_options(args))
    return read_markers(getattr(args, "markers", None), **checkpoint_options(args))


def read_markers(text: str | None, *, timeout: float | None = None) -> Any:
    """The markers one ``--markers`` argument (or ``@markers=`` selector) names:
    :func:`agent_inspect.checkpoint.read_markers_text`, the one reader (``timeout``: a checkpoint URL's wait)."""
    from agent_inspect.checkpoint import read_markers_text

    return read_markers_text(text, timeout=timeout)


def parse_markers(text: str | None) -> Any:
    """Markers given as JSON, or ``@file`` / a file path holding them (partition numbers may be strings).

    A file may also be a sample's ``<name>.markers.json``: its ``"markers"`` entry is used.
    """
    from agent_inspect.checkpoint import parse_markers_text

    return parse_markers_text(text)


def restore_of(text: str | None) -> Any:
    """A sample markers file's ``restore`` entry (restored seqNums, in-flight tasks), if ``--markers @file``."""
    if not text:
        return None
    if not text.startswith("@"):
        if text.lstrip().startswith(("[", "{")) or not Path(text).is_file():
            return None
        text = "@" + text
    try:
        data = json.loads(Path(text[1:]).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data.get("restore") if isinstance(data, dict) else None
