"""V4 values, the lineage rule, K2-ordinal keys and runtime inference (issue #12 items 1, 2, 7)."""

from __future__ import annotations

import json

import pytest

import agent_inspect as ai
from agent_inspect import ValueFormatError
from agent_inspect.codec import (
    SUBAGENT_EVENT,
    ActionState,
    CallResult,
    Event,
    MemoryUpdate,
    decode_action_state,
    detect_value_format,
    encode_action_state,
    event_uuid,
    format_state_key,
    name_action_uuid,
    parse_state_key,
)
from agent_inspect.log import ActionStateLog, infer_runtime, resolve_runtime
from agent_inspect.recovery import predict
from agent_inspect.sources import RawBatch, SourceInfo

SOURCE = SourceInfo(kind="file", location="/tmp/v4.jsonl", topic="t", file_format="jsonl")
ACT = name_action_uuid("review")
FP = "A" * 43 + "="
DIGEST = "E7o9BwqaXQ7wLxweJnKSs2N4ilcHgVnTVUg5wKuAPhg="

# Addendum §1.4, compacted (a constructed V4 child record, as Jackson writes it).
EXAMPLE_V4 = (
    b'{"taskEvent":{"@class":"org.apache.flink.agents.runtime.subagent.InternalSubagentCallEvent",'
    b'"id":"a1b2c3d4-6666-4f00-8111-222233334444","attributes":{"targetScope":"reviewer",'
    b'"callId":"2def7c78-fd9b-3b6b-86fe-9cc1a5e10e0e-0-1","sessionId":"2def7c78-fd9b-3b6b-86fe-9cc1a5e10e0e-0",'
    b'"delegateType":"_input_event","delegateAttributes":{"input":"review this diff"}},'
    b'"delegate":{"@class":"org.apache.flink.agents.api.Event","id":"b2c3d4e5-7777-4a11-9222-333344445555",'
    b'"type":"_input_event","attributes":{"input":"review this diff"}},"type":"InternalSubagentCallEvent"},'
    b'"sensoryMemoryUpdates":[],"shortTermMemoryUpdates":[],"outputEvents":[],'
    b'"subagentResultEvents":[{"@class":"org.apache.flink.agents.api.OutputEvent",'
    b'"id":"d4e5f6a7-9999-4c33-8444-555566667777","attributes":{"output":"LGTM"},"type":"_output_event"}],'
    b'"callResults":[],"completed":true}')

TASK = Event.new("_input_event", {"input": "hi"}, id="00000000-0000-4000-8000-000000000001")


def _key(seq: int = 1, text: str = "k", fmt: str = "K1", **kw: object) -> bytes:
    return format_state_key(fmt, seq=seq, event_uuid=event_uuid({"input": "hi"}), action_uuid=ACT, key_text=text,
                            key_group=20, **kw).encode()  # type: ignore[arg-type]


def _log(rows: list[tuple[bytes | None, bytes | None]]) -> ActionStateLog:
    b = RawBatch()
    for i, (k, v) in enumerate(rows):
        b.append(0, i, 1_767_225_600_000 + i, k, v)
    return ActionStateLog.from_raw(b, SOURCE)


# --- item 1: V4 values -----------------------------------------------------------------------

def test_v4_example_decodes_and_encodes_byte_exact() -> None:
    state = decode_action_state(EXAMPLE_V4)
    assert detect_value_format(state) == ("V4", False)
    (result,) = state.result_events
    assert result.attrs() == {"output": "LGTM"} and result.upstream_event_id is None
    assert state.output_events == () and state.completed
    assert encode_action_state(state, value_format="V4") == EXAMPLE_V4


def test_v4_property_order_and_empty_list_is_written_and_detected() -> None:
    state = ActionState(task_event=TASK, subagent_result_events=())
    wire = encode_action_state(state, value_format="V4")
    assert list(json.loads(wire)) == ["taskEvent", "sensoryMemoryUpdates", "shortTermMemoryUpdates", "outputEvents",
                                      "subagentResultEvents", "callResults", "completed"]
    assert b'"subagentResultEvents":[]' in wire
    assert detect_value_format(decode_action_state(wire)) == ("V4", False)  # an initial record pins V4 too
    # unset is written as [] as well (the 0.4+ class always has the list)
    assert encode_action_state(ActionState(task_event=TASK), value_format="V4") == wire


def test_missing_property_reads_as_empty_and_is_not_v4() -> None:
    state = decode_action_state(encode_action_state(ActionState(task_event=TASK), value_format="V3"))
    assert state.result_events == ()
    assert detect_value_format(state)[0] != "V4"


def test_result_events_only_encode_as_v4() -> None:
    state = ActionState(task_event=TASK, subagent_result_events=(Event.new("_output_event", {"output": 1}),))
    with pytest.raises(ValueFormatError, match="V4"):
        encode_action_state(state, value_format="V3")


def test_unknown_properties_are_kept_in_extra() -> None:
    wire = EXAMPLE_V4[:-1] + b',"subagentError":{"message":"boom"}}'
    state = decode_action_state(wire)
    assert state.extra == {"subagentError": {"message": "boom"}}
    assert detect_value_format(state) == ("V4", False)
    inner = EXAMPLE_V4.replace(b'"attributes":{"output":"LGTM"}', b'"attributes":{"output":"LGTM"},"later":1')
    (result,) = decode_action_state(inner).result_events
    assert result.extra == {"later": 1}


@pytest.mark.parametrize(("value", "reason"), [
    (b'{"taskEvent":null,"outputEvents":[],"subagentResultEvents":{"a":1},"completed":true}',
     "subagentResultEvents must be an array, got object"),
    (b'{"taskEvent":null,"subagentResultEvents":[{"id":"x","type":"t","attributes":[1]}],"completed":true}',
     "subagentResultEvents[0].attributes must be an object, got array"),
    (b'{"taskEvent":null,"subagentResultEvents":[{"id":"x","attributes":{}}],"completed":true}',
     "subagentResultEvents[0].type is missing"),
    (b'{"taskEvent":null,"subagentResultEvents":[7],"completed":true}',
     "subagentResultEvents[0] must be an object, got int"),
])
def test_bad_v4_values_are_error_rows_with_their_reason(value: bytes, reason: str) -> None:
    with pytest.raises(ValueFormatError, match=reason.replace("[", r"\[").replace("]", r"\]")):
        decode_action_state(value)
    good = encode_action_state(ActionState(task_event=TASK, subagent_result_events=()), value_format="V4")
    task_value = value.replace(b'"taskEvent":null', b'"taskEvent":' + json.dumps(
        json.loads(good)["taskEvent"], separators=(",", ":")).encode())
    log = _log([(_key(1), good), (_key(2), value), (_key(3), task_value)])
    r = log.records
    assert r.loc[0, "error"] is None or r["error"].isna()[0]
    for pos in (1, 2):
        assert reason in r.loc[pos, "error"] and r.loc[pos, "error"].startswith("value: ")
    assert len(log.errors) == 2


def test_log_columns_of_v4_records() -> None:
    results = (Event.new("_output_event", {"output": "a"}, event_class="org.apache.flink.agents.api.OutputEvent",
                         id="00000000-0000-4000-8000-00000000000a"),
               Event.new("_output_event", {"output": "b"}, event_class="org.apache.flink.agents.api.OutputEvent",
                         id="00000000-0000-4000-8000-00000000000b"))
    initial = encode_action_state(ActionState(task_event=TASK, subagent_result_events=()), value_format="V4")
    pending = encode_action_state(ActionState(task_event=TASK, subagent_result_events=(), call_results=(
        CallResult("s#c", "", None, None, "PENDING"),)), value_format="V4")
    done = encode_action_state(ActionState(task_event=TASK, subagent_result_events=results, completed=True),
                               value_format="V4")
    log = _log([(_key(1), initial), (_key(1), pending), (_key(1), done), (_key(1), None)])
    r = log.records
    assert r["value_format"].tolist()[:3] == ["V4"] * 3 and not r["value_format_inferred"][:3].any()
    assert r["subagent_result_count"].tolist()[:3] == [0, 0, 2] and r["subagent_result_count"].isna()[3]
    assert r.loc[2, "subagent_result_event_ids"] == tuple(e.id for e in results)
    assert r.loc[0, "subagent_result_event_ids"] == () and r.loc[2, "output_event_count"] == 0
    assert str(r["subagent_result_count"].dtype) == "Int32"
    assert log.summary()["value_formats"] == {"V4": 3}
    assert log.errors.empty


def test_v4_sub_agent_example_in_a_log() -> None:
    key = format_state_key("K2", seq=7, event_uuid=event_uuid({"x": 1}), action_uuid=ACT, key_group=20,
                           key_digest=DIGEST, serializer_fingerprint=FP).encode()
    r = _log([(key, EXAMPLE_V4)]).records
    assert (r.loc[0, "value_format"], r.loc[0, "task_event_class"]) == ("V4", SUBAGENT_EVENT)
    assert (r.loc[0, "subagent_scope"], r.loc[0, "subagent_result_count"]) == ("reviewer", 1)


# --- item 2: the lineage rule ------------------------------------------------------------------

def _completed(*, lineage: bool, kryo: bool = True, fmt: str = "V3") -> bytes:
    out = Event.new("_output_event", {"output": "ok"}, upstream_event_id=TASK.id if lineage else None,
                    upstream_action_name="act" if lineage else None)
    mem = MemoryUpdate.new("a.b", kryo_payload=b"k") if kryo else MemoryUpdate.new("a.b", 1)
    return encode_action_state(ActionState(task_event=TASK, short_term_memory_updates=(mem,), output_events=(out,),
                                           completed=True), value_format=fmt)


def test_outputs_without_lineage_are_not_v3() -> None:
    no_lineage = decode_action_state(_completed(lineage=False))
    assert detect_value_format(no_lineage) == ("V2b", False)  # envelopes and no lineage: pinned V2b
    assert detect_value_format(decode_action_state(_completed(lineage=False, kryo=False, fmt="V2a")))[0] == "V2a"
    assert detect_value_format(decode_action_state(_completed(lineage=True))) == ("V3", False)
    no_memory = ActionState(task_event=TASK, output_events=(Event.new("_output_event", {"o": 1}),), completed=True)
    assert detect_value_format(no_memory) == ("V2b", True)  # V2a or V2b: the newest it fits, inferred


def test_lineage_rule_pins_the_key_and_is_counted_in_the_summary() -> None:
    initial = encode_action_state(ActionState(task_event=TASK), value_format="V3")
    log = _log([(_key(1), initial), (_key(1), _completed(lineage=False)),
                (_key(2, "j"), initial), (_key(2, "j"), _completed(lineage=True))])
    r = log.records
    assert r["value_format"].tolist() == ["V2b", "V2b", "V3", "V3"]
    assert r["value_format_inferred"].tolist() == [True, False, True, False]
    assert r["value_format_lineage_rule"].tolist() == [False, True, False, False]
    s = log.summary()
    assert s["value_formats_by_lineage_rule"] == 1
    assert s["runtime"]["name"] == "0.3" and "none of which carries lineage" in s["runtime"]["evidence"]


def test_positive_v3_plus_evidence_beats_the_lineage_rule() -> None:
    sub = Event.new("InternalSubagentCallEvent", {"targetScope": "s"}, event_class=SUBAGENT_EVENT,
                    delegate=Event.new("_input_event", {"input": 1}))
    state = ActionState(task_event=sub, output_events=(Event.new("_output_event", {"o": 1}),), completed=True)
    assert detect_value_format(decode_action_state(encode_action_state(state, value_format="V3+")))[0] == "V3+"


# --- item 1: K2-ordinal keys (#1084) ------------------------------------------------------------

def test_k2_key_with_an_ordinal_is_its_own_format() -> None:
    text = format_state_key("K2-ordinal", seq=7, event_uuid=event_uuid({"x": 1}), action_uuid=ACT, key_group=20,
                            key_digest=DIGEST, serializer_fingerprint=FP, key_ordinal=2)
    assert text.endswith(f"_{FP}_2_{DIGEST}")
    k = parse_state_key(text)
    assert (k.format, k.seq, k.key_group, k.key_digest, k.serializer_fingerprint, k.ordinal) == \
        ("K2-ordinal", 7, 20, DIGEST, FP, 2)
    with pytest.raises(ai.KeyFormatError, match="integer ordinal"):  # an extra segment that is not an integer
        parse_state_key(text.replace(f"_2_{DIGEST}", f"_x_{DIGEST}"))
    log = _log([(text.encode(), encode_action_state(ActionState(task_event=TASK), value_format="V4"))])
    assert log.records.loc[0, "key_format"] == "K2-ordinal" and log.errors.empty
    plain = format_state_key("K2", seq=7, event_uuid=event_uuid({"x": 1}), action_uuid=ACT, key_group=20,
                             key_digest=DIGEST, serializer_fingerprint=FP)
    assert (parse_state_key(plain).format, parse_state_key(plain).ordinal) == ("K2", None)


# --- item 7: which runtime wrote the log --------------------------------------------------------

def test_runtime_inference_and_evidence() -> None:
    v4 = _log([(_key(1), EXAMPLE_V4)])
    assert (v4.runtime().name, v4.runtime().inferred) == ("main", True)
    assert "subagentResultEvents" in v4.runtime().evidence
    lineage = _log([(_key(1), _completed(lineage=True))])
    assert infer_runtime(lineage).name == "0.4" and infer_runtime(lineage).evidence.startswith("the one record with output events carries lineage")
    assert infer_runtime(_log([(_key(1), _completed(lineage=False))])).name == "0.3"
    given = resolve_runtime("0.4", v4)
    assert (given.name, given.inferred, given.default_rule) == ("0.4", False, "original")
    with pytest.raises(ai.InspectError, match="unknown runtime"):
        resolve_runtime("0.5", v4)


def test_runtime_sets_the_default_rule_everywhere() -> None:
    initial = encode_action_state(ActionState(task_event=TASK), value_format="V3")
    log = _log([(_key(1), initial), (_key(1), _completed(lineage=True))])
    recon = ai.reconstruct(log)
    assert recon.rule.name.startswith("original") and recon.runtime.name == "0.4"
    assert recon.summary()["runtime"]["name"] == "0.4"
    assert ai.reconstruct(log, runtime="main").runtime.name == "main"
    assert ai.reconstruct(log, rule="fixed").rule.name == "fixed"  # the what-if stays one argument away
    pred = predict(log)
    assert pred.rule.startswith("original") and pred.runtime.name == "0.4"
    assert predict(recon).runtime is recon.runtime
    assert predict(log, runtime="0.3").runtime.name == "0.3"
    ex = ai.ReplayExecutor(log, runtime="0.3")
    assert ex.runtime.name == "0.3" and not ex.runtime.inferred
    assert ai.ReplayExecutor(log).runtime.name == "0.4"
