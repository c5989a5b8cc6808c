"""Events read from stored records: attributes parsed on first read, the same event in every other way."""

from __future__ import annotations

import copy
import pickle

import agent_inspect as ai
from agent_inspect.agents import AgentEvent
from agent_inspect.codec import Event, event_uuid
from agent_inspect.recovery import agent_event


def _stored() -> Event:
    return Event.new("_input_event", {"input": "where is my order", "n": 12345678901234567890123}, id="evt-1")


def test_a_stored_event_parses_its_attributes_on_first_read_only():
    stored = _stored()
    event = agent_event(stored)
    assert "attributes" not in vars(event)                     # not parsed yet: a replay reads few of them
    assert event.fingerprint == event_uuid(bytes(stored.attributes))
    rebound = event.rebound("evt-0", "plan").with_id("evt-2")
    assert "attributes" not in vars(rebound) and rebound.fingerprint == event.fingerprint
    assert (rebound.id, rebound.upstream_event_id, rebound.upstream_action) == ("evt-2", "evt-0", "plan")
    assert event.attributes == stored.attrs()                  # parsed now, and kept
    assert vars(event)["attributes"] is event.attributes


def test_a_stored_event_equals_the_event_made_from_its_parsed_attributes():
    stored = _stored()
    eager = AgentEvent.of(str(stored.type), stored.attrs(), stored.id, stored.event_class)
    for event in (agent_event(stored), pickle.loads(pickle.dumps(agent_event(stored))),
                  copy.deepcopy(agent_event(stored))):
        assert event == eager and repr(event) == repr(eager)
        assert event.fingerprint == eager.fingerprint and event.is_root and event.routing_type == "_input_event"


def test_a_wrapper_event_still_routes_by_its_attributes():
    stored = Event.new(ai.agents.SUBAGENT_EVENT, {"targetScope": "search", "delegateType": "_input_event",
                                                   "delegateAttributes": {"q": 1}}, id="evt-3")
    event = agent_event(stored)
    assert (event.scope, event.routing_type) == ("search", "_input_event")
