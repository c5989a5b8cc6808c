"""The recovery markers one markers argument names, read one way for ``--markers`` and a diff side's ``@markers=``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_inspect._errors import InspectError
from agent_inspect._types import MarkersLike
from agent_inspect.checkpoint._read import names_checkpoint, read

__all__ = ["read_markers_text", "parse_markers_text"]


def read_markers_text(text: str | None, *, option: str = "--markers", timeout: float | None = None) -> MarkersLike:
    """The markers ``text`` names, as ``--markers`` reads it: a checkpoint (a folder, a ``_metadata`` file or a
    ``scheme://`` URL, read as ``--checkpoint``), else :func:`parse_markers_text`; ``@`` before a path is
    optional. ``option`` names the argument in errors (``"@markers"`` for a diff side). None gives None.
    ``timeout``: seconds a checkpoint URL's storage may take to answer, as :func:`read` takes it (None: 10).

    For example::

        ai.checkpoint.read_markers_text('[{"0": 120}]')                                 # [{0: 120}]
        ai.checkpoint.read_markers_text(f"@{ai.samples.path('production', 'markers')}")  # the sample's markers
        ai.checkpoint.read_markers_text(str(ai.samples.checkpoint("production")), timeout=30)   # a Checkpoint
    """
    if text is None:
        return None
    if names_checkpoint(text):
        return read(text[1:] if text.startswith("@") else text, timeout=timeout)
    return parse_markers_text(text, option=option)


def parse_markers_text(text: str | None, *, option: str = "--markers") -> MarkersLike:
    """Markers given as JSON (``[{"0": 120}]`` or one map), or ``@FILE`` / ``FILE`` holding them; partition
    numbers may be strings. A sample's ``<name>.markers.json`` gives its ``"markers"`` entry.

    For example::

        ai.checkpoint.parse_markers_text('{"0": 12}')       # {0: 12}
    """
    if text is None:
        return None
    looks_like_json = text.lstrip().startswith(("[", "{"))
    if not text.startswith("@") and not looks_like_json and Path(text).is_file():
        text = "@" + text                               # a path works with or without the @
    path = None
    if text.startswith("@"):
        path = text[1:]
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise InspectError(f"{option} file {path!r} cannot be read ({exc.strerror}); check the path") from None
        except UnicodeDecodeError:
            raise InspectError(f"{option} file {path!r} is not a markers file (not UTF-8 text); pass a markers .json "
                               f"file, a checkpoint, or the markers as JSON ('[{{\"0\": 120}}]')") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        if path is not None:   # the file was read: its text is not JSON (the text is not echoed as a path)
            raise InspectError(f"{option} file {path!r} is not valid JSON ({exc.msg} at line {exc.lineno} column "
                               f"{exc.colno}); pass a markers .json file such as a sample's "
                               f"<name>.markers.json") from None
        if not looks_like_json:   # neither a file there nor JSON: most likely a path with a typo
            raise InspectError(f"{option} file {text!r} cannot be read (no such file); check the path, or pass "
                               "the markers as JSON ('[{\"0\": 120}]')") from None
        raise InspectError(f"{option} is not valid JSON ({exc.msg}); pass e.g. '[{{\"0\": 120}}]' or @file") from None
    if isinstance(value, dict) and "markers" in value:
        value = value["markers"]
    if not isinstance(value, (list, dict)):
        raise InspectError(f"{option} must be a JSON list of {{partition: offset}} objects or one such object")
    return [_int_partitions(m) for m in value] if isinstance(value, list) else _int_partitions(value)


def _int_partitions(m: Any) -> Any:
    if isinstance(m, dict) and all(isinstance(k, str) and k.lstrip("-").isdigit() for k in m):
        return {int(k): v for k, v in m.items()}
    return m
