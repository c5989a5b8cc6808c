"""Event helpers of the engine: deterministic ids, record → event, sub-agent wrapping (§11.1)."""

from __future__ import annotations

import functools
import random
import uuid
from collections.abc import Mapping
from typing import Any

import msgspec
from msgspec import Raw

from agent_inspect.agents import SUBAGENT_EVENT, AgentEvent
from agent_inspect.codec import Event as CodecEvent
from agent_inspect.codec import event_uuid

__all__ = ["IdSource", "event_from_record", "agent_event", "fingerprint_of_raw", "first_field", "wrap_subagent",
           "SUBAGENT_EVENT_CLASS", "OUTPUT_EVENT_CLASS"]

SUBAGENT_EVENT_CLASS = "org.apache.flink.agents.runtime.subagent.InternalSubagentCallEvent"
"""The Java ``@class`` of the wrapper event that carries a sub-agent call."""
OUTPUT_EVENT_CLASS = "org.apache.flink.agents.api.OutputEvent"
"""The class a sub-agent result event is stored with, Python children too (addendum §1.1 [I])."""


class IdSource:
    """Deterministic random v4 UUIDs, so a re-execution (``back()``) regenerates identical ids.

    For example::

        ids = ai.recovery.engine.IdSource(7)
        first = ids.new()
        ai.recovery.engine.IdSource(7).new() == first   # True: a re-execution (a new source) regenerates the ids
    """

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def new(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))


def event_from_record(event: Any) -> AgentEvent:
    """An :class:`AgentEvent` from a decoded codec event (or a dict in the upstream JSON shape).

    For example::

        ai.recovery.engine.event_from_record(log.value(0).task_event)   # the engine's AgentEvent of a record
    """
    if isinstance(event, AgentEvent):
        return event
    if type(event) is CodecEvent and event.type is not None:   # the common case: fingerprint once per bytes
        return agent_event(event)
    attrs = first_field(event, "attributes")
    if attrs is None:
        attrs = {}
    elif not isinstance(attrs, Mapping):
        attrs = msgspec.json.decode(bytes(attrs) if isinstance(attrs, Raw) else attrs)
    return AgentEvent(
        type=str(first_field(event, "type", "event_type") or ""),
        attributes=attrs,
        id=first_field(event, "id"),
        event_class=first_field(event, "event_class", "class_", "cls", "@class"),
        upstream_event_id=first_field(event, "upstream_event_id", "upstreamEventId"),
        upstream_action=first_field(event, "upstream_action_name", "upstream_action", "upstreamActionName"),
    )


def first_field(obj: Any, *names: str) -> Any:
    """The first of ``names`` that ``obj`` (a mapping, or an object with attributes) holds as not None."""
    get = obj.get if isinstance(obj, Mapping) else (lambda n, d=None: getattr(obj, n, d))
    for n in names:
        v = get(n, None)
        if v is not None:
            return v
    return None


def wrap_subagent(scope: str, session_id: str, call_id: str, event_type: str,
                  attributes: Mapping[str, Any], *, event_id: str, upstream_event_id: str | None,
                  upstream_action: str | None) -> AgentEvent:
    """An ``InternalSubagentCallEvent`` carrying the routing metadata in its attributes (§11.1).

    For example::

        event = ai.recovery.engine.wrap_subagent("search", "s-0", "s-0-1", "_input_event", {"query": "order 7"},
                                                 event_id="e-1", upstream_event_id=None, upstream_action="plan")
        event.type, event.scope
    """
    attrs = {"targetScope": scope, "callId": call_id, "sessionId": session_id,
             "delegateType": event_type, "delegateAttributes": dict(attributes)}
    return AgentEvent.of(SUBAGENT_EVENT, attrs, event_id, SUBAGENT_EVENT_CLASS, upstream_event_id, upstream_action)


def agent_event(ev: Any) -> AgentEvent:
    """An :class:`AgentEvent` from a decoded record event (``agent_inspect.codec.Event``). Its fingerprint is read
    from the record's attribute bytes, once per distinct bytes (a record's events are replayed again under every
    rule and by every reuse).

    For example::

        state = log.value(0)                          # a decoded record (ai.codec.ActionState)
        ai.recovery.agent_event(state.task_event)     # its task's event, as the engine replays it
    """
    raw = getattr(ev, "attributes", None)
    if type(raw) is Raw and type(ev) is CodecEvent:
        data = bytes(raw)
        if data[:1] == b"{":   # a stored map (valid JSON, as decoded): its fingerprint now, its attributes when read
            return AgentEvent.stored(str(ev.type), ev.attrs, ev.id, ev.event_class, ev.upstream_event_id,
                                     ev.upstream_action_name, fingerprint_of_raw(data))
    attrs = ev.attrs() if hasattr(ev, "attrs") else dict(ev.attributes)
    if not isinstance(attrs, dict):   # not a map: no attributes, and no fingerprint of them
        attrs, raw = {}, None
    fingerprint = fingerprint_of_raw(bytes(raw)) if isinstance(raw, bytes | Raw) else None
    return AgentEvent.of(str(ev.type), attrs, ev.id, ev.event_class, ev.upstream_event_id, ev.upstream_action_name,
                         fingerprint=fingerprint)


@functools.lru_cache(maxsize=1 << 16)
def fingerprint_of_raw(raw: bytes) -> str:
    """The event UUID of an event's stored attribute bytes, computed once per distinct bytes."""
    return event_uuid(raw)
