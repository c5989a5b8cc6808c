"""What differs between the task events of two conflicting roots, attribute by attribute (for a reconstruction's
divergences)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["attribute_diff"]


def _attributes(value: Any, pos: int) -> Any:
    try:
        state = value(pos)
    except Exception:  # noqa: BLE001 - an undecodable record just has no diff
        return None
    event = getattr(state, "task_event", None)
    if event is None:
        return None
    attrs = getattr(event, "attrs", None)
    return attrs() if callable(attrs) else getattr(event, "attributes", None)


def attribute_diff(value: Any, positions: tuple[int, ...]) -> dict[str, tuple[Any, Any]] | None:
    """Flattened differences between the taskEvent attributes of the first and last conflicting roots."""
    if len(positions) < 2:
        return None
    a, b = _attributes(value, positions[0]), _attributes(value, positions[-1])
    if a is None or b is None:
        return None
    out: dict[str, tuple[Any, Any]] = {}
    _diff(a, b, "", out)
    return out


_MISSING = "<absent>"


def _diff(a: Any, b: Any, path: str, out: dict[str, tuple[Any, Any]]) -> None:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for k in sorted(set(a) | set(b), key=str):
            _diff(a.get(k, _MISSING), b.get(k, _MISSING), f"{path}.{k}" if path else str(k), out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, f"{path}[{i}]", out)
    elif a != b or type(a) is not type(b):
        out[path or "."] = (a, b)
