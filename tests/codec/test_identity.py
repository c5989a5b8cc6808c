"""Identity recipes against every test vector of the spec (§4.3–4.6, §6.3, §11.2)."""

from __future__ import annotations

import hashlib
import json
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_inspect import KeyFormatError
from agent_inspect.codec import (
    canonical_json,
    event_uuid,
    java_double,
    java_long_hash,
    java_string_hash,
    kafka_partition,
    key_group,
    murmur_hash,
    name_action_uuid,
    python_action_hash,
    python_action_uuid,
    python_args_digest,
    python_function_id,
    string_key_digest,
    subagent_ids,
    subagent_namespace_digest,
    uuid3,
)
from agent_inspect.codec._json import jackson_json


@pytest.mark.parametrize(("attributes", "canonical", "expected"), [
    ({"input": "hello"}, b'{"input":"hello"}', "b6dc5e36-12ea-3bb2-8ca3-e0ea9865efcf"),
    ({"input": "A"}, b'{"input":"A"}', "ef422f05-799e-3801-8be4-9277a0a90861"),
    ({"input": "B"}, b'{"input":"B"}', "39c3fd5c-8b34-3e19-9731-11fcc92d838a"),
    ({}, b"{}", "99914b93-2bd3-3a50-b983-c5e7c90ae93b"),
    ({"topic": "flink"}, b'{"topic":"flink"}', "e10f8b76-90de-336a-8ce4-98d17691a2e6"),
    ({"input": {"user": "u-42", "city": "Paris"}}, b'{"input":{"city":"Paris","user":"u-42"}}',
     "24b74440-a198-338f-bfd2-c3ea7d9c329d"),
])
def test_event_uuid_vectors(attributes, canonical, expected):
    assert canonical_json(attributes) == canonical
    assert event_uuid(attributes) == expected
    assert event_uuid(json.dumps(attributes).encode()) == expected  # raw JSON in, same identity


def test_event_uuid_of_subagent_example_e():
    attrs = {
        "targetScope": "reviewer",
        "callId": "2def7c78-fd9b-3b6b-86fe-9cc1a5e10e0e-0-1",
        "sessionId": "2def7c78-fd9b-3b6b-86fe-9cc1a5e10e0e-0",
        "delegateType": "_input_event",
        "delegateAttributes": {"input": "review this diff"},
    }
    assert event_uuid(attrs) == "18345cf7-092b-3fe4-a44f-023ccdf2b7d9"


def test_uuid3_matches_python_uuid_module():
    assert uuid3(b"abc") == str(uuid.UUID(bytes=hashlib.md5(b"abc").digest(), version=3))
    assert uuid.UUID(uuid3(b"abc")).version == 3


@pytest.mark.parametrize(("value", "text"), [
    (100.0, "100.0"), (0.001, "0.001"), (9999999.0, "9999999.0"), (1e7, "1.0E7"),
    (12345678.0, "1.2345678E7"), (1e-5, "1.0E-5"), (1e21, "1.0E21"), (-0.0, "-0.0"), (0.0, "0.0"),
    (1.5, "1.5"), (-2.25, "-2.25"), (0.0001234, "1.234E-4"), (123456.789, "123456.789"),
    (5e-324, "4.9E-324"), (1.7976931348623157e308, "1.7976931348623157E308"),
])
def test_java_double_to_string(value, text):
    assert java_double(value) == text


def test_canonical_json_keeps_int_float_token_distinction():
    assert canonical_json(b'{"b":1.50,"a":1e2,"c":100,"d":-0.0}') == b'{"a":100.0,"b":1.5,"c":100,"d":-0.0}'
    big = b'{"n":123456789012345678901234567890}'
    assert canonical_json(big) == big


def test_canonical_json_rejects_bad_json_with_decode_error():
    from agent_inspect import DecodeError

    for bad in (b"{", b'{"a":"\xd9x"}', b"[" * 5000):
        with pytest.raises(DecodeError, match="not valid JSON"):
            canonical_json(bad)


def test_canonical_json_escapes_like_jackson():
    text = "q\"b\\s/\b\t\n\f\r\x01\x1f\x7f\u2028\u2029é"
    assert canonical_json({"k": text}) == (
        '{"k":"q\\"b\\\\s/\\b\\t\\n\\f\\r\\u0001\\u001F\x7f\u2028\u2029é"}'.encode())


_JSON_TEXT = st.text(st.characters(codec="utf-8") | st.sampled_from("\"\\/\b\t\n\f\r\x01\x1f\x7f\ue000\U0001F600é"),
                     max_size=8)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80) | _JSON_TEXT
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_JSON_TEXT, inner, max_size=4), max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(_JSON, st.booleans())
def test_canonical_json_of_bytes_is_the_jackson_writer_byte_for_byte(value, indent):
    # bytes take msgspec's sorted encoder where it is exact; the writer is the reference everywhere
    data = json.dumps(value, ensure_ascii=False, indent=1 if indent else None).encode()
    assert canonical_json(data) == canonical_json(json.loads(data))


def test_canonical_json_sorts_by_utf16_code_units():
    # U+1F600 is a surrogate pair (0xD83D…) and sorts before U+E000 in Java, after it in Python.
    obj = {"\ue000": 1, "\U0001F600": 2, "b": {"z": [], "a": {}}, "a": True, "c": None, "d": False}
    out = canonical_json(obj).decode()
    assert out == '{"a":true,"b":{"a":{},"z":[]},"c":null,"d":false,"\\uD83D\\uDE00":2,"\ue000":1}'


def test_event_uuid_of_characters_beyond_the_bmp_is_jacksons():
    # Written by Jackson 2.20.1 (flink-dist 2.3.0's shaded copy), JsonMapper with ORDER_MAP_ENTRIES_BY_KEYS and
    # SORT_PROPERTIES_ALPHABETICALLY, writeValueAsBytes as upstream's ActionStateUtil calls it: a character beyond
    # U+FFFF goes out as its two surrogates escaped in uppercase hex; other non-ASCII (é, U+E000, U+FFFF) raw.
    attributes = {"input": "hi \U0001F600 caf\u00e9 \ue000", "\U0001F600k": ["x\U0001F600"], "\uffffz": 1}
    jackson = ('{"input":"hi \\uD83D\\uDE00 caf\u00e9 \ue000","\\uD83D\\uDE00k":["x\\uD83D\\uDE00"],'
               '"\uffffz":1}').encode()
    assert canonical_json(attributes) == jackson
    assert canonical_json(json.dumps(attributes, ensure_ascii=False).encode()) == jackson
    assert event_uuid(attributes) == "d15a052f-8123-3023-98f3-e15e540a0f11"
    assert jackson_json({"m": "\U0001F600"}) == b'{"m":"\\uD83D\\uDE00"}'   # the value writer too


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children,
                                                                       max_size=4),
    max_leaves=12,
)


@settings(deadline=None, max_examples=150)
@given(json_values)
def test_canonical_json_parses_back_and_ignores_key_order(value):
    out = canonical_json(value)
    assert json.loads(out) == value
    if isinstance(value, dict):
        assert canonical_json(dict(reversed(list(value.items())))) == out
    assert canonical_json(out) == out  # idempotent on its own bytes


def test_java_string_hash_and_murmur_vectors():
    assert murmur_hash(0) == 593689054
    assert murmur_hash(2) == 1085422463
    rows = [("user-42", -147182656, 1600933524, 20, 20), ("hello", 99162322, 1715862179, 35, 35),
            ("tenant_user", 1889900096, 1692811779, 3, 3), ("42", 1662, 1173596941, 13, 13),
            ("", 0, 593689054, 30, 94)]
    for text, h, m, p64, p128 in rows:
        assert java_string_hash(text) == h
        assert murmur_hash(h) == m
        assert m % 64 == p64 and key_group(h, 128) == p128


def test_java_string_hash_uses_utf16_units():
    # "\U0001F600" is two UTF-16 units 0xD83D 0xDE00
    assert java_string_hash("\U0001F600") == 31 * 0xD83D + 0xDE00
    assert java_string_hash("é") == 0xE9


def test_key_group_examples():
    assert key_group(java_string_hash("user-42")) == 20
    assert key_group(java_long_hash(42)) == 29
    assert java_long_hash(-1) == 0 and java_long_hash(2**32) == 1


@pytest.mark.parametrize(("name", "module", "qualname", "triggers", "code", "expected"), [
    ("process_input", "my_agent", "MyAgent.process_input", ["_input_event"], 543860202,
     "cd464c8a-2428-3f02-b0ac-787c88c69ef6"),
    ("work_action", "my_agent", "MyAgent.work_action", ["WorkEvent"], -1796262995,
     "fc5efb8f-2ed5-3608-b615-126c2753e899"),
    ("chat_model_action", "flink_agents.plan.actions.chat_model_action",
     "process_chat_request_or_tool_response", ["_chat_request_event", "_tool_response_event"], 464939903,
     "5958efa8-a751-3866-a56d-cb322e7feb7d"),
    ("caller", "my_agent", "MyAgent.caller", ["_input_event"], 1468857728,
     "3a462f7f-608b-36ef-bf2f-00d4c95cc0c6"),
    ("review", "reviewer_agent", "ReviewerAgent.review", ["_input_event"], -1637974144,
     "f1e3095c-4432-36f3-9de3-9604b7ecc004"),
    ("ask_and_record", "my_agent", "MyAgent.ask_and_record", ["_input_event"], 1277115392,
     "b3717602-770e-3801-b0cd-db68b94dbd56"),
])
def test_python_action_uuid_vectors(name, module, qualname, triggers, code, expected):
    assert python_action_hash(name, module, qualname, triggers) == code
    assert python_action_uuid(name, module, qualname, triggers) == expected


@pytest.mark.parametrize(("name", "expected"), [
    ("process_input", "80908fa5-68c8-3df4-b9f1-b5765f3ee2c7"),
    ("chat_model_action", "ddc38674-3f69-3d37-aadd-277c3f1b4d54"),
    ("enrich", "9ca01d2f-4282-3bb5-9a8b-0bc0a03e10fa"),
])
def test_name_action_uuid_vectors(name, expected):
    assert name_action_uuid(name) == expected


def test_string_key_digest_vector():
    assert string_key_digest("user-42") == "E7o9BwqaXQ7wLxweJnKSs2N4ilcHgVnTVUg5wKuAPhg="


EV, ACT = "b6dc5e36-12ea-3bb2-8ca3-e0ea9865efcf", "cd464c8a-2428-3f02-b0ac-787c88c69ef6"
FP = "A" * 43 + "="
DIGEST = "E7o9BwqaXQ7wLxweJnKSs2N4ilcHgVnTVUg5wKuAPhg="


def test_kafka_partition_per_key_format():
    assert kafka_partition(f"user-42_7_{EV}_{ACT}", 64) == 20                    # Example A
    assert kafka_partition(f"tenant_user_7_{EV}_{ACT}", 64) == kafka_partition(f"tenant_1_{EV}_{ACT}", 64)
    assert kafka_partition(f"tenant_user_7_{EV}_{ACT}", 64) == murmur_hash(java_string_hash("tenant")) % 64
    assert kafka_partition(f"20_7_{EV}_{ACT}_tenant_user", 64) == 3                # K1.5: the key text
    digest_part = murmur_hash(java_string_hash(DIGEST)) % 64
    assert kafka_partition(f"v2:20_7_{EV}_{ACT}_{FP}_{DIGEST}", 64) == digest_part
    assert kafka_partition(f"20_7_{EV}_{ACT}_{DIGEST}", 64) == digest_part          # K1.6
    with pytest.raises(KeyFormatError, match="empty first segment"):
        kafka_partition(f"_7_{EV}_{ACT}", 64)


def test_subagent_ids_vector():
    digest = subagent_namespace_digest("user-42", 7, "caller", "_input_event", {"input": "hello"}, "reviewer")
    assert digest == "2def7c78-fd9b-3b6b-86fe-9cc1a5e10e0e"
    ids = subagent_ids(digest)
    assert ids.session_id == "2def7c78-fd9b-3b6b-86fe-9cc1a5e10e0e-0"
    assert ids.call_id == "2def7c78-fd9b-3b6b-86fe-9cc1a5e10e0e-0-1"
    assert ids.function_id == f"{ids.session_id}#{ids.call_id}"
    assert subagent_ids(digest, session=2, call=3).call_id == f"{digest}-2-3"
    # a null agentName is omitted, so it changes the digest
    assert subagent_namespace_digest("user-42", 7, "caller", "_input_event", {"input": "hello"}) != digest


def test_python_durable_call_identity():
    assert python_args_digest(("What is Flink?",)) == "2a7286cdad649b6b"          # spec §13.1, Example B
    assert python_args_digest(("u-42", "Flink is a stream processor."), {}) == "3ab26fa0936b6293"
    assert python_args_digest((), {"a": 1}) != python_args_digest((), {"a": 2})

    def inner() -> None:
        pass

    assert python_function_id(inner) == f"{__name__}.test_python_durable_call_identity.<locals>.inner"
    assert python_function_id(json.dumps) == "json.dumps"
    assert python_function_id(lambda: None).endswith(".test_python_durable_call_identity.<locals>.<lambda>")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_uuid3_is_java_name_uuid_from_bytes(data):
    # Java's UUID.nameUUIDFromBytes: the MD5 digest with version 3 and the RFC 4122 variant set
    assert uuid3(data) == str(uuid.UUID(bytes=hashlib.md5(data).digest(), version=3))
