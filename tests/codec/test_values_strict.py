"""Strict value decoding: Kryo envelopes, wrongly typed ActionState fields, valid JSON out (spec §2.2, §5)."""

from __future__ import annotations

import json

import pytest

from agent_inspect import ValueFormatError

from agent_inspect.codec import GENERIC_EVENT, decode_action_state, detect_value_format

TASK = {"@class": GENERIC_EVENT, "id": "00000000-0000-4000-8000-000000000001", "type": "_input_event",
        "attributes": {"input": "a"}}


def with_memory(value: object) -> bytes:
    return json.dumps({"taskEvent": TASK, "shortTermMemoryUpdates": [{"path": "a", "value": value}],
                       "completed": True}).encode()


# --- 1. the Kryo envelope (§5.4) ------------------------------------------------------------

def test_envelope_of_version_1_is_supported():
    mu = decode_action_state(with_memory({"serde": "kryo", "version": 1, "payload": "AA=="})) \
        .short_term_memory_updates[0]
    assert (mu.envelope.version, mu.envelope.supported, mu.envelope.payload_size) == (1, True, 1)


@pytest.mark.parametrize("version", [0, 2, 99])
def test_envelope_of_another_version_decodes_but_is_unsupported(version):
    state = decode_action_state(with_memory({"serde": "kryo", "version": version, "payload": "AA=="}))
    env = state.short_term_memory_updates[0].envelope
    assert (env.version, env.supported) == (version, False)
    assert detect_value_format(state)[0] in ("V2b", "V3")  # still an envelope-era record


@pytest.mark.parametrize("value", [
    {"serde": "x"},
    {"serde": "x", "version": 1, "payload": "AA=="},
    {"serde": "kryo"},
    {"serde": "kryo", "version": 1},
    {"serde": "kryo", "payload": "AA=="},
    {"serde": "kryo", "version": "1", "payload": "AA=="},
    {"serde": "kryo", "version": 1, "payload": 5},
])
def test_an_object_that_is_not_a_whole_envelope_is_a_plain_json_value(value):
    state = decode_action_state(with_memory(value))
    mu = state.short_term_memory_updates[0]
    assert mu.envelope is None
    assert mu.json_value() == value
    assert detect_value_format(state) == ("V2a", False)  # raw JSON memory values pin the 0.3.0 format


# --- 2. what is an ActionState, and wrongly typed fields (§5.2–§5.5) ----------------------------

def state(**fields: object) -> bytes:
    return json.dumps({"taskEvent": TASK, **fields}).encode()


def task(**fields: object) -> bytes:
    return json.dumps({"taskEvent": {**TASK, **fields}}).encode()


def event(**fields: object) -> dict:
    return {**TASK, **fields}


@pytest.mark.parametrize(("data", "reason"), [
    (b"{}", "not an ActionState (no known field)"),
    (b'{"foo":1,"bar":{"taskEvent":1}}', "not an ActionState (no known field)"),
    (b"[1,2]", "not an ActionState (a JSON array, not an object)"),
    (b"42", "not an ActionState (a JSON int, not an object)"),
    (task(attributes=42), "taskEvent.attributes must be an object, got int"),
    (task(attributes="s"), "taskEvent.attributes must be an object, got str"),
    (task(attributes=[1]), "taskEvent.attributes must be an object, got array"),
    (task(attributes=[]), "taskEvent.attributes must be an object, got array"),
    (task(attributes=1.5), "taskEvent.attributes must be an object, got float"),
    (task(attributes=-3e2), "taskEvent.attributes must be an object, got float"),
    (task(attributes=True), "taskEvent.attributes must be an object, got bool"),
    (task(attributes=None), "taskEvent.attributes must be an object, got null"),
    (task(delegate=event(attributes=7)), "taskEvent.delegate.attributes must be an object, got int"),
    (state(outputEvents=[event(), event(attributes=[{"x": 1}])]),
     "outputEvents[1].attributes must be an object, got array"),
    (b'{"taskEvent":{}}', "taskEvent.id is missing"),
    (b'{"taskEvent":{"a":[]}}', "taskEvent.id is missing"),
    (task(id=None), "taskEvent.id must be a string, got null"),
    (task(id=5), "taskEvent.id must be a string, got int"),
    (json.dumps({"taskEvent": {"id": "i", "attributes": {}}}).encode(),
     "taskEvent.type is missing (events need a type, legacy events an @class)"),
    (state(outputEvents=[{"x": 1}]), "outputEvents[0].id is missing"),
    (state(outputEvents=[{"id": "i", "attributes": {}}]),
     "outputEvents[0].type is missing (events need a type, legacy events an @class)"),
    (state(callResults=[{"x": 1}]), "callResults[0].functionId is missing"),
    (state(callResults=[{"functionId": "f", "status": "s"}]),
     "callResults[0].status must be one of PENDING, SUCCEEDED, FAILED, got 's'"),
    (state(callResults=[{"functionId": "f", "status": 5}]), "callResults[0].status must be one of PENDING, "
                                                            "SUCCEEDED, FAILED or null, got int"),
    (state(callResults=[{"functionId": 1}]), "callResults[0].functionId must be a string, got int"),
    (state(shortTermMemoryUpdates=[{"value": 1}]), "shortTermMemoryUpdates[0].path is missing"),
    (state(sensoryMemoryUpdates=[{"path": None, "value": 1}]),
     "sensoryMemoryUpdates[0].path must be a string, got null"),
    (state(outputEvents={}), "outputEvents must be an array, got object"),
    (state(completed="yes"), "completed must be a bool, got str"),
    (b'{"taskEvent":1}', "taskEvent must be an object or null, got int"),
    (b'{"completed":true,"zz":1,"callResults":[{"status":5}]}', "callResults[0].status must be one of"),
])
def test_wrongly_typed_values_name_the_field(data, reason):
    with pytest.raises(ValueFormatError) as info:
        decode_action_state(data)
    assert str(info.value).startswith(reason)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("data", [
    b'{"taskEvent":null}',
    b'{"completed":false}',
    state(callResults=[{"functionId": "f"}, {"functionId": "g", "status": None, "argsDigest": "d"}]),
    state(callResults=[{"functionId": "f", "status": s} for s in ("PENDING", "SUCCEEDED", "FAILED")]),
    json.dumps({"taskEvent": {"@class": "org.apache.flink.agents.api.InputEvent", "id": "i",
                              "attributes": {}, "sourceTimestamp": 1}, "completed": True}).encode(),  # V1
    json.dumps({"taskEvent": {"@class": "x.Y", "id": "i", "attributes": {}}, "memoryUpdates": []}).encode(),  # V0
    task(attributes={}, futureField=[1]),
    state(futureTop=1, outputEvents=[event(extraThing=None)]),
    state(shortTermMemoryUpdates=[{"path": "p", "value": v, "other": 1} for v in (1, "s", [1], {}, None)]),
])
def test_valid_and_unusual_values_still_decode(data):
    decode_action_state(data)
