"""ActionStateLog: the canonical record table built from raw batches (architecture §8.1, §8.3)."""

from __future__ import annotations

import json
import random

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agent_inspect as ai
from agent_inspect import ValueFormatError
from agent_inspect.codec import (
    SUBAGENT_EVENT,
    ActionState,
    CallResult,
    Event,
    MemoryUpdate,
    decode_action_state,
    encode_action_state,
    event_uuid,
    format_state_key,
    name_action_uuid,
)
from agent_inspect.log import COLUMNS, ActionStateLog
from agent_inspect.sources import RawBatch, SourceInfo

SOURCE = SourceInfo(kind="file", location="/tmp/test.jsonl", topic="t", file_format="jsonl")
ACT = name_action_uuid("act")
TS = 1767225600000


def key(text: str, seq: int, attrs: dict, fmt: str = "K1", action: str = ACT) -> bytes:
    return format_state_key(fmt, seq=seq, event_uuid=event_uuid(attrs), action_uuid=action, key_text=text,
                            key_group=20).encode()


def execution(text: str, seq: int, *, lineage: bool = True, kryo: bool = True) -> list[tuple[bytes, bytes]]:
    """The three writes of one action execution: initial, one durable call, completed."""
    attrs = {"input": f"{text}-{seq}"}
    task = Event.new("_input_event", attrs, id=f"00000000-0000-4000-8000-{seq:012d}")
    out = Event.new("_output_event", {"output": "ok"}, upstream_event_id=task.id if lineage else None,
                    upstream_action_name="act" if lineage else None)
    mem = MemoryUpdate.new("a.b", kryo_payload=b"k") if kryo else MemoryUpdate.new("a.b", 1)
    fmt = "V3" if lineage else ("V2b" if kryo else "V2a")
    states = [ActionState(task_event=task),
              ActionState(task_event=task, call_results=(CallResult("m.f", "d", "gAWV", None, "SUCCEEDED"),)),
              ActionState(task_event=task, short_term_memory_updates=(mem,), output_events=(out,), completed=True)]
    k = key(text, seq, attrs)
    return [(k, encode_action_state(s, value_format=fmt)) for s in states]


def batch(rows: list[tuple[int, int, bytes | None, bytes | None]], agent: bool = False) -> RawBatch:
    b = RawBatch(agent_key=[] if agent else None)
    for p, o, k, v in rows:
        b.append(p, o, TS + o, k, v, f"agent-{p}" if agent else None)
    return b


def simple_log() -> ActionStateLog:
    rows = []
    for p, text in ((1, "user-1"), (0, "user-0")):
        for o, (k, v) in enumerate(execution(text, 5) + execution(text, 6)):
            rows.append((p, o, k, v))
    random.Random(3).shuffle(rows)  # sources may hand records in any interleaving
    return ActionStateLog.from_raw([batch(rows[:5]), batch(rows[5:])], SOURCE)


def test_records_are_in_physical_order_with_position_index():
    log = simple_log()
    r = log.records
    assert list(r.columns) == list(COLUMNS)
    assert isinstance(r.index, pd.RangeIndex) and len(r) == 12
    assert r["partition"].tolist() == [0] * 6 + [1] * 6
    assert r["offset"].tolist() == list(range(6)) * 2
    # raw stays aligned with the rows: same positions, exact bytes
    for pos in range(len(r)):
        assert log.raw.key[pos].decode() == r["state_key"].iat[pos]
        assert log.raw.offset[pos] == r["offset"].iat[pos]
    assert log.source is SOURCE


def test_columns_have_proper_dtypes():
    r = simple_log().records
    assert str(r["timestamp"].dtype) == "datetime64[ms, UTC]"
    assert r["timestamp"].iat[0] == pd.Timestamp(TS, unit="ms", tz="UTC")
    for name in ("key_format", "business_key", "value_format", "task_event_type", "action_uuid"):
        assert isinstance(r[name].dtype, pd.CategoricalDtype), name
    assert str(r["seq"].dtype) == "Int64" and str(r["key_group"].dtype) == "Int32"
    assert str(r["completed"].dtype) == "boolean" and str(r["tombstone"].dtype) == "bool"
    assert str(r["output_event_count"].dtype) == "Int32"


def test_decoded_columns():
    r = simple_log().records
    first = r.iloc[:3]
    assert first["key_format"].tolist() == ["K1"] * 3 and first["business_key"].tolist() == ["user-0"] * 3
    assert first["seq"].tolist() == [5, 5, 5]
    assert first["completed"].tolist() == [False, False, True]
    assert first["is_root"].tolist() == [True] * 3
    assert first["call_count"].tolist() == [0, 1, 0] and first["calls_succeeded"].tolist() == [0, 1, 0]
    assert first["short_term_update_count"].tolist() == [0, 0, 1]
    assert first["output_event_types"].tolist() == [(), (), ("_output_event",)]
    assert first["output_event_count"].tolist() == [0, 0, 1]
    assert first["task_event_id"].tolist() == ["00000000-0000-4000-8000-000000000005"] * 3
    assert first["event_uuid"].tolist() == [event_uuid({"input": "user-0-5"})] * 3
    assert first["value_format"].tolist() == ["V3"] * 3
    assert first["value_format_inferred"].tolist() == [True, True, False]  # only the completed record pins V3
    assert r["error"].isna().all() and len(simple_log().errors) == 0


def test_bad_records_are_rows_with_reasons_never_dropped():
    good_key, good_value = execution("u", 1)[0]
    rows = [(0, 0, b"not-a-state-key", good_value), (0, 1, good_key, b"{broken"), (0, 2, good_key, None),
            (0, 3, None, good_value), (0, 4, b"\xff\xfe", b"[]"), (0, 5, good_key, good_value)]
    log = ActionStateLog.from_raw(batch(rows), SOURCE)
    r = log.records
    assert len(r) == 6
    assert r["error"].iat[0].startswith("key: state key 'not-a-state-key'")
    assert r["task_event_type"].iat[0] == "_input_event"  # the value still decoded
    assert r["error"].iat[1].startswith("value: value is not valid JSON")
    assert r["seq"].iat[1] == 1                            # the key still decoded
    assert r["tombstone"].iat[2] and pd.isna(r["error"].iat[2]) and pd.isna(r["completed"].iat[2])
    assert r["error"].iat[3] == "key: missing (record has no key)"
    assert "key: state key is not valid UTF-8" in r["error"].iat[4] and "value:" in r["error"].iat[4]
    assert log.errors.index.tolist() == [0, 1, 3, 4]
    assert log.summary()["errors"] == 4 and log.summary()["tombstones"] == 1


@pytest.mark.parametrize("payload", ["é9", "AAAA\u00a0", "\u202e"])
def test_a_call_payload_that_is_not_base64_is_an_error_row(payload: str) -> None:
    """Upstream writes a call's payload as Jackson's base64 of a byte[]. One with a character beyond ASCII (a damaged
    dump) loaded as a record, and predict then raised a bare ValueError decoding it ("string argument should contain
    only ASCII characters"); now the record is an error row, which the rebuild skips and reports."""
    lines = [json.loads(ln) for ln in ai.samples.path("N07").read_text(encoding="utf-8").splitlines()]
    i = next(i for i, ln in enumerate(lines) if ln["value"] and ln["value"].get("callResults"))
    lines[i]["value"]["callResults"][0]["resultPayload"] = payload
    raw = RawBatch([ln["partition"] for ln in lines], [ln["offset"] for ln in lines], [ln["timestamp"] for ln in lines],
                   [ln["key"].encode() for ln in lines], [json.dumps(ln["value"]).encode() for ln in lines])
    damaged = ActionStateLog.from_raw(raw, SOURCE)
    records = damaged.records
    pos = int(records.index[(records["partition"] == lines[i]["partition"])
                            & (records["offset"] == lines[i]["offset"])][0])
    reason = records["error"].iat[pos]
    assert reason.startswith("value: callResults[0].resultPayload is not base64 text"), reason
    assert damaged.records["error"].notna().sum() == 1
    with pytest.raises(ValueFormatError, match="is not base64 text"):
        damaged.value(pos)
    for rule in ("original", "fixed"):
        ai.predict(damaged, markers=ai.samples.markers("N07"), rule=rule)   # raised ValueError before


def test_value_format_inferred_from_key_then_partition():
    rows = []
    # key a: raw-JSON memory pins V2a; its initial record takes V2a
    for o, (k, v) in enumerate(execution("a", 1, lineage=False, kryo=False)):
        rows.append((0, o, k, v))
    # key b in the same partition has only an initial record: the partition's V2a
    (kb, vb) = execution("b", 1)[0]
    rows.append((0, 3, kb, vb))
    # key c in another partition: nothing pins it, so the newest fitting format, inferred
    (kc, vc) = execution("c", 1)[0]
    rows.append((1, 0, kc, vc))
    r = ActionStateLog.from_raw(batch(rows), SOURCE).records
    assert r["value_format"].tolist() == ["V2a", "V2a", "V2a", "V2a", "V3"]
    assert r["value_format_inferred"].tolist() == [True, True, False, True, True]


def test_value_is_lazy_cached_and_exact():
    log = simple_log()
    state = log.value(2)
    assert state == decode_action_state(log.raw.value[2]) and state.completed
    assert log.value(2) is state
    assert len(log.values()) == 12 and log.values()[2] is state
    tomb = ActionStateLog.from_raw(batch([(0, 0, execution("u", 1)[0][0], None),
                                          (0, 1, execution("u", 1)[0][0], b"[]")]), SOURCE)
    assert tomb.value(0) is None
    with pytest.raises(ValueFormatError):
        tomb.value(1)
    assert tomb.values() == [None, None]
    with pytest.raises(IndexError):
        tomb.value(5)


def test_keys_and_for_key():
    log = simple_log()
    assert log.keys() == ["user-0", "user-1"]
    sub = log.for_key("user-1")
    assert len(sub) == 6 and isinstance(sub.records.index, pd.RangeIndex)
    assert sub.records["business_key"].unique().tolist() == ["user-1"]
    assert sub.raw.value == log.raw.value[6:] and sub.value(0) == log.value(6)
    assert len(log.for_key("nobody")) == 0


def test_summary_and_html_escape_untrusted_text():
    attrs = {"input": "x"}
    evil = '<script>alert("k")</script>'
    k = key(evil, 1, attrs)
    v = encode_action_state(ActionState(task_event=Event.new("<img src=x onerror=alert(1)>", attrs)))
    log = ActionStateLog.from_raw(batch([(0, 0, k, v), (0, 1, b"<b>bad</b>", v)]), SOURCE)
    s = log.summary()
    for name in ("records", "errors", "business_keys", "partitions", "key_formats", "value_formats",
                 "completed", "tombstones"):
        assert name in s
    assert s["records"] == 2 and s["key_formats"] == {"K1": 1} and s["partitions"] == [0]
    json.dumps(s)  # plain data
    html = log._repr_html_()
    assert "<script>" not in html and "<img" not in html and "<b>bad" not in html
    assert "&lt;script&gt;" in html
    assert "ActionStateLog" in repr(log)


def test_subagent_and_legacy_columns():
    delegate = Event.new("_input_event", {"input": "review this diff"})
    attrs = {"targetScope": "reviewer", "callId": "s-0-1", "sessionId": "s-0", "delegateType": "_input_event",
             "delegateAttributes": {"input": "review this diff"}}
    sub = Event.new("InternalSubagentCallEvent", attrs, event_class=SUBAGENT_EVENT, delegate=delegate)
    v_sub = encode_action_state(ActionState(task_event=sub), value_format="V3+")
    legacy = (b'{"taskEvent":{"@class":"org.apache.flink.agents.runtime.python.event.PythonEvent","id":"e1",'
              b'"attributes":{},"event":"gAWV","eventType":"flink_agents.api.events.event.InputEvent",'
              b'"eventJsonStr":"{}","sourceTimestamp":1},"sensoryMemoryUpdates":[],"shortTermMemoryUpdates":[],'
              b'"outputEvents":[],"callResults":[{"functionId":"f","argsDigest":"","resultPayload":null,'
              b'"exceptionPayload":"eyJ4IjoxfQ=="}],"completed":false}')
    rows = [(0, 0, key("k", 1, attrs), v_sub), (0, 1, key("k", 0, {}), legacy)]
    r = ActionStateLog.from_raw(batch(rows, agent=True), SOURCE).records
    assert r["subagent_scope"].iat[0] == "reviewer" and pd.isna(r["subagent_scope"].iat[1])
    assert r["subagent_session_id"].iat[0] == "s-0" and r["subagent_call_id"].iat[0] == "s-0-1"
    assert r["value_format"].tolist() == ["V3+", "V1"]
    assert r["task_event_type"].tolist() == ["InternalSubagentCallEvent", "_input_event"]
    assert r["is_root"].tolist() == [False, True]
    assert r["calls_failed"].iat[1] == 1 and r["agent_key"].tolist() == ["agent-0", "agent-0"]


def test_parquet_round_trip(tmp_path):
    from agent_inspect.log import load_file

    log = simple_log()
    path = tmp_path / "log.parquet"
    log.to_parquet(path)
    again = load_file(path)
    assert again.raw.value == log.raw.value and again.raw.key == log.raw.key
    pd.testing.assert_frame_equal(again.records.drop(columns=["timestamp"]).astype(object),
                                  log.records.drop(columns=["timestamp"]).astype(object))


record = st.one_of(
    st.tuples(st.just("good"), st.integers(0, 3)),
    st.tuples(st.just("tombstone"), st.integers(0, 3)),
    st.tuples(st.just("badkey"), st.text(max_size=10)),
    st.tuples(st.just("badvalue"), st.binary(max_size=10)),
)


GOOD = execution("u", 1)[2]


def positioned(items: list) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(partition, offset, key, value) per drawn record, offsets counting up per partition."""
    rows = []
    next_offset = {p: 0 for p in range(4)}
    for p, (kind, arg) in items:
        k, v = GOOD
        if kind == "tombstone":
            v = None
        elif kind == "badkey":
            k = arg.encode()
        elif kind == "badvalue":
            v = arg
        rows.append((p, next_offset[p], k, v))
        next_offset[p] += 1
    return rows


@settings(deadline=None, max_examples=30)
@given(st.lists(st.tuples(st.integers(0, 3), record), max_size=30), st.randoms(use_true_random=False))
def test_never_drops_and_keeps_physical_order(items, rnd):
    rows = positioned(items)
    kinds = {(p, o): kind for (p, o, _, _), (_, (kind, _)) in zip(rows, items)}
    shuffled = rows[:]
    rnd.shuffle(shuffled)
    log = ActionStateLog.from_raw(batch(shuffled), SOURCE)
    r = log.records
    assert len(r) == len(rows)
    assert list(zip(r["partition"], r["offset"])) == sorted((p, o) for p, o, _, _ in rows)
    assert log.raw.value == [v for _, _, _, v in sorted(rows, key=lambda t: (t[0], t[1]))]
    assert r["tombstone"].sum() == sum(v is None for *_, v in rows)
    for pos, (p, o) in enumerate(zip(r["partition"], r["offset"])):
        kind = kinds[(p, o)]
        if kind in ("good", "tombstone"):
            assert pd.isna(r["error"].iat[pos])
        if kind == "good":
            assert r["completed"].iat[pos] and r["seq"].iat[pos] == 1
        if kind == "badkey":
            assert r["error"].iat[pos].startswith("key:")


@settings(deadline=None, max_examples=40)
@given(st.lists(st.tuples(st.integers(0, 3), record), max_size=60), st.randoms(use_true_random=False),
       st.integers(1, 4), st.booleans(), st.booleans())
def test_chunked_batches_build_the_log_of_one_sorted_batch(items, rnd, chunks, shuffle_within, agent):
    """Kafka hands over chunks that mix partitions; any split of any order gives the one-batch log."""
    rows = positioned(items)
    arrival = rows[:]
    if shuffle_within:
        rnd.shuffle(arrival)
    cuts = sorted(rnd.sample(range(1, len(arrival)), min(chunks - 1, max(len(arrival) - 1, 0)))) if arrival else []
    pieces = [arrival[a:z] for a, z in zip([0, *cuts], [*cuts, len(arrival)])]
    chunked = ActionStateLog.from_raw([batch(piece, agent) for piece in pieces], SOURCE)
    whole = ActionStateLog.from_raw(batch(sorted(rows, key=lambda t: (t[0], t[1])), agent), SOURCE)
    pd.testing.assert_frame_equal(chunked.records, whole.records, check_exact=True)
    assert [getattr(chunked.raw, f) for f in ("partition", "offset", "timestamp_ms", "key", "value", "agent_key")] == \
        [getattr(whole.raw, f) for f in ("partition", "offset", "timestamp_ms", "key", "value", "agent_key")]


def test_verify_identity_against_key_partition_group_and_plan():
    from agent_inspect.codec import kafka_partition, python_action_uuid

    plan = {"actions": {"process_input": {"exec": {"module": "my_agent", "qualname": "MyAgent.process_input"},
                                          "trigger_conditions": ["_input_event"]}}}
    hashed = python_action_uuid("process_input", "my_agent", "MyAgent.process_input", ["_input_event"])
    attrs = {"input": "hello"}
    value = encode_action_state(ActionState(task_event=Event.new("_input_event", attrs)))
    good_k1 = key("user-42", 7, attrs, action=hashed).decode()
    bad_ev = key("user-42", 8, {"input": "other"}, action=hashed).decode()
    good_k15 = key("user-42", 7, attrs, fmt="K1.5", action=hashed).decode()              # key group 20
    bad_group = good_k15.replace("20_", "21_", 1)
    k2 = format_state_key("K2", seq=7, event_uuid=event_uuid(attrs), action_uuid=name_action_uuid("process_input"),
                          key_group=20, key_digest="E7o9BwqaXQ7wLxweJnKSs2N4ilcHgVnTVUg5wKuAPhg=",
                          serializer_fingerprint="A" * 43 + "=")
    unknown_action = key("user-42", 9, attrs, action=name_action_uuid("other")).decode()
    rows = []
    for i, (k, p) in enumerate([(good_k1, kafka_partition(good_k1, 64)), (bad_ev, kafka_partition(bad_ev, 64)),
                                (good_k15, 3), (bad_group, 3), (k2, kafka_partition(k2, 64)),
                                (unknown_action, kafka_partition(unknown_action, 64))]):
        rows.append((p, i, k.encode(), value))
    log = ActionStateLog.from_raw(batch(rows), SOURCE)
    v = log.verify_identity(num_partitions=64, plan=plan)
    by_key = dict(zip(log.records["state_key"], v.to_dict("records")))
    assert by_key[good_k1]["event_uuid_ok"] and by_key[good_k1]["partition_ok"]
    assert by_key[good_k1]["action_name"] == "process_input" and by_key[good_k1]["action_uuid_ok"]
    assert by_key[bad_ev]["event_uuid_ok"] is False and by_key[bad_ev]["partition_ok"]
    assert by_key[good_k15]["key_group_ok"] and by_key[good_k15]["key_group_expected"] == 20
    assert by_key[good_k15]["partition_ok"] is False  # K1.5 partitions by the key text (§6.3)
    assert by_key[bad_group]["key_group_ok"] is False
    assert by_key[k2]["partition_ok"] and by_key[k2]["action_uuid_ok"] and pd.isna(by_key[k2]["key_group_ok"])
    assert by_key[unknown_action]["action_uuid_ok"] is False and pd.isna(by_key[unknown_action]["action_name"])
    # without a plan or partition count, those checks are unknown rather than failed
    bare = log.verify_identity()
    assert bare["partition_ok"].isna().all() and bare["action_uuid_ok"].isna().all()
    assert bare["event_uuid_ok"].tolist() == v["event_uuid_ok"].tolist()


@settings(deadline=None, max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 8), st.binary(max_size=6)), min_size=1, max_size=4),
       st.binary(max_size=4))
def test_corrupted_bytes_never_escape_as_exceptions(edits, key_noise):
    """Whatever the bytes, loading gives a row; only ``value(pos)`` raises, and only ValueFormatError."""
    k, v = execution("u_1", 1)[2]
    data = bytearray(v)
    for at, cut, insert in edits:
        at %= len(data) + 1
        data[at:at + cut] = insert
    log = ActionStateLog.from_raw(batch([(0, 0, k[:5] + key_noise + k[5:], bytes(data))]), SOURCE)
    assert len(log.records) == 1
    try:
        log.value(0)
    except ValueFormatError:
        assert log.records["error"].iat[0].startswith(("value:", "key:"))
    log.verify_identity(num_partitions=4)
    log.summary()
    log._repr_html_()


@pytest.mark.parametrize("key_format", [None, "K1", "K0"])
def test_empty_input_gives_an_empty_typed_log(key_format):
    for batches in ([], RawBatch(), [RawBatch(), RawBatch()]):
        log = ActionStateLog.from_raw(batches, SOURCE, key_format=key_format)
        assert len(log) == 0 and list(log.records.columns) == list(COLUMNS)
        assert str(log.records["seq"].dtype) == "Int64" and log.keys() == []
        assert log.summary()["records"] == 0 and len(log.verify_identity()) == 0
    # only missing keys: nothing to parse, every row says so
    log = ActionStateLog.from_raw(batch([(0, 0, None, None), (0, 1, None, GOOD[1])]), SOURCE, key_format=key_format)
    assert list(log.records["error"]) == ["key: missing (record has no key)"] * 2
