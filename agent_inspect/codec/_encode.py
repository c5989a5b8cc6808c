"""Encoders: an ActionState as the chosen upstream version writes it (Jackson property order, exact bytes)."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from agent_inspect._errors import ValueFormatError
from agent_inspect.codec._json import jackson_json
from agent_inspect.codec._values import (
    GENERIC_EVENT,
    PYTHON_EVENT,
    SUBAGENT_EVENT,
    VALUE_FORMATS,
    ActionState,
    CallResult,
    Event,
    MemoryUpdate,
    _as_envelope,
)

__all__ = ["encode_action_state"]

# --- encoding --------------------------------------------------------------------------------

def _s(text: str | None) -> bytes:
    return b"null" if text is None else jackson_json(text)


def _extra(extra: dict[str, Any]) -> bytes:
    return b"".join(b"," + jackson_json(k) + b":" + jackson_json(v) for k, v in extra.items())


def _encode_event(ev: Event | None, fmt: str) -> bytes:
    if ev is None:
        return b"null"
    cls = ev.event_class or GENERIC_EVENT
    head = b'{"@class":' + _s(cls) + b',"id":' + _s(ev.id)
    if fmt in ("V0", "V1"):
        parts = [head, b',"attributes":', bytes(ev.attributes)]
        if cls == PYTHON_EVENT or ev.event is not None:
            text = ev.event_string if fmt == "V0" else ev.event_json_str
            if text is None:
                text = ev.event_json_str if fmt == "V0" else ev.event_string
            parts += [b',"event":', _s(ev.event), b',"eventType":', _s(ev.event_type),
                      b',"eventString":' if fmt == "V0" else b',"eventJsonStr":', _s(text)]
        if ev.input:
            parts += [b',"input":', bytes(ev.input)]
        if ev.output:
            parts += [b',"output":', bytes(ev.output)]
        ts = ev.source_timestamp
        parts += [b',"sourceTimestamp":', b"null" if ts is None else str(ts).encode()]
        return b"".join(parts) + _extra(ev.extra) + b"}"
    typ = b',"type":' + _s(ev.type)
    attrs = b',"attributes":' + bytes(ev.attributes)
    if cls == GENERIC_EVENT:
        parts = [head, typ, attrs]
    elif cls == SUBAGENT_EVENT or ev.delegate is not None:
        parts = [head, attrs, b',"delegate":', _encode_event(ev.delegate, fmt), typ]
    else:
        parts = [head, attrs, typ]
    if fmt in _LINEAGE_FORMATS:
        if ev.upstream_event_id is not None:
            parts += [b',"upstreamEventId":', _s(ev.upstream_event_id)]
        if ev.upstream_action_name is not None:
            parts += [b',"upstreamActionName":', _s(ev.upstream_action_name)]
        if ev.attachments:
            parts += [b',"attachments":', bytes(ev.attachments)]
    return b"".join(parts) + _extra(ev.extra) + b"}"


_LINEAGE_FORMATS = ("V3", "V3+", "V4")


def _encode_memory(updates: tuple[MemoryUpdate, ...], fmt: str) -> bytes:
    items = []
    for mu in updates:
        if fmt in ("V2b", "V3", "V3+", "V4") and not mu.is_null and _as_envelope(mu.value) is None:
            raise ValueFormatError(
                f"memory value at {mu.path!r} is plain JSON but {fmt} needs a Kryo envelope; "
                "use MemoryUpdate.new(path, kryo_payload=...) or encode as V2a")
        items.append(b'{"path":' + _s(mu.path) + b',"value":' + bytes(mu.value) + _extra(mu.extra) + b"}")
    return b"[" + b",".join(items) + b"]"


def _encode_call(cr: CallResult, fmt: str) -> bytes:
    out = (b'{"functionId":' + _s(cr.function_id) + b',"argsDigest":' + _s(cr.args_digest)
           + b',"resultPayload":' + _s(cr.result_payload)
           + b',"exceptionPayload":' + _s(cr.exception_payload))
    if fmt != "V1":
        out += b',"status":' + _s(cr.status)
    return out + _extra(cr.extra) + b"}"


def encode_action_state(state: ActionState, *, value_format: str = "V3") -> bytes:
    """Compact JSON of ``state`` with the exact property order upstream's version ``value_format`` writes.

    V0 writes one ``memoryUpdates`` list (sensory then short-term when ``memory_updates`` is unset);
    V1 omits ``CallResult.status``; V2b+ require Kryo envelopes for non-null memory values; lineage is
    written only for V3/V3+/V4 and omitted when null. V4 writes ``subagentResultEvents`` (``[]`` when
    unset) between ``outputEvents`` and ``callResults``, as Jackson orders the 0.4+ class (addendum §1.1);
    other formats cannot hold result events and refuse a state that has some.

    For example::

        state = log.value(0)
        ai.codec.encode_action_state(state, value_format="V3") == bytes(log.raw.value[0])   # byte-exact
    """
    fmt = value_format
    if fmt not in VALUE_FORMATS:
        raise ValueFormatError(f"unknown value format {fmt!r}; use one of {', '.join(VALUE_FORMATS)}")
    events = b"[" + b",".join(_encode_event(e, fmt) for e in state.output_events) + b"]"
    results = state.result_events
    if fmt == "V4":
        events += b',"subagentResultEvents":[' + b",".join(_encode_event(e, fmt) for e in results) + b"]"
    elif results:
        raise ValueFormatError(f"{fmt} has no subagentResultEvents; encode a state with result events as V4")
    task = b'{"taskEvent":' + _encode_event(state.task_event, fmt)
    if fmt == "V0":
        mem = state.memory_updates if state.memory_updates is not UNSET else \
            (*state.sensory_memory_updates, *state.short_term_memory_updates)
        body = task + b',"memoryUpdates":' + _encode_memory(mem, fmt) + b',"outputEvents":' + events
    else:
        calls = b"[" + b",".join(_encode_call(c, fmt) for c in state.call_results) + b"]"
        body = (task + b',"sensoryMemoryUpdates":' + _encode_memory(state.sensory_memory_updates, fmt)
                + b',"shortTermMemoryUpdates":' + _encode_memory(state.short_term_memory_updates, fmt)
                + b',"outputEvents":' + events + b',"callResults":' + calls
                + b',"completed":' + (b"true" if state.completed else b"false"))
    return body + _extra(state.extra) + b"}"


