"""The value: ``ActionState`` JSON of every upstream version V0–V4 (spec §2.2, §5; addendum §1)."""

from __future__ import annotations

import base64
import re
from typing import Any, Literal

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType, field

from agent_inspect._errors import ValueFormatError
from agent_inspect.codec._json import has_lone_surrogate, jackson_json, parse_json
from agent_inspect.codec._lone import items_of as _items
from agent_inspect.codec._lone import lone_surrogate_json, raw_parts

__all__ = [
    "VALUE_FORMATS", "GENERIC_EVENT", "SUBAGENT_EVENT", "PYTHON_EVENT",
    "KryoEnvelope", "MemoryUpdate", "CallResult", "Event", "ActionState",
    "decode_action_state", "unpickle_payload",
]

VALUE_FORMATS = ("V0", "V1", "V2a", "V2b", "V3", "V3+", "V4")
"""The record value formats upstream versions write, oldest first (``detect_value_format``)."""
GENERIC_EVENT = "org.apache.flink.agents.api.Event"
"""The Java ``@class`` of a generic event (an event without a class of its own)."""
SUBAGENT_EVENT = "org.apache.flink.agents.runtime.subagent.InternalSubagentCallEvent"
"""The Java ``@class`` of a sub-agent call's wrapper event."""
PYTHON_EVENT = "org.apache.flink.agents.runtime.python.event.PythonEvent"
"""The Java ``@class`` of an event a Python agent sent (its payload is pickled, never loaded)."""

# Unknown JSON properties are moved under this name before the typed decode, so they land in
# `.extra` without a second model; no real property can be spelled like this.
_EXTRA = "~agent_inspect.extra"
_EMPTY_OBJECT = Raw(b"{}")
_NULL = Raw(b"null")
_ABSENT = Raw(b"")  # msgspec cannot decode `Raw | None`; an empty Raw marks "property not present"
# (Event omits defaults when encoding, so an absent member never becomes an empty JSON value)
_STRUCT_OPTS: dict[str, Any] = {"frozen": True, "gc": False, "forbid_unknown_fields": True,
                               "repr_omit_defaults": True}


def _short_raw(value: Raw, limit: int = 120) -> str:
    text = bytes(value).decode("utf-8", "replace")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _struct_repr(obj: Struct) -> str:
    """Like msgspec's repr (defaults omitted), but raw JSON shown as its (shortened) text."""
    parts = []
    for f in msgspec.structs.fields(obj):
        value = getattr(obj, f.name)
        default = f.default if f.default is not msgspec.NODEFAULT else (
            f.default_factory() if f.default_factory is not msgspec.NODEFAULT else msgspec.NODEFAULT)
        if default is not msgspec.NODEFAULT and value == default:
            continue
        parts.append(f"{f.name}={_short_raw(value) if isinstance(value, Raw) else repr(value)}")
    return f"{type(obj).__name__}({', '.join(parts)})"


def _json_kind(value: Raw) -> str:
    """msgspec's name for the JSON type of a raw value (int, float, str, bool, null, array, object)."""
    data = bytes(value)
    head = data[:1]
    kinds = {b"{": "object", b"[": "array", b'"': "str", b"t": "bool", b"f": "bool", b"n": "null"}
    if head in kinds:
        return kinds[head]
    return "float" if any(c in data for c in b".eE") else "int" if head else "nothing"


class KryoEnvelope(Struct, **_STRUCT_OPTS):
    """A memory value as upstream writes it from #874 on: opaque Kryo bytes in base64.

    For example::

        ai.codec.KryoEnvelope(payload="AQBhYmM=")       # an opaque memory value: base64 Kryo bytes
    """

    serde: str = "kryo"
    version: int = 1
    payload: str = ""

    @property
    def payload_size(self) -> int:
        """Number of payload bytes (without decoding them)."""
        n = len(self.payload)
        return n * 3 // 4 - self.payload[-2:].count("=") if n else 0

    @property
    def supported(self) -> bool:
        """Whether upstream readers accept it (serde "kryo", version 1); they refuse anything else (§5.4)."""
        return self.serde == "kryo" and self.version == 1

    @property
    def preview(self) -> str:
        """A short base64 prefix, for display."""
        return self.payload[:16] + ("…" if len(self.payload) > 16 else "")


class _WireEnvelope(Struct, frozen=True, gc=False, forbid_unknown_fields=True):
    # Only a whole envelope is one: an object missing a member, or with another serde, is plain JSON (V0–V2a).
    serde: Literal["kryo"]
    version: int
    payload: str


_ENVELOPE = msgspec.json.Decoder(_WireEnvelope)


def _as_envelope(value: Raw) -> KryoEnvelope | None:
    data = bytes(value)
    if not data.startswith(b"{") or b'"serde"' not in data:
        return None
    try:
        w = _ENVELOPE.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None
    return KryoEnvelope(w.serde, w.version, w.payload)


# V0's single list is left out: that era wrote memory values as plain JSON, never in envelopes.
_MEMORY_LISTS = (("sensoryMemoryUpdates", "sensory_memory_updates"),
                 ("shortTermMemoryUpdates", "short_term_memory_updates"))


def envelope_problem(state: Any) -> str | None:
    """Why upstream would refuse this record's memory values (a Kryo envelope of another version), else None.

    Internal (the log); the record still decodes, so its other columns stay readable (§5.4).
    """
    for name, attr in _MEMORY_LISTS:
        for i, mu in enumerate(getattr(state, attr)):
            env = _as_envelope(mu.value)
            if env is not None and env.version != 1:
                return f"{name}[{i}].value is a Kryo envelope of version {env.version}; readers accept only version 1"
    return None


class MemoryUpdate(Struct, **_STRUCT_OPTS):
    """One memory write: dotted ``path`` and its ``value`` as raw JSON (a Kryo envelope, plain JSON or null).

    For example::

        updates = [u for pos in log.records.index[:60] if (s := log.value(pos)) for u in s.short_term_memory_updates]
        updates[0].path, bytes(updates[0].value)
    """

    path: str
    value: Raw = _NULL
    extra: dict[str, Any] = field(default_factory=dict, name=_EXTRA)

    __repr__ = _struct_repr

    @property
    def envelope(self) -> KryoEnvelope | None:
        """The Kryo envelope (V2b+), or None for a null or plain-JSON value."""
        return _as_envelope(self.value)

    def json_value(self) -> Any:
        """The value parsed as JSON (plain for V0–V2a, the envelope object for V2b+)."""
        return parse_json(bytes(self.value))

    @property
    def is_null(self) -> bool:
        """True for a null value (``newObject(path)`` or setting None; the log cannot tell which)."""
        return bytes(self.value) == b"null"

    @classmethod
    def new(cls, path: str, value: Any = None, *, kryo_payload: str | bytes | None = None) -> MemoryUpdate:
        """Build an update from a JSON-native ``value`` or an opaque Kryo payload (bytes or base64)."""
        if kryo_payload is not None:
            b64 = kryo_payload if isinstance(kryo_payload, str) else base64.b64encode(kryo_payload).decode()
            return cls(path, Raw(b'{"serde":"kryo","version":1,"payload":' + jackson_json(b64) + b"}"))
        return cls(path, Raw(jackson_json(value)))


class CallResult(Struct, rename="camel", **_STRUCT_OPTS):
    """One durable-call journal entry. ``status`` is None in legacy V1 data; see :attr:`effective_status`.

    For example::

        calls = [c for pos in log.records.index[:60] if (s := log.value(pos)) for c in s.call_results]
        calls[0].function_id, calls[0].effective_status, calls[0].result_payload is not None
    """

    function_id: str
    args_digest: str = ""
    result_payload: str | None = None
    exception_payload: str | None = None
    status: Literal["PENDING", "SUCCEEDED", "FAILED"] | None = None
    extra: dict[str, Any] = field(default_factory=dict, name=_EXTRA)

    @property
    def effective_status(self) -> str:
        """``status``, or for legacy records SUCCEEDED when there is no exception payload, else FAILED."""
        if self.status is not None:
            return self.status
        return "SUCCEEDED" if self.exception_payload is None else "FAILED"


class Event(Struct, rename="camel", kw_only=True, omit_defaults=True, **_STRUCT_OPTS):
    """An event as stored in a record. ``attributes`` stays raw JSON (an object); use :meth:`attrs` to parse it.

    Every event has an ``id`` and a ``type`` (legacy V0/V1 events: an ``event_class`` instead).
    Legacy (V0/V1) fields: ``event`` (base64 pickled Python event), ``event_type``, ``event_string`` (0.1),
    ``event_json_str`` (0.2), ``source_timestamp``, and ``input``/``output`` of typed events.

    For example::

        event = log.value(0).task_event
        event.id, event.type, event.attrs()            # attributes stay raw JSON until asked for
    """

    event_class: str | None = field(default=None, name="@class")
    id: str
    type: str | None = None
    attributes: Raw = _EMPTY_OBJECT
    upstream_event_id: str | None = None
    upstream_action_name: str | None = None
    delegate: Event | None = None
    attachments: Raw = _ABSENT
    event: str | None = None
    event_type: str | None = None
    event_string: str | None = None
    event_json_str: str | None = None
    source_timestamp: int | None = None
    input: Raw = _ABSENT
    output: Raw = _ABSENT
    extra: dict[str, Any] = field(default_factory=dict, name=_EXTRA)

    __repr__ = _struct_repr

    def attrs(self) -> Any:
        """The attribute map, parsed (:class:`DecodeError` if the stored JSON is malformed)."""
        return parse_json(bytes(self.attributes))

    @classmethod
    def new(cls, type: str, attributes: Any = None, *, id: str | None = None,
            event_class: str = GENERIC_EVENT, upstream_event_id: str | None = None,
            upstream_action_name: str | None = None, delegate: Event | None = None) -> Event:
        """Build an event from JSON-native attributes (written in insertion order, as Jackson would)."""
        if id is None:
            import uuid

            id = str(uuid.uuid4())
        return cls(event_class=event_class, id=id, type=type,
                   attributes=Raw(jackson_json({} if attributes is None else attributes)),
                   upstream_event_id=upstream_event_id, upstream_action_name=upstream_action_name,
                   delegate=delegate)


class ActionState(Struct, rename="camel", **_STRUCT_OPTS):
    """One decoded ``ActionState`` value. ``memory_updates`` is set only for V0 records (one list).

    ``subagent_result_events`` is set only for V4 records (writers that have the property write it in
    every record, ``[]`` included; addendum §1): a sub-agent child's results, which carry no lineage.
    :attr:`result_events` reads it as upstream does, absent = empty.

    For example::

        state = ai.codec.decode_action_state(log.raw.value[1])   # or log.value(1): a durable call in progress
        state.task_event.type, state.completed, state.call_results
        log.value(int(log.records["output_event_count"].idxmax())).output_events   # a completed record's
    """

    task_event: Event | None = None
    sensory_memory_updates: tuple[MemoryUpdate, ...] = ()
    short_term_memory_updates: tuple[MemoryUpdate, ...] = ()
    output_events: tuple[Event, ...] = ()
    call_results: tuple[CallResult, ...] = ()
    completed: bool = False
    memory_updates: tuple[MemoryUpdate, ...] | UnsetType = UNSET
    subagent_result_events: tuple[Event, ...] | UnsetType = UNSET
    extra: dict[str, Any] = field(default_factory=dict, name=_EXTRA)

    @property
    def result_events(self) -> tuple[Event, ...]:
        """The sub-agent result events (empty when the property is absent, as upstream reads it)."""
        sr = self.subagent_result_events
        return () if sr is UNSET else sr


class _AttrsEvent(Struct, frozen=True, gc=False):
    attributes: Raw = _ABSENT


class _AttrsState(Struct, frozen=True, gc=False, rename="camel"):
    task_event: _AttrsEvent | None = None


#: Decodes only ``taskEvent.attributes`` (internal; identity checks).
TASK_ATTRIBUTES_DECODER = msgspec.json.Decoder(_AttrsState)


def _json_names(cls: type[Struct]) -> frozenset[str]:
    return frozenset(n for n in cls.__struct_encode_fields__ if n != _EXTRA)


_STATE_KEYS = _json_names(ActionState)
_EVENT_KEYS = _json_names(Event)
_CALL_KEYS = _json_names(CallResult)
_MEMORY_KEYS = _json_names(MemoryUpdate)
_DECODER = msgspec.json.Decoder(ActionState)


def _move_extra(obj: Any, known: frozenset[str]) -> None:
    if isinstance(obj, dict):
        extra = {k: obj.pop(k) for k in [k for k in obj if k not in known]}
        if extra:
            obj[_EXTRA] = extra


_SNAKE_LINEAGE = (("upstream_event_id", "upstreamEventId"), ("upstream_action_name", "upstreamActionName"))


def _clean_event(ev: Any, raw: bool) -> None:
    if isinstance(ev, dict):
        if raw:
            raw_parts(ev)
        for snake, camel in _SNAKE_LINEAGE:  # the Python SDK reads and may write either spelling (§13.2)
            if snake in ev and camel not in ev:
                ev[camel] = ev.pop(snake)
        _move_extra(ev, _EVENT_KEYS)
        _clean_event(ev.get("delegate"), raw)


def _clean(obj: Any, raw: bool = False) -> None:
    """Unknown properties of a decoded value moved under ``extra``, in one walk; with ``raw`` (a value the stdlib
    read for a lone surrogate) the free-form parts made raw JSON again too (events' :func:`raw_parts`, memory values)."""
    if not isinstance(obj, dict):
        return
    _move_extra(obj, _STATE_KEYS)
    _clean_event(obj.get("taskEvent"), raw)
    for name in ("outputEvents", "subagentResultEvents"):
        for ev in _items(obj, name):
            _clean_event(ev, raw)
    for name in ("sensoryMemoryUpdates", "shortTermMemoryUpdates", "memoryUpdates"):
        for mu in _items(obj, name):
            if raw and isinstance(mu, dict) and "value" in mu:
                mu["value"] = Raw(jackson_json(mu["value"]))
            _move_extra(mu, _MEMORY_KEYS)
    for cr in _items(obj, "callResults"):
        _move_extra(cr, _CALL_KEYS)


_ARTICLE = {"object": "an object", "array": "an array", "int": "an int", "str": "a string", "null": "null"}
_ENUMS = {"status": "PENDING, SUCCEEDED, FAILED"}
_EXPECTED = re.compile(r"Expected `(.+)`, got `(.+)`")


def _explain(exc: msgspec.ValidationError) -> str:
    """msgspec's validation message as one line naming the JSON field (``taskEvent.attributes must be …``)."""
    msg, _, at = str(exc).partition(" - at `$")
    path = at.rstrip("`").lstrip(".")
    name = path.rpartition(".")[2]
    expected = _EXPECTED.fullmatch(msg)
    if expected:
        want = [_ARTICLE.get(t, f"a {t}") for t in expected[1].split(" | ")]
        got = expected[2]
        if not path:
            return f"not an ActionState (a JSON {got}, not an object)"
        if name in _ENUMS:  # msgspec names a Literal's base type; the allowed values say more
            want = [_ENUMS[name]] + (["null"] if "null" in expected[1] else [])
            return f"{path} must be one of {' or '.join(want)}, got {got}"
        return f"{path} must be {' or '.join(want)}, got {got}"
    if msg.startswith("Object missing required field `"):
        missing = msg.split("`")[1]
        return f"{path}.{missing} is missing" if path else f"{missing} is missing"
    if msg.startswith("Invalid enum value ") and name in _ENUMS:
        return f"{path} must be one of {_ENUMS[name]}, got {msg[len('Invalid enum value '):]}"
    return f"{path}: {msg}" if path else f"not an ActionState: {msg}"


def _event_problem(ev: Event) -> str | None:
    try:
        is_object = memoryview(ev.attributes)[0] == 123  # b"{"
    except IndexError:
        is_object = False
    if not is_object:
        return f"attributes must be an object, got {_json_kind(ev.attributes)}"
    if ev.type is None and ev.event_class is None:
        return "type is missing (events need a type, legacy events an @class)"
    problem = None if ev.delegate is None else _event_problem(ev.delegate)
    return None if problem is None else f"delegate.{problem}"


def state_problem(state: ActionState) -> str | None:
    """What the typed decode cannot check (an object's attributes, a type or class, base64 payloads), else None;
    decode_action_state raises it. It runs for every record: one inline pass (a ``__post_init__`` cost twice as much)."""
    for i, call in enumerate(state.call_results):   # Jackson's base64 of a byte[]: nothing beyond ASCII decodes
        for name, payload in (("resultPayload", call.result_payload), ("exceptionPayload", call.exception_payload)):
            if payload is not None and not payload.isascii():
                return f"callResults[{i}].{name} is not base64 text (it holds a character beyond ASCII)"
    te = state.task_event
    results = state.subagent_result_events
    results = () if results is UNSET else results
    try:
        for ev in (state.output_events if te is None else (te, *state.output_events)) + results:
            if memoryview(ev.attributes)[0] != 123 or ev.delegate is not None or (
                    ev.type is None and ev.event_class is None):
                break
        else:
            return None
    except IndexError:
        pass
    if te is not None and (problem := _event_problem(te)) is not None:
        return f"taskEvent.{problem}"
    for name, events in (("outputEvents", state.output_events), ("subagentResultEvents", results)):
        for i, ev in enumerate(events):
            if (problem := _event_problem(ev)) is not None:
                return f"{name}[{i}].{problem}"
    return None


def _require_known_field(data: bytes) -> None:
    obj = msgspec.json.decode(data)
    if isinstance(obj, dict) and not any(k in _STATE_KEYS for k in obj):
        raise ValueFormatError("not an ActionState (no known field)")


def decode_action_state(data: bytes) -> ActionState:
    """Decode one record value of any format V0–V3+, whatever the property order.

    Unknown properties are kept in ``.extra``; unknown ``@class`` values decode as generic events.
    Raises :class:`ValueFormatError` naming the field when the bytes are not an ActionState (no known
    property, or a property of the wrong JSON type: e.g. ``taskEvent.attributes must be an object, got int``).

    For example::

        state = ai.codec.decode_action_state(b'{"taskEvent": null, "completed": true}')
        state.completed, ai.codec.detect_value_format(state)
    """
    state = None
    try:
        try:
            state = _DECODER.decode(data)
        except msgspec.ValidationError as first:
            if "unknown field" not in str(first):
                raise
        else:
            if state.task_event is None:  # rare: `{}` decodes to all defaults, so look for a known property
                _require_known_field(data)
        if state is None:
            # Rare: properties this reader does not know. Move them under `extra`, then decode typed.
            obj = msgspec.json.decode(data)
            _clean(obj)
            if isinstance(obj, dict) and set(obj) <= {_EXTRA}:
                raise ValueFormatError("not an ActionState (no known field)")
            state = _DECODER.decode(msgspec.json.encode(obj))
        if not data.isascii():  # msgspec leaves raw parts (attributes, memory values) unchecked; Jackson would not
            bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        raise ValueFormatError("value has a string that is not valid UTF-8") from None
    except RecursionError:
        raise ValueFormatError("value is nested too deeply to be an ActionState") from None
    except msgspec.ValidationError as exc:
        raise ValueFormatError(_explain(exc)) from None
    except msgspec.DecodeError as exc:
        if "UTF-8" in str(exc):  # msgspec >= 0.23 reports bad UTF-8 as a DecodeError
            raise ValueFormatError("value has a string that is not valid UTF-8") from None
        if not has_lone_surrogate(bytes(data)):
            raise ValueFormatError(f"value is not valid JSON: {exc}") from None
        try:   # an escaped lone surrogate: the stdlib reads it, keeping the string as Python holds it
            obj = lone_surrogate_json(bytes(data))
            _clean(obj, raw=True)
            if set(obj) <= {_EXTRA}:
                raise ValueFormatError("not an ActionState (no known field)")
            state = msgspec.convert(obj, ActionState)
        except msgspec.ValidationError as again:
            raise ValueFormatError(_explain(again)) from None
        except UnicodeDecodeError:
            raise ValueFormatError("value has a string that is not valid UTF-8") from None
        except ValueError as again:
            raise ValueFormatError(f"value is not valid JSON: {again}") from None
    problem = state_problem(state)
    if problem is not None:
        raise ValueFormatError(problem)
    return state


def unpickle_payload(b64: str, *, i_trust_this_payload: bool = False) -> Any:
    """Unpickle a Python durable-call payload. Runs arbitrary code: only for payloads you trust.

    For example::

        try:
            ai.codec.unpickle_payload("gASVBQAAAAAAAACMAWGULg==")    # refused: unpickling runs code
        except ai.ValueFormatError as refused:
            print(refused)                             # pass i_trust_this_payload=True only for your own
    """
    if i_trust_this_payload is not True:
        raise ValueFormatError(
            "unpickling runs arbitrary code; pass i_trust_this_payload=True only for payloads you trust")
    import pickle

    try:
        import cloudpickle  # noqa: F401  (registers reducers some payloads need)
    except ImportError:
        pass
    return pickle.loads(base64.b64decode(b64))
