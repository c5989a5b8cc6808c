"""The recovery markers of the command line, in one place: ``--markers JSON|@FILE|FILE`` or ``--checkpoint PATH``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from agent_inspect._errors import InspectError

__all__ = ["add_markers_options", "markers_from_args", "parse_markers", "read_markers", "restore_of"]

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


def markers_from_args(args: argparse.Namespace) -> Any:
    """The markers a subcommand's ``--markers`` or ``--checkpoint`` names (None when neither is given)."""
    path = getattr(args, "checkpoint", None)
    if path:
        from agent_inspect.checkpoint import read

        return read(path)
    return read_markers(getattr(args, "markers", None))


def read_markers(text: str | None) -> Any:
    """The markers one ``--markers`` argument (or ``@markers=`` selector) names: a checkpoint (a folder, a
    ``_metadata`` file or a ``scheme://`` URL, read as ``--checkpoint``), else :func:`parse_markers`."""
    from agent_inspect.checkpoint import names_checkpoint, read

    if text is None:
        return None
    return read(text[1:] if text.startswith("@") else text) if names_checkpoint(text) else parse_markers(text)


def parse_markers(text: str | None) -> Any:
    """Markers given as JSON, or ``@file`` / a file path holding them (partition numbers may be strings).

    A file may also be a sample's ``<name>.markers.json``: its ``"markers"`` entry is used.
    """
    if text is None:
        return None
    if not text.startswith("@") and not text.lstrip().startswith(("[", "{")) and Path(text).is_file():
        text = "@" + text                               # a path works with or without the @
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise InspectError(f"--markers file {text[1:]!r} cannot be read ({exc.strerror}); check the path") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InspectError(f"--markers is not valid JSON ({exc.msg}); pass e.g. '[{{\"0\": 120}}]' or @file") from None
    if isinstance(value, dict) and "markers" in value:
        value = value["markers"]
    if not isinstance(value, (list, dict)):
        raise InspectError("--markers must be a JSON list of {partition: offset} objects or one such object")

    def fix(m: Any) -> Any:
        if isinstance(m, dict) and all(isinstance(k, str) and k.lstrip("-").isdigit() for k in m):
            return {int(k): v for k, v in m.items()}
        return m

    return [fix(m) for m in value] if isinstance(value, list) else fix(value)


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
