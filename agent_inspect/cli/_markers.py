"""Recovery markers on the command line: JSON, or ``@FILE`` (a sample's markers file also gives its restore)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_inspect._errors import InspectError

__all__ = ["parse_markers", "restore_of"]


def parse_markers(text: str | None) -> Any:
    """Markers given on the command line as JSON, or ``@file`` holding them (partition numbers may be strings).

    A file may also be a sample's ``<name>.markers.json``: its ``"markers"`` entry is used.
    """
    if text is None:
        return None
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise InspectError(f"--markers file {text[1:]!r} cannot be read ({exc.strerror}); check the path") from None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InspectError(f"--markers is not valid JSON ({exc.msg}); pass e.g. '{{\"0\": 120}}' or @file") from None
    if isinstance(value, dict) and "markers" in value:
        value = value["markers"]

    def fix(m: Any) -> Any:
        if isinstance(m, dict) and all(isinstance(k, str) and k.lstrip("-").isdigit() for k in m):
            return {int(k): v for k, v in m.items()}
        return m

    return [fix(m) for m in value] if isinstance(value, list) else fix(value)


def restore_of(text: str | None) -> Any:
    """A sample markers file's ``restore`` entry (restored seqNums, in-flight tasks), if ``--markers @file``."""
    if not text or not text.startswith("@"):
        return None
    try:
        data = json.loads(Path(text[1:]).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data.get("restore") if isinstance(data, dict) else None
