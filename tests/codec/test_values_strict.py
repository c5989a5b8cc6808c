"""Strict value decoding: Kryo envelopes, wrongly typed ActionState fields, valid JSON out (spec §2.2, §5)."""

from __future__ import annotations

import json

import pytest

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
