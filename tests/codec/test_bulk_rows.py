"""The log builder's fast path gives every record the row of the reference path (codec.bulk._decode_row).

The fast path decodes into narrowed structs and leaves whatever they refuse, or whatever is rare, to the
reference; these tests feed both the same values, common and odd, alone and mixed into big batches.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_inspect.codec import GENERIC_EVENT, PYTHON_EVENT, SUBAGENT_EVENT
from agent_inspect.codec.bulk import ROW_COLUMNS, _decode_row, release_shared_strings, value_columns
from agent_inspect.sources import read_file

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"
ENVELOPE = {"serde": "kryo", "version": 1, "payload": "AA=="}


def reference(values: list[bytes | None]) -> list[list[Any]]:
    rows = [_decode_row(v) for v in values]
    return [list(col) for col in zip(*rows)] if rows else [[] for _ in ROW_COLUMNS]


def same_rows(values: list[bytes | None]) -> None:
    try:
        fast = value_columns(values)
        ref = reference(values)
    finally:
        release_shared_strings()
    assert len(fast) == len(ref) == len(ROW_COLUMNS)
    for name, got, want in zip(ROW_COLUMNS, fast, ref):
        got = list(got)
        if got != want or [type(v) for v in got] != [type(v) for v in want]:
            bad = next(i for i, (a, b) in enumerate(zip(got, want)) if a != b or type(a) is not type(b))
            raise AssertionError(f"{name} of {values[bad]!r}: {got[bad]!r} != {want[bad]!r}")


def event(**fields: Any) -> dict[str, Any]:
    return {"@class": GENERIC_EVENT, "id": "e-1", "type": "_input_event", "attributes": {"input": "a"}, **fields}


def state(**fields: Any) -> dict[str, Any]:
    return {"taskEvent": event(), "sensoryMemoryUpdates": [], "shortTermMemoryUpdates": [], "outputEvents": [],
            "callResults": [], "completed": False, **fields}


def encode(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


ODD = [
    None,  # a tombstone
    b"", b"not json", b"[]", b"{}", b'{"completed":true}', b"null",
    encode(state(taskEvent=event(attributes=3))),
    encode(state(taskEvent=event(attributes=[1]))),
    encode(state(taskEvent={"@class": GENERIC_EVENT, "id": "x", "attributes": {}})),  # no type: legacy
    encode(state(taskEvent={"id": "x", "attributes": {}})),  # neither type nor class
    encode(state(taskEvent=event(**{"@class": PYTHON_EVENT}))),
    encode(state(taskEvent=event(**{"@class": SUBAGENT_EVENT}))),
    encode(state(taskEvent=event(type="InternalSubagentCallEvent", attributes={"callId": "c"}))),
    encode(state(taskEvent=event(sourceTimestamp=5))),
    encode(state(taskEvent=event(sourceTimestamp=None))),
    encode(state(taskEvent=event(delegate=event(id="d")))),
    encode(state(taskEvent=event(delegate=None))),
    encode(state(taskEvent=event(attachments=[]))),
    encode(state(taskEvent=event(eventType="x.InputEvent"))),
    encode(state(taskEvent=event(upstream_event_id="u"))),  # the Python SDK's spelling
    encode(state(taskEvent=event(upstreamEventId="u", upstreamActionName="a"))),
    encode(state(taskEvent=event(unknown=1))),
    encode(state(extra=1)),
    encode(state(**{"~agent_inspect.extra": {"a": 1}})),
    encode(state(memoryUpdates=[])),
    encode(state(memoryUpdates=[{"path": "a", "value": 1}])),
    encode(state(subagentResultEvents=[])),
    encode(state(subagentResultEvents=[event(id="r")])),
    encode(state(subagentResultEvents=[event(id="r", delegate=event(id="d"))])),
    encode(state(outputEvents=[event(id="o", type="x")])),
    encode(state(outputEvents=[event(id="o", type="x", upstreamEventId="e-1")])),
    encode(state(outputEvents=[event(id="o", type="x"), event(id="p", type="y", upstreamActionName="a")])),
    encode(state(outputEvents=[event(id="o", **{"@class": PYTHON_EVENT})])),
    encode(state(outputEvents=[event(id="o", **{"@class": SUBAGENT_EVENT})])),
    encode(state(outputEvents=[event(id="o", attributes="s")])),
    encode(state(outputEvents=[{"id": "o", "attributes": {}}])),
    encode(state(callResults=[{"functionId": "f", "status": "PENDING"}, {"functionId": "g", "status": "FAILED"},
                              {"functionId": "h", "status": "SUCCEEDED"}])),
    encode(state(callResults=[{"functionId": "f"}, {"functionId": "g", "exceptionPayload": "x"}])),
    encode(state(callResults=[{"functionId": "f", "status": "OTHER"}])),
    encode(state(callResults=[{"functionId": "f", "status": None}])),
    encode(state(shortTermMemoryUpdates=[{"path": "a", "value": ENVELOPE}, {"path": "b", "value": None},
                                         {"path": "c"}])),
    encode(state(sensoryMemoryUpdates=[{"path": "a", "value": ENVELOPE}])),
    encode(state(shortTermMemoryUpdates=[{"path": "a", "value": {**ENVELOPE, "version": 2}}])),
    encode(state(shortTermMemoryUpdates=[{"path": "a", "value": {"payload": "AA==", "serde": "kryo",
                                                                  "version": 1}}])),
    encode(state(shortTermMemoryUpdates=[{"path": "a", "value": {"plain": "json"}}])),
    encode(state(shortTermMemoryUpdates=[{"path": "a", "value": "text"}])),
    encode(state(shortTermMemoryUpdates=[{"path": "a", "value": {**ENVELOPE, "extra": 1}}])),
    b'{"taskEvent":{"@class":"org.apache.flink.agents.api.Event","id":"e","type":"t","attributes":{}},'
    b'"shortTermMemoryUpdates":[{"path":"a","value":{"ser\\u0064e":"kryo","version":1,"payload":"AA=="}}]}',
    *(b'{"taskEvent":{"@class":"org.apache.flink.agents.api.Event","id":"e","type":"t","attributes":{}},'
      b'"shortTermMemoryUpdates":[{"path":"a","value":' + envelope + b'}]}' for envelope in (
          b'{ "serde" : "kryo" , "version" : 1 , "payload" : "AA==" }',  # spaced: still an envelope
          b'{"serde":"kryo","version":1.0,"payload":"AA=="}', b'{"serde":"kryo","version":true,"payload":"AA=="}',
          b'{"serde":"kryo","version":2,"version":1,"payload":"AA=="}',  # the last member wins
          b'{"serde":"kryo","version":1,"version":2,"payload":"AA=="}',
          b'{"serde":"kr\\u0079o","version":1,"payload":"AA=="}', b'{"serde":"kryo","version":1,"p\\u0061yload":"A"}',
          b'{"serde":"kryo","version":1,"payload":"A\\"B"}', b'{"serde":"kryo","version":1,"payload":null}',
          b'{"serde":"kryo","version":1}', b'{"serde":"kryo","version":1,"payload":"AA==","payload":"AA=="}')),
    encode(state(taskEvent=event(attributes={"a": "\u00e9\n"}),  # json.dumps writes \u00e9: an escape elsewhere
                 shortTermMemoryUpdates=[{"path": "a", "value": ENVELOPE}])),
    b'{"taskEvent":{"id":"e","type":"t","attributes":{"a":"\xff"}}}',  # not UTF-8
    b'{"taskEvent":{"id":"e","type":"t","attributes":{"a":1}}} trailing',
    b'{"taskEvent":{"id":"e","type":"t","attributes":{"a":1}},"completed":"yes"}',
    b'{"taskEvent":{"id":"e","type":"t","attributes":' + b"[" * 5000 + b"]" * 5000 + b"}}",
]

COMMON = encode(state(
    taskEvent=event(id="root"),
    outputEvents=[event(id="o", type="tool_request", upstreamEventId="root", upstreamActionName="plan")],
    shortTermMemoryUpdates=[{"path": "plan.last", "value": ENVELOPE}, {"path": "plan.cleared", "value": None}],
    callResults=[{"functionId": "tools.a", "argsDigest": "d", "resultPayload": "gAR9lC4=", "exceptionPayload": None,
                  "status": "SUCCEEDED"}],
    completed=True))


def test_odd_values_alone():
    for value in ODD:
        same_rows([value])


def test_odd_values_among_common_ones_in_a_batch_of_several_chunks():
    values: list[bytes | None] = []
    for i in range(1500):
        values.append(COMMON)
        if i % 7 == 0:
            values.append(ODD[i % len(ODD)])
    same_rows(values)


def test_a_batch_of_mostly_refused_values():
    legacy = encode(state(callResults=[{"functionId": "f"}]))
    same_rows([legacy] * 1200 + [COMMON] * 300 + [None] * 10)


def test_every_sample_log():
    for path in sorted(SAMPLES.glob("*.jsonl")):
        if ".kcat." not in path.name:
            same_rows(read_file(path).batch.value)


def _json_values() -> st.SearchStrategy[Any]:
    return st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
                        lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner,
                                                                                    max_size=2), max_leaves=4)


_EVENT_FIELDS = {"@class": st.sampled_from([GENERIC_EVENT, PYTHON_EVENT, SUBAGENT_EVENT, None, 1]),
                 "id": st.sampled_from(["a", None]), "type": st.sampled_from(["t", None, 2]),
                 "attributes": st.sampled_from([{}, {"a": 1}, [], "x", None]),
                 "upstreamEventId": st.sampled_from(["u", None]), "upstreamActionName": st.sampled_from(["p", None]),
                 "sourceTimestamp": st.sampled_from([1, None]), "attachments": st.sampled_from([[], None]),
                 "eventType": st.sampled_from(["x.OutputEvent", None]), "other": _json_values()}


def _events() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=_EVENT_FIELDS)


_STATE_FIELDS = {
    "outputEvents": st.lists(_events(), max_size=2),
    "subagentResultEvents": st.lists(_events(), max_size=1),
    "callResults": st.lists(st.fixed_dictionaries({"functionId": st.just("f")}, optional={
        "status": st.sampled_from(["PENDING", "SUCCEEDED", "FAILED", "X", None]),
        "exceptionPayload": st.sampled_from(["e", None]), "argsDigest": st.sampled_from(["d", 1])}), max_size=2),
    "shortTermMemoryUpdates": st.lists(st.fixed_dictionaries({"path": st.just("a")}, optional={
        "value": st.sampled_from([ENVELOPE, {**ENVELOPE, "version": 3}, None, {"x": 1}, "s"])}), max_size=2),
    "sensoryMemoryUpdates": st.lists(st.fixed_dictionaries({"path": st.just("s"), "value": st.just(ENVELOPE)}),
                                     max_size=1),
    "memoryUpdates": st.lists(st.fixed_dictionaries({"path": st.just("m")}), max_size=1),
    "completed": st.sampled_from([True, False, None]),
    "unknown": _json_values(),
}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.fixed_dictionaries({"taskEvent": _events() | st.none()}, optional=_STATE_FIELDS), min_size=1,
                max_size=4))
def test_generated_values(states):
    same_rows([encode(s) for s in states])


_MEMORY_VALUES = [b'{"serde":"kryo","version":1,"payload":"AA=="}', b'{"serde":"kryo","version":1,"payload":""}',
                  b'{"serde":"kryo","version":1,"payload":"A\\"B"}', b'{"serde":"kryo","version":1,"payload":"AA=="} ',
                  b'{"serde":"kryo","version":1,"payload":"AA==","x":"y"}', b'{"serde":"kryo","version":2,"payload":"A"}',
                  b'{"serde":"kryo","version":1,"payload":"{\\"serde\\":\\"kryo\\",\\"version\\":1,\\"payload\\":\\""}',
                  b'"{\\"serde\\":\\"kryo\\"}"', b"[]", b"1", b'"text"', b"{}", b"null"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_MEMORY_VALUES), min_size=1, max_size=6))
def test_memory_values_checked_at_once_as_one_by_one(values: list[bytes]) -> None:
    import msgspec

    from agent_inspect.codec.bulk import _ENVELOPE_PREFIX, _all_envelopes

    # as the decode hands them over: each a whole JSON value (so never a NUL, nor an open string)
    raws = [msgspec.json.decode(b'{"v":' + v + b"}", type=dict[str, msgspec.Raw])["v"] for v in values]
    one_by_one = all(v.startswith(_ENVELOPE_PREFIX) and v.count(b'"') == 10 for v in values)
    assert _all_envelopes(raws) == one_by_one


def test_the_utf8_check_of_a_chunk_takes_non_ascii_values_and_buffers_that_are_not_bytes():
    # each value is checked for ASCII on its own (bytes.isascii); a buffer of another type, valid UTF-8 beyond ASCII
    # and a bad byte send the chunk down the joined check, and every row is the reference's
    utf8 = encode(state(taskEvent=event(id="root"))).replace(b'"attributes":{', b'"attributes":{"n":"caf\xc3\xa9",', 1)
    bad = utf8.replace(b"caf\xc3\xa9", b"caf\xff", 1)
    buffers: list[Any] = [bytearray(COMMON), bytearray(utf8), bytearray(bad)]   # sources give bytes; a caller may not
    for odd in ([buffers[0]], [utf8], [utf8, bad], [buffers[1]], [buffers[2], COMMON]):
        same_rows([COMMON] * 300 + odd + [COMMON] * 300)
