"""What each table and array of a case file holds, checked before the file is read: a value of the wrong kind (a
number where a table belongs, a table where an array does) is one line naming its place, not a traceback."""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from agent_inspect._errors import CaseFileError

__all__ = ["check_shape"]

#: a field's kind: "table", "array" or "text", or (container, kind of each entry) for a table of tables, an array of
#: tables and so on; fields not named here take any value their reader checks
Shape = str | tuple[str, "Shape"]

_AGENT: dict[str, Shape] = {"actions": ("array", "table"), "on": ("table", ("table", "array")), "begin": "table"}
_CALL_CASE: dict[str, Shape] = {"record": "array", "body": ("array", "table"), "expect": ("array", "table"),
                                "warnings": "array", "final_record": "array", "effective_statuses": "array"}
_VARIANT: dict[str, Shape] = {"setup": "table", "keys": ("table", "table"), "expect": ("table", "text"),
                              "expect_calls": ("table", "table"), "expect_results": ("table", "table"),
                              "call_case": "table", "replay_agent": "table"}
_CASE: dict[str, Shape] = {**_VARIANT, "log": ("array", "table"), "replay": "array", "pending": ("array", "table"),
                           "agent": "table", "variants": ("array", "table")}
#: the tables whose own fields have shapes
_INNER = {"agent": _AGENT, "replay_agent": _AGENT, "call_case": _CALL_CASE}


def check_shape(data: Mapping[str, Any], where: str) -> None:
    """Raise :class:`~agent_inspect.CaseFileError` at the first field of ``data`` (a parsed case file) whose value
    is not the kind the format gives it (docs/reference/cases.md)."""
    _fields(data, _CASE, where, "")
    for i, variant in enumerate(data.get("variants") or (), start=1):
        _fields(variant, _VARIANT, where, f"variants[{i}].")


def _fields(data: Mapping[str, Any], shapes: Mapping[str, Shape], where: str, prefix: str) -> None:
    for name, shape in shapes.items():
        if name in data:
            _check(data[name], shape, where, f"{prefix}{name}")
            inner = _INNER.get(name)
            if inner is not None:
                _fields(data[name], inner, where, f"{prefix}{name}.")


def _check(value: Any, shape: Shape, where: str, path: str) -> None:
    kind, entries = (shape, None) if isinstance(shape, str) else shape
    if _kind(value) != kind:
        raise CaseFileError(f"{where}: {path} is {_described(value)}, not {_article(kind)} "
                            "(see docs/reference/cases.md)")
    if entries is not None:
        items = value.items() if isinstance(value, Mapping) else ((f"[{i}]", v) for i, v in enumerate(value, 1))
        for name, item in items:
            _check(item, entries, where, f"{path}{name}" if str(name).startswith("[") else f"{path}.{name}")


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "table"
    if isinstance(value, str):
        return "text"
    if isinstance(value, Sequence):
        return "array"
    return type(value).__name__


def _described(value: Any) -> str:
    words = {bool: "a boolean", int: "a number", float: "a number", str: "text", datetime.datetime: "a date-time",
             datetime.date: "a date", datetime.time: "a time"}
    kind = _kind(value)
    if kind in ("table", "array"):
        return _article(kind)
    return f"{words.get(type(value), type(value).__name__)} ({value!r:.40})"


def _article(kind: str) -> str:
    return {"table": "a table", "array": "an array", "text": "text"}[kind]
