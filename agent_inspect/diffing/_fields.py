"""Field-level differences of two action states: task event, outputs, memory, durable calls, completion.

Random event ids are not compared (every attempt draws new ones); identity is the attributes. Memory
envelopes and call payloads are compared as bytes and shown as size + digest: never unpickled.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from agent_inspect.codec import ActionState

__all__ = ["FieldChange", "state_changes", "ABSENT"]

#: Shown for a field one side does not have.
ABSENT: Final = "<absent>"
_SHOW = 160


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One field that differs: ``path`` (e.g. ``task_event.attributes.input``, ``calls[0].args_digest``),
    the value on side a and on side b as short display text, and ``area`` (task_event, outputs, memory,
    calls, completion, outcome, identity).

    For example::

        change = ai.diffing.state_changes(log.value(0), log.value(1))[0]
        change.area, change.path, change.a, change.b
    """

    area: str
    path: str
    a: str
    b: str

    def to_dict(self) -> dict[str, str]:
        return {"area": self.area, "path": self.path, "a": self.a, "b": self.b}


def show(value: Any) -> str:
    """Short display text of a JSON-like value (bytes as size + digest, never decoded)."""
    if value is ABSENT:
        return ABSENT
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        return f"<{len(data)} bytes sha256:{hashlib.sha256(data).hexdigest()[:12]}>"
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        except (TypeError, ValueError):
            text = repr(value)
    return text if len(text) <= _SHOW else text[:_SHOW - 1] + "…"


def _attrs(event: Any) -> Any:
    if event is None:
        return ABSENT
    try:
        return event.attrs()
    except Exception:  # noqa: BLE001 - malformed attributes compare as their bytes
        return bytes(getattr(event, "attributes", b"") or b"")


def _walk(a: Any, b: Any, path: str, area: str, out: list[FieldChange]) -> None:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for k in sorted(set(a) | set(b), key=str):
            _walk(a.get(k, ABSENT), b.get(k, ABSENT), f"{path}.{k}", area, out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(x, y, f"{path}[{i}]", area, out)
    elif a is ABSENT or b is ABSENT or a != b or type(a) is not type(b):
        out.append(FieldChange(area, path, ABSENT if a is ABSENT else show(a), ABSENT if b is ABSENT else show(b)))


def _event_sig(event: Any) -> tuple[Any, str]:
    return (getattr(event, "type", None), json.dumps(_attrs(event), sort_keys=True, default=str))


def _outputs(a: tuple[Any, ...], b: tuple[Any, ...], out: list[FieldChange]) -> None:
    sa, sb = [_event_sig(e) for e in a], [_event_sig(e) for e in b]
    if sa == sb:
        return
    if sorted(sa, key=str) == sorted(sb, key=str):
        out.append(FieldChange("outputs", "output_events.order", show([t for t, _ in sa]), show([t for t, _ in sb])))
        return
    for where, ea, eb in _slots("outputs", "output_events", a, b, lambda e: show(_label(e)), out):
        if ea.type != eb.type:
            out.append(FieldChange("outputs", f"{where}.type", show(ea.type), show(eb.type)))
        _walk(_attrs(ea), _attrs(eb), f"{where}.attributes", "outputs", out)


def _label(event: Any) -> dict[str, Any]:
    return {"type": event.type, "attributes": _attrs(event)}


def _slots(area: str, where: str, a: tuple[Any, ...], b: tuple[Any, ...], text: Any,
           out: list[FieldChange]) -> list[tuple[str, Any, Any]]:
    """Pair the i-th slots of two lists; a slot one side lacks is reported (``text`` shows the other side's),
    the pairs present on both sides are returned as ``(where[i], x, y)`` for a closer look."""
    both = []
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        at = f"{where}[{i}]"
        if x is None or y is None:
            out.append(FieldChange(area, at, ABSENT if x is None else text(x), ABSENT if y is None else text(y)))
        else:
            both.append((at, x, y))
    return both


def _memory(name: str, a: tuple[Any, ...], b: tuple[Any, ...], out: list[FieldChange]) -> None:
    for where, ma, mb in _slots("memory", f"memory.{name}", a, b, _mem_text, out):
        if ma.path != mb.path:
            out.append(FieldChange("memory", f"{where}.path", show(ma.path), show(mb.path)))
        va, vb = _mem_bytes(ma), _mem_bytes(mb)
        if (va is None) != (vb is None):
            out.append(FieldChange("memory", f"{where}.op", "removed" if va is None else "set",
                                   "removed" if vb is None else "set"))
        elif va != vb:
            out.append(FieldChange("memory", f"{where}.value", show(va), show(vb)))


def _mem_bytes(update: Any) -> bytes | None:
    """The update's value bytes as written (a Kryo envelope stays an envelope); None = a removal."""
    data = bytes(getattr(update, "value", b"null") or b"null")
    return None if data.strip() == b"null" else data


def _mem_text(update: Any) -> str:
    v = _mem_bytes(update)
    return f"{update.path} " + ("removed" if v is None else f"set {show(v)}")


def _payload(p: Any) -> str:
    if p is None:
        return "null"
    data = p.encode("utf-8") if isinstance(p, str) else bytes(p)
    return show(data)


def _calls(a: tuple[Any, ...], b: tuple[Any, ...], out: list[FieldChange]) -> None:
    for where, ca, cb in _slots("calls", "calls", a, b, _call_text, out):
        for name in ("function_id", "args_digest", "status"):
            x, y = getattr(ca, name, None), getattr(cb, name, None)
            if x != y:
                out.append(FieldChange("calls", f"{where}.{name}", show(x), show(y)))
        for name in ("result_payload", "exception_payload"):
            x, y = getattr(ca, name, None), getattr(cb, name, None)
            if x != y:
                out.append(FieldChange("calls", f"{where}.{name}", _payload(x), _payload(y)))


def _call_text(call: Any) -> str:
    digest = call.args_digest or '""'
    return f"{call.function_id}/{digest} {call.status or '(no status)'}"


def state_changes(a: ActionState | None, b: ActionState | None) -> list[FieldChange]:
    """Every field in which action states ``a`` and ``b`` differ (either may be None: not decodable).

    For example::

        ai.diffing.state_changes(log.value(0), log.value(1))   # every field that differs, as FieldChange
    """
    if a is None or b is None:
        if a is None and b is None:
            return []
        return [FieldChange("value", "value", "not decodable" if a is None else "decoded",
                            "not decodable" if b is None else "decoded")]
    out: list[FieldChange] = []
    ta, tb = a.task_event, b.task_event
    if getattr(ta, "type", None) != getattr(tb, "type", None):
        out.append(FieldChange("task_event", "task_event.type", show(getattr(ta, "type", None)),
                               show(getattr(tb, "type", None))))
    _walk(_attrs(ta), _attrs(tb), "task_event.attributes", "task_event", out)
    _outputs(tuple(a.output_events), tuple(b.output_events), out)
    _memory("short_term", tuple(a.short_term_memory_updates), tuple(b.short_term_memory_updates), out)
    _memory("sensory", tuple(a.sensory_memory_updates), tuple(b.sensory_memory_updates), out)
    _calls(tuple(a.call_results), tuple(b.call_results), out)
    if bool(a.completed) != bool(b.completed):
        out.append(FieldChange("completion", "completed", show(bool(a.completed)), show(bool(b.completed))))
    return out
