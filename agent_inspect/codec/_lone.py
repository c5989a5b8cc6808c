"""Values msgspec refuses for an escaped lone UTF-16 surrogate (``"\\uD800"``), read by the stdlib instead.

Upstream's Jackson (``UTF8JsonGenerator``) writes a Java string cut inside a surrogate pair as such an escape and
reads it back; msgspec rejects it. The stdlib keeps the string as Python holds it (``"\\ud800"``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from msgspec import Raw

from agent_inspect._errors import ValueFormatError
from agent_inspect.codec._json import has_lone_surrogate, jackson_json

__all__ = ["lone_surrogate_json", "lone_surrogate_object", "items_of", "raw_parts"]

_EVENT_RAW = ("attributes", "attachments", "input", "output")


def items_of(obj: dict[str, Any], name: str) -> list[Any]:
    """The list member ``name`` of a decoded ActionState object, or none (a wrong type is left for the typed decode
    to name)."""
    items = obj.get(name)
    return items if isinstance(items, list) else []


def raw_parts(ev: dict[str, Any]) -> None:
    """An event object's free-form parts (``attributes``, ``attachments``, ``input``, ``output``) raw JSON again, as
    Jackson writes them (not its ``delegate``: the one walk over the value, ``_values._clean``, goes there)."""
    for name in _EVENT_RAW:
        if name in ev:
            ev[name] = Raw(jackson_json(ev[name]))


def lone_surrogate_object(data: bytes, raw: Iterable[str] = ()) -> dict[str, Any] | None:
    """The JSON object ``data`` that msgspec refuses for an escaped lone surrogate (``"\\ud800"``), read by the
    stdlib; its members named in ``raw`` raw JSON again (``msgspec.Raw``) as Jackson writes them, the surrogate
    escaped. None when ``data`` holds no such escape (its error lies elsewhere: msgspec's is the one to give).
    Raises ``ValueError`` when it is not JSON, ``ValueFormatError`` when it is not an object.

    For example::

        ai.codec.lone_surrogate_object(b'{"key": "k", "value": {"input": "\\ud800"}}', raw=["value"])["value"]
    """
    if not has_lone_surrogate(data):
        return None
    obj = json.loads(data)
    if not isinstance(obj, dict):
        raise ValueFormatError("not a JSON object")
    for name in raw:
        if name in obj:
            obj[name] = Raw(jackson_json(obj[name]))
    return obj


def lone_surrogate_json(data: bytes) -> dict[str, Any]:
    """The value's JSON object as the stdlib reads it; ``_values._clean(obj, raw=True)`` then makes its free-form
    parts raw JSON again, in the one walk that also cleans it, ready for ``msgspec.convert`` to an ``ActionState``."""
    obj = json.loads(data)
    if not isinstance(obj, dict):
        raise ValueFormatError("not an ActionState (not a JSON object)")
    return obj
