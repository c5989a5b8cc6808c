"""Bulk decoding, the log builder's seam: one record's summary columns in one pass, keys as Arrow arrays.

The same typed decoder as :func:`decode_action_state`, so a row has an error exactly when its value cannot
be read; the checks and format flags of the codec are inlined on the hot path (see :func:`_row`).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import repeat
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UnsetType

from agent_inspect._errors import DecodeError, ValueFormatError
from agent_inspect.codec._bulk_checks import _ENVELOPE_PREFIX, _ENVELOPE_QUOTES, _all_envelopes, _utf8
from agent_inspect.codec._formats import (
    _F_CALL_NEW,
    _F_CALL_OLD,
    _F_ENVELOPE,
    _F_LEGACY,
    _F_LINEAGE,
    _F_MODERN,
    _F_OUTPUT,
    _F_OUTPUT_LINEAGE,
    _V4,
    LINEAGE_RULE_BIT,
    ROW_MASKS,
    _event_flags,
    newest_format,
    row_mask,
)
from agent_inspect.codec._keys import FLAG_AMBIGUOUS, KEY_ARRAY_FIELDS, key_field_arrays, resolve_key_fields
from agent_inspect.codec._values import (
    _DECODER,
    _NULL,
    PYTHON_EVENT,
    SUBAGENT_EVENT,
    TASK_ATTRIBUTES_DECODER,
    UNSET,
    Event,
    decode_action_state,
    envelope_problem,
    state_problem,
)

__all__ = ["FLAG_AMBIGUOUS", "KEY_ARRAY_FIELDS", "key_field_arrays", "resolve_key_fields", "newest_format",
           "LINEAGE_RULE_BIT",
           "ROW_COLUMNS", "EMPTY_ROW", "ROW_ERROR", "NO_FLAGS", "INPUT_EVENT_TYPE", "SUBAGENT_EVENT_TYPE",
           "value_columns", "subagent_call_ids", "error_reason", "routing_type", "release_shared_strings",
           "task_event_attributes"]

_LEGACY_TYPES = {
    "org.apache.flink.agents.api.InputEvent": "_input_event",
    "org.apache.flink.agents.api.OutputEvent": "_output_event",
}

INPUT_EVENT_TYPE = "_input_event"

NO_FLAGS: tuple[str, ...] = ()

def routing_type(ev: Event) -> str | None:
    """The routing type; legacy (V0/V1) events have none, so it is derived from the class."""
    if ev.type is not None:
        return ev.type
    if ev.event_class == PYTHON_EVENT and ev.event_type:
        if ev.event_type.endswith(".InputEvent"):
            return INPUT_EVENT_TYPE
        if ev.event_type.endswith(".OutputEvent"):
            return "_output_event"
        return ev.event_type
    return _LEGACY_TYPES.get(ev.event_class or "", ev.event_class)

ROW_COLUMNS = (
    "completed", "task_event_class", "task_event_type", "task_event_id", "upstream_event_id", "upstream_action",
    "output_event_count", "output_event_types", "output_event_ids", "sensory_update_count",
    "short_term_update_count", "calls_pending", "calls_succeeded", "calls_failed", "_mask", "_problem",
    "subagent_result_count", "subagent_result_event_ids", "payload_bytes",
)
"""``_mask``: the format candidates (bits over VALUE_FORMATS), plus LINEAGE_RULE_BIT where the lineage rule applied."""

EMPTY_ROW = (None, None, None, None, None, None, -1, NO_FLAGS, NO_FLAGS, -1, -1, -1, -1, -1, 0, None, -1, NO_FLAGS,
             -1)


_F_OUTPUTS_LINEAGE = _F_OUTPUT | _F_OUTPUT_LINEAGE

# One object per distinct class, type and action name: a few thousand strings instead of millions, so
# the rows stay small and in cache.
_SAME: dict[str, str] = {}  # emptied after each build: a log of odd types must not leave them behind

_same: Callable[[Any, Any], Any] = _SAME.setdefault

ROW_ERROR = object()

_INVALID = (ROW_ERROR,)  # _row: the typed decode passed, but the codec's state_problem would not

_DECODE = _DECODER.decode

def _decode_row(value: bytes | None) -> tuple[Any, ...]:
    # The same typed decoder as value(pos), so a row has an error exactly when its value cannot be read.
    if value is None:
        return EMPTY_ROW  # a tombstone
    try:
        if not value.isascii():  # msgspec leaves raw parts (attributes, memory values) unchecked; Jackson would not
            value.decode("utf-8")
        st = _DECODE(value)
        if st.task_event is not None:
            row = _row(st, len(value))
            if row is not _INVALID:
                return row
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        pass
    try:  # unknown properties, no task event, an error or a problem: the codec's tolerant path explains it
        st = decode_action_state(value)
    except ValueFormatError as exc:
        return _bad_row(error_reason(exc), len(value))
    row = _row(st, len(value))
    return row if row is not _INVALID else _bad_row(state_problem(st) or "not an ActionState", len(value))

def _bad_row(reason: str, size: int) -> tuple[Any, ...]:
    return (ROW_ERROR, reason, *EMPTY_ROW[2:-1], size)  # a whole row: zip(*rows) stops at the shortest

def _row(st: Any, size: int) -> tuple[Any, ...]:
    """One record's summary columns (see ROW_COLUMNS; ``size``: its bytes); one pass, as it runs for every record.

    Written for CPython's sake: no helper calls or comprehensions on the common path (each costs
    more than the work it wraps), the first event of a list handled without a loop.
    """
    te = st.task_event
    rare = False
    if te is not None:
        cls = te.event_class
        typ = te.type
        # the checks of codec.state_problem and the flags of codec._event_flags, inline: every record
        # has a task event, so a call here costs more than the rest of the check (b"{" is 123)
        if memoryview(te.attributes)[0] != 123 or (typ is None and cls is None):
            return _INVALID
        if te.delegate is not None or te.attachments or cls == SUBAGENT_EVENT:
            rare = True
            flags = 0
        else:
            flags = _F_LEGACY if (typ is None or cls == PYTHON_EVENT or te.source_timestamp is not None) \
                else _F_MODERN
            if te.upstream_event_id is not None or te.upstream_action_name is not None:
                flags |= _F_LINEAGE
        if typ is None:
            typ = routing_type(te)
    else:
        cls = typ = None
        flags = 0
    outs = st.output_events
    if outs:
        otypes = []
        oids = []
        oflags = 0
        for e in outs:
            t = e.type
            if memoryview(e.attributes)[0] != 123 or (t is None and e.event_class is None):
                return _INVALID
            otypes.append(t if t is not None else routing_type(e))
            oids.append(e.id)
            if e.delegate is not None or e.attachments or e.event_class == SUBAGENT_EVENT:
                rare = True
            else:
                oflags |= _event_flags(e)
        if oflags & _F_MODERN:  # codec.outputs_flags, inline (it runs for every record with outputs)
            flags |= oflags | (_F_OUTPUTS_LINEAGE if oflags & _F_LINEAGE else _F_OUTPUT)
        else:
            flags |= oflags
        out_types = tuple(otypes)
        out_ids = tuple(oids)
    else:
        out_types = out_ids = NO_FLAGS
    results = st.subagent_result_events
    if results is UNSET:
        n_results = 0
        result_ids = NO_FLAGS
    else:  # V4 (addendum §1): the property is there, an empty list included
        n_results = len(results)
        result_ids = NO_FLAGS
        if results:
            for e in results:
                if memoryview(e.attributes)[0] != 123 or (e.type is None and e.event_class is None):
                    return _INVALID
                if e.delegate is not None:
                    rare = True
            result_ids = tuple([e.id for e in results])
    calls = st.call_results
    pending = succeeded = failed = 0
    for cr in calls:
        if not ((cr.result_payload or "").isascii() and (cr.exception_payload or "").isascii()):
            return _INVALID   # a payload no base64 decoder reads: state_problem words it
        s = cr.status
        if s is None:  # legacy rule (§5.5): no exception payload means it succeeded
            flags |= _F_CALL_OLD
            if cr.exception_payload is None:
                succeeded += 1
            else:
                failed += 1
        else:
            flags |= _F_CALL_NEW
            if s == "SUCCEEDED":
                succeeded += 1
            elif s == "PENDING":
                pending += 1
            else:
                failed += 1
    sensory = st.sensory_memory_updates
    short = st.short_term_memory_updates
    stm = len(short)
    problem = None
    if sensory or short:
        odd = False
        for mu in sensory + short:
            v = mu.value
            if v != _NULL:
                b = bytes(v)
                # the prefix holds 9 quotes; a 10th closes the payload, so no member can follow it
                if b.startswith(_ENVELOPE_PREFIX) and b.count(b'"') == _ENVELOPE_QUOTES:
                    flags |= _F_ENVELOPE
                else:
                    odd = True
        if odd:
            rare = True
            problem = envelope_problem(st)
    if st.memory_updates is not UNSET:
        stm += len(st.memory_updates)  # V0's single list
        rare = True
    if rare:
        if state_problem(st) is not None:  # delegates and result events are checked there
            return _INVALID
        mask = row_mask(st)
    else:
        mask = ROW_MASKS[flags] if results is UNSET else _V4
    if te is None:
        return (st.completed, None, None, None, None, None, len(outs), out_types, out_ids, len(sensory), stm,
                pending, succeeded, failed, mask, problem, n_results, result_ids, size)
    action = te.upstream_action_name
    return (st.completed, _same(cls, cls), _same(typ, typ), te.id, te.upstream_event_id,
            action if action is None else _same(action, action), len(outs), out_types,
            out_ids, len(sensory), stm, pending, succeeded, failed, mask, problem, n_results, result_ids, size)

def error_reason(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__

def value_columns(values: list[bytes | None]) -> list[list[Any]]:
    """The value columns (see ROW_COLUMNS) of some records' values (None for a tombstone)."""
    cols: list[list[Any]] = [[] for _ in ROW_COLUMNS]
    envelopes = True  # until a chunk shows memory values of another kind: then each is checked where it is
    for start in range(0, len(values), _CHUNK):
        part = values[start:start + _CHUNK]
        utf8 = _utf8(part)
        try:  # the common chunk: every value in the fast structs, one loop in C
            if not utf8:
                raise UnicodeError("some value is not UTF-8")   # the row-by-row path finds it
            memory: list[msgspec.Raw] | None = [] if envelopes else None
            rows = list(map(_fast_row, map(_FAST_DECODE, part), part, repeat(memory)))  # type: ignore[arg-type]
            if memory and not _all_envelopes(memory):  # decoded again, row by row checked (once a call)
                envelopes = False
                rows = list(map(_fast_row, map(_FAST_DECODE, part), part))  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - a refused value (a tombstone included) is the reference's to explain
            if start == 0 and len(values) > _CHUNK and _mostly_refused(part):  # an older format: all by the reference
                rows = list(map(_decode_row, values))
                return [list(col) for col in zip(*rows)] if rows else cols
            rows = list(map(_row_of if utf8 else _utf8_row_of, part))
        # transposed chunk by chunk, while its rows are still in the CPU's cache
        for col, cells in zip(cols, zip(*rows)):
            col += cells
    return cols


# Records decoded and summarized at a time (the rows of a chunk stay in cache until transposed).
_CHUNK = 512


def _mostly_refused(part: list[bytes | None]) -> bool:
    refused = 0
    for value in part:
        try:
            _FAST_DECODE(value)  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - counting refusals only
            refused += 1
    return refused * 2 > len(part)


def _utf8_row_of(value: bytes | None) -> tuple[Any, ...]:
    """_row_of of a value that may not be UTF-8 (the reference names that problem)."""
    return _decode_row(value) if value is not None and not _utf8([value]) else _row_of(value)


def _row_of(value: bytes | None) -> tuple[Any, ...]:
    try:
        state = _FAST_DECODE(value)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - the reference decides what this value is
        return _decode_row(value)
    return _fast_row(state, value)  # type: ignore[arg-type]  # (a tombstone does not decode)


class _AnyObject(msgspec.Struct, frozen=True, gc=False):
    """Any JSON object, its members skipped: the decode itself checks that attributes are one."""


# The fast path decodes into the structs below: codec._values' structs narrowed to the common record
# of 0.3+ runtimes (typed events without delegates, attachments or legacy fields, a status on every
# call, no V0 list, no sub-agent results, no ``extra``). Each field takes a subset of what the codec's
# field takes (attributes: objects only), so a value they accept decodes in the codec to the same
# fields, and _fast_row needs only the checks they cannot make. A value they refuse takes _decode_row,
# the reference; tests/codec/test_bulk_rows.py holds the two to the same rows. A member they lack is unknown to
# them, so refused: a delegate or a legacy event field even when null (0.3+ writers leave them out; each
# default a struct fills costs every event).
_FAST: dict[str, Any] = {"frozen": True, "gc": False, "forbid_unknown_fields": True}


class _FastMemoryUpdate(msgspec.Struct, **_FAST):
    path: str
    value: msgspec.Raw = _NULL


class _FastCallResult(msgspec.Struct, rename="camel", **_FAST):
    function_id: str
    status: Literal["PENDING", "SUCCEEDED", "FAILED"]
    args_digest: str = ""
    result_payload: str | None = None
    exception_payload: str | None = None


class _FastEvent(msgspec.Struct, rename="camel", kw_only=True, **_FAST):
    event_class: str | None = msgspec.field(default=None, name="@class")
    id: str
    type: str
    attributes: _AnyObject = _AnyObject()
    upstream_event_id: str | None = None
    upstream_action_name: str | None = None


class _FastState(msgspec.Struct, rename="camel", **_FAST):
    task_event: _FastEvent
    sensory_memory_updates: tuple[_FastMemoryUpdate, ...] = ()
    short_term_memory_updates: tuple[_FastMemoryUpdate, ...] = ()
    output_events: tuple[_FastEvent, ...] = ()
    call_results: tuple[_FastCallResult, ...] = ()
    completed: bool = False
    subagent_result_events: Annotated[tuple[_FastEvent, ...], msgspec.Meta(max_length=0)] | UnsetType = UNSET


_FAST_DECODE = msgspec.json.Decoder(_FastState).decode


# An event's own flags are LEGACY or MODERN, plus LINEAGE: bits 0-2, disjoint, so made by adding (int + int is
# quick in CPython; `|` is a generic call). _WITH_OUTPUTS[event][outputs]: a record's flags from its task event's
# and its output events' (their OR), as codec.outputs_flags makes them.
_WITH_OUTPUTS = [[f | (o | (_F_OUTPUTS_LINEAGE if o & _F_LINEAGE else _F_OUTPUT) if o & _F_MODERN else o)
                  for o in range(8)] for f in range(8)]


def _fast_row(st: _FastState, value: bytes, memory: list[msgspec.Raw] | None = None) -> tuple[Any, ...]:
    """_row of a record the fast structs took (the same columns), or the reference's row when it is rare.

    ``memory``: its memory values are taken for envelopes and put there, for the caller to check them all at
    once (:func:`_all_envelopes`) and to redo the rows without it when they are not. Written for the
    interpreter: the flags are added (their bits are disjoint where they are) and a record's one output event
    or call needs no loop.
    """
    te = st.task_event
    cls = te.event_class
    if cls == SUBAGENT_EVENT:
        return _decode_row(value)
    action = te.upstream_action_name
    upstream = te.upstream_event_id
    flags = (_F_LEGACY if cls == PYTHON_EVENT else _F_MODERN) + \
        (0 if action is None and upstream is None else _F_LINEAGE)
    outs = st.output_events
    out_types: tuple[str, ...]
    out_ids: tuple[str, ...]
    if outs:
        if len(outs) == 1:
            e = outs[0]
            c = e.event_class
            if c == SUBAGENT_EVENT:
                return _decode_row(value)
            flags = _WITH_OUTPUTS[flags][(_F_LEGACY if c == PYTHON_EVENT else _F_MODERN) +
                                         (0 if e.upstream_event_id is None and e.upstream_action_name is None
                                          else _F_LINEAGE)]
            out_types = (e.type,)
            out_ids = (e.id,)
        else:
            oflags = 0
            for e in outs:
                c = e.event_class
                if c == SUBAGENT_EVENT:
                    return _decode_row(value)
                oflags |= _F_LEGACY if c == PYTHON_EVENT else _F_MODERN
                if e.upstream_event_id is not None or e.upstream_action_name is not None:
                    oflags |= _F_LINEAGE
            flags = _WITH_OUTPUTS[flags][oflags]
            out_types = tuple([e.type for e in outs])
            out_ids = tuple([e.id for e in outs])
    else:
        out_types = out_ids = NO_FLAGS
    calls = st.call_results
    if calls:
        for cr in calls:
            if not ((cr.result_payload or "").isascii() and (cr.exception_payload or "").isascii()):
                return _decode_row(value)   # a payload no base64 decoder reads: the reference words it
        flags += _F_CALL_NEW  # (not set before)
        if len(calls) == 1:
            s = calls[0].status
            if s == "SUCCEEDED":
                pending, succeeded, failed = 0, 1, 0
            elif s == "PENDING":
                pending, succeeded, failed = 1, 0, 0
            else:
                pending, succeeded, failed = 0, 0, 1
        else:
            pending = succeeded = failed = 0
            for cr in calls:
                s = cr.status
                if s == "SUCCEEDED":
                    succeeded += 1
                elif s == "PENDING":
                    pending += 1
                else:
                    failed += 1
    else:
        pending = succeeded = failed = 0
    sensory = st.sensory_memory_updates
    short = st.short_term_memory_updates
    if sensory or short:
        envelope = False
        for mu in sensory + short if sensory else short:
            v = mu.value
            if v != _NULL:
                if memory is not None:
                    memory.append(v)
                else:
                    b = bytes(v)
                    if not (b.startswith(_ENVELOPE_PREFIX) and b.count(b'"') == _ENVELOPE_QUOTES):
                        return _decode_row(value)  # odd memory values: the reference names the problem
                envelope = True
        if envelope:
            flags += _F_ENVELOPE  # (not set before)
    # (no _same here: the log builder turns each batch's rows into arrays at once, so these strings die young)
    return (st.completed, cls, te.type, te.id, upstream, action, len(outs), out_types, out_ids, len(sensory),
            len(short), pending, succeeded, failed,
            ROW_MASKS[flags] if st.subagent_result_events is UNSET else _V4, None, 0, NO_FLAGS, len(value))


SUBAGENT_EVENT_TYPE = "InternalSubagentCallEvent"

def subagent_call_ids(value: bytes) -> tuple[str | None, str | None, str | None]:
    try:
        attrs = decode_action_state(value).task_event.attrs()  # type: ignore[union-attr]
    except (DecodeError, AttributeError):
        return None, None, None
    if not isinstance(attrs, dict):
        return None, None, None
    return tuple(v if isinstance(v, str) else None  # type: ignore[return-value]
                 for v in (attrs.get("targetScope"), attrs.get("sessionId"), attrs.get("callId")))


def release_shared_strings() -> None:
    """Forget the strings shared across rows (call after each build: odd types must not stay behind)."""
    _SAME.clear()


def task_event_attributes(value: bytes) -> bytes | None:
    """The raw ``taskEvent.attributes`` JSON of a value, without decoding the rest (None when unreadable)."""
    try:
        task = TASK_ATTRIBUTES_DECODER.decode(value).task_event
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return None
    if task is None or not task.attributes:
        return None
    return bytes(task.attributes)
