"""The executor's view of one ActionState value, and its conversion to and from the codec structs."""

from __future__ import annotations

import base64
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from agent_inspect._bulk import once_per_log, quick_init
from agent_inspect._errors import ReplayError
from agent_inspect.agents import SUBAGENT_EVENT, AgentEvent
from agent_inspect.codec import GENERIC_EVENT, ActionState, CallResult, Event, MemoryUpdate, canonical_json, uuid3
from agent_inspect.history import subagent_result_events
from agent_inspect.recovery._calls import CallSlot
from agent_inspect.recovery._events import event_from_record
from agent_inspect.recovery._refresh import with_subagent_result_events

__all__ = ["RecordView", "OpaqueMemoryValue", "json_envelope_decoder", "recorded_views"]

_LEGACY_PLAIN_JSON = ("V0", "V1", "V2a")


@quick_init
@dataclass(frozen=True, slots=True)
class OpaqueMemoryValue:
    """A recorded memory value the toolkit cannot decode (a Kryo envelope, §5.4).

    For example::

        value = ai.executor.OpaqueMemoryValue("json", 1, '{"tier": "gold"}')
        ai.executor.json_envelope_decoder(value)           # {'tier': 'gold'}; a Kryo value stays opaque
    """

    serde: str
    version: int
    payload: str

    def __repr__(self) -> str:
        return f"OpaqueMemoryValue({self.serde}, {len(self.payload)} b64 chars)"


@quick_init
@dataclass(frozen=True, slots=True)
class RecordView:
    """One action state as the executor uses it: task event, memory updates, outputs, calls, completed.

    For example::

        state = log.value(int(log.records.index[log.records["completed"] == True][0]))   # noqa: E712
        view = ai.executor.RecordView.from_state(state)
        view.task_event, view.outputs, view.completed
    """

    task_event: AgentEvent | None
    short_term: tuple[tuple[str, Any], ...] = ()
    sensory: tuple[tuple[str, Any], ...] = ()
    outputs: tuple[AgentEvent, ...] = ()
    calls: tuple[CallSlot, ...] = ()
    completed: bool = False
    results: tuple[AgentEvent, ...] = ()      # a sub-agent child's subagentResultEvents (V4, addendum §1.1)

    @classmethod
    def from_state(cls, state: ActionState, *, memory_decoder: Callable[[OpaqueMemoryValue], Any] | None = None
                   ) -> RecordView:
        """From a decoded ``agent_inspect.codec.ActionState``; Kryo memory values stay :class:`OpaqueMemoryValue`
        unless ``memory_decoder`` decodes them (e.g. :func:`json_envelope_decoder` for this executor's journals)."""
        # most records have no sensory updates, calls or result events: skip building empty tuples
        sensory = tuple([_memory(u, memory_decoder) for u in state.sensory_memory_updates]) \
            if state.sensory_memory_updates else ()
        stm = tuple([_memory(u, memory_decoder) for u in state.short_term_memory_updates]) \
            if state.short_term_memory_updates else ()
        if not sensory and not stm:
            legacy = getattr(state, "memory_updates", None)
            if isinstance(legacy, tuple) and legacy:
                stm = tuple([_memory(u, memory_decoder) for u in legacy])   # V0: one list, applied as STM
        task, outputs, calls = state.task_event, state.output_events, state.call_results
        results = state.result_events if type(state) is ActionState else subagent_result_events(state)
        # in field order (binding seven keywords costs a third of the construction; one per record read)
        return cls(event_from_record(task) if task is not None else None, stm, sensory,
                   tuple([event_from_record(e) for e in outputs]) if outputs else (),
                   tuple([CallSlot.from_record(c) for c in calls]) if calls else (),
                   bool(state.completed),
                   tuple([event_from_record(e) for e in results]) if results else ())

    def to_state(self, *, value_format: str = "V3") -> ActionState:
        """The codec ``ActionState`` to encode with ``encode_action_state``."""
        state = ActionState(
            task_event=_to_event(self.task_event) if self.task_event is not None else None,
            sensory_memory_updates=tuple(_to_update(p, v, value_format) for p, v in self.sensory),
            short_term_memory_updates=tuple(_to_update(p, v, value_format) for p, v in self.short_term),
            output_events=tuple(_to_event(e) for e in self.outputs),
            call_results=tuple(
                CallResult(function_id=c.function_id, args_digest=c.args_digest,
                           result_payload=_b64(c.result_payload), exception_payload=_b64(c.exception_payload),
                           status=c.status)
                for c in self.calls),
            completed=self.completed,
        )
        if self.results:
            state = with_subagent_result_events(state, (_to_event(e) for e in self.results))
        return state


def recorded_views(log: Any) -> Callable[[int], RecordView]:
    """The :class:`RecordView` at a position (no memory decoder), kept per log, but made afresh on every read when
    its memory holds a mutable value (a body may change it in place)."""
    views = once_per_log(_VIEWS, log, dict)

    def view_at(pos: int) -> RecordView:
        view = views.get(pos)
        if view is None:
            state = log.value(pos)
            if state is None:
                raise ReplayError(f"no value for record {pos}; this is a bug, please report it")
            view = RecordView.from_state(state)
            if all(isinstance(v, _IMMUTABLE) for _, v in (*view.short_term, *view.sensory)):
                views[pos] = view
        return view

    return view_at


_IMMUTABLE = (str, int, float, bool, type(None), OpaqueMemoryValue)
_VIEWS: weakref.WeakKeyDictionary[Any, dict[int, RecordView]] = weakref.WeakKeyDictionary()


def _memory(update: Any, decoder: Callable[[OpaqueMemoryValue], Any] | None) -> tuple[str, Any]:
    env = update.envelope
    if env is not None:
        value = OpaqueMemoryValue(env.serde, env.version, env.payload)
        return update.path, (decoder(value) if decoder is not None else value)
    return update.path, update.json_value()


def json_envelope_decoder(value: OpaqueMemoryValue) -> Any:
    """Decode envelopes written by the executor's journal (payload = canonical JSON); others stay opaque.

    For example::

        ex = ai.ReplayExecutor(log, markers=markers, memory_decoder=ai.executor.json_envelope_decoder)
        ex.run(max_steps=40); ex.memory["user-0001"].short_term    # JSON envelopes decoded, Kryo ones opaque
    """
    try:
        return msgspec.json.decode(base64.b64decode(value.payload))
    except (ValueError, msgspec.DecodeError):
        return value


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _to_event(ev: AgentEvent) -> Any:
    delegate = None
    if ev.type == SUBAGENT_EVENT:
        a = ev.attributes
        # the delegate's own id is not part of any identity; derive it so re-encoding is deterministic
        delegate = Event.new(str(a.get("delegateType")), dict(a.get("delegateAttributes") or {}),
                             id=uuid3(f"delegate:{ev.id}".encode()))
    return Event.new(ev.type, _plain(ev.attributes), id=ev.id, event_class=ev.event_class or GENERIC_EVENT,
                     upstream_event_id=ev.upstream_event_id, upstream_action_name=ev.upstream_action,
                     delegate=delegate)


def _to_update(path: str, value: Any, value_format: str) -> Any:
    if isinstance(value, OpaqueMemoryValue):
        raw = msgspec.json.encode({"serde": value.serde, "version": value.version, "payload": value.payload})
        return MemoryUpdate(path, msgspec.Raw(raw))
    if value is None:
        return MemoryUpdate.new(path, None)
    if value_format in _LEGACY_PLAIN_JSON:
        return MemoryUpdate.new(path, _plain(value))
    # V2b+ needs a Kryo envelope, which only a JVM can produce: the payload here is the canonical JSON
    # of the value, so the record has the upstream shape and stays readable (see RecordView docs).
    return MemoryUpdate.new(path, kryo_payload=canonical_json(_plain(value)))


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
