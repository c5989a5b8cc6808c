"""Strict value decoding: Kryo envelopes, wrongly typed ActionState fields, valid JSON out (spec §2.2, §5)."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    (state(callResults=[{"functionId": "f", "status": 5}]),
     "callResults[0].status must be one of PENDING, SUCCEEDED, FAILED or null, got int"),
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


# --- 3. a decoded value encodes to valid JSON ---------------------------------------------------

def test_msgspec_encoding_of_a_decoded_value_is_valid_json():
    decoded = decode_action_state(state(outputEvents=[event()]))  # no attachments, input, output, lineage
    wire = msgspec.json.encode(decoded)
    out = json.loads(wire)
    assert out["taskEvent"]["attributes"] == TASK["attributes"]
    assert "attachments" not in out["outputEvents"][0]
    assert decode_action_state(wire) == decoded


json_scalars = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False,
                                                                                     allow_infinity=False) \
    | st.text(max_size=5)
json_any = st.recursive(json_scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c,
                                                                                          max_size=3),
                        max_leaves=5)


def maybe(strategy: st.SearchStrategy, *, weight: int = 7) -> st.SearchStrategy:
    """Mostly the well-typed value, sometimes anything JSON (so both decodable and refused values come up)."""
    return st.integers(0, weight).flatmap(lambda i: json_any if i == 0 else strategy)


def objects(fields: dict[str, st.SearchStrategy], *, usual: tuple[str, ...] = ()) -> st.SearchStrategy:
    """JSON objects with any of ``fields``; the ``usual`` ones are there unless the object is a junk one."""
    junk = st.fixed_dictionaries({}, optional={**fields, "unknownProp": json_any})
    if not usual:
        return junk
    rest = {k: v for k, v in fields.items() if k not in usual}
    usual_objects = st.fixed_dictionaries({k: fields[k] for k in usual}, optional=rest)
    return st.integers(0, 4).flatmap(lambda i: junk if i == 0 else usual_objects)


wire_event = st.deferred(lambda: objects({
    "@class": maybe(st.sampled_from([GENERIC_EVENT, "org.apache.flink.agents.api.InputEvent",
                                     "org.apache.flink.agents.runtime.python.event.PythonEvent"])),
    "id": maybe(st.uuids().map(str)), "type": maybe(st.text(max_size=6)),
    "attributes": maybe(st.dictionaries(st.text(max_size=4), json_any, max_size=3)),
    "upstreamEventId": maybe(st.text(max_size=4)), "upstreamActionName": maybe(st.text(max_size=4)),
    "delegate": maybe(wire_event | st.none()), "attachments": json_any, "input": json_any, "output": json_any,
    "sourceTimestamp": maybe(st.integers(0, 2**40)), "event": maybe(st.text(max_size=4)),
    "eventType": maybe(st.text(max_size=4)), "eventString": maybe(st.text(max_size=4)),
    "eventJsonStr": maybe(st.text(max_size=4)),
}, usual=("@class", "id", "type")))
wire_memory = objects({"path": maybe(st.text(max_size=4)), "value": st.one_of(
    json_any, st.fixed_dictionaries({"serde": st.just("kryo"), "version": st.integers(0, 3),
                                     "payload": st.sampled_from(["", "AA==", "gAWV"])}))}, usual=("path",))
wire_call = objects({"functionId": maybe(st.text(max_size=4)), "argsDigest": maybe(st.text(max_size=4)),
                     "resultPayload": maybe(st.none() | st.text(max_size=4)),
                     "exceptionPayload": maybe(st.none() | st.text(max_size=4)),
                     "status": maybe(st.sampled_from(["PENDING", "SUCCEEDED", "FAILED", None]))},
                    usual=("functionId",))
def rarely(strategy: st.SearchStrategy) -> st.SearchStrategy:
    return maybe(strategy, weight=30)


wire_state = objects({
    "taskEvent": rarely(wire_event | st.none()), "sensoryMemoryUpdates": rarely(st.lists(wire_memory, max_size=2)),
    "shortTermMemoryUpdates": rarely(st.lists(wire_memory, max_size=2)),
    "memoryUpdates": rarely(st.lists(wire_memory, max_size=2)), "outputEvents": rarely(st.lists(wire_event, max_size=2)),
    "callResults": rarely(st.lists(wire_call, max_size=2)), "completed": rarely(st.booleans()),
})


@settings(deadline=None, max_examples=300)
@given(wire_state)
def test_every_decodable_value_encodes_to_json_that_decodes_again(obj):
    try:
        state = decode_action_state(json.dumps(obj).encode())
    except ValueFormatError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    wire = msgspec.json.encode(state)
    msgspec.json.decode(wire)
    assert decode_action_state(wire) == state

