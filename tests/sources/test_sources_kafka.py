"""Kafka loader against a real broker (tansu): bounded, read-only, markers, pruning, failures."""

from __future__ import annotations

import json
import re
import threading
import time
import warnings
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect.codec import kafka_partition, parse_state_key
from agent_inspect.sources._kafka import open_kafka
from tests.sources._records import make_records
from tests.support.tansu import consumer_groups, create_topic, end_offsets, free_port, produce_like_upstream

pytestmark = pytest.mark.kafka

PARTITIONS = 4
Topic = tuple[str, list[tuple[str, bytes]], list[tuple[int, int]]]


def _raw(bootstrap: str, topic: str, **options: object) -> list[tuple[int, int, bytes | None, bytes | None]]:
    batches, _ = open_kafka(bootstrap, topic, progress=False, **options)  # type: ignore[arg-type]
    return [(b.partition[i], b.offset[i], b.key[i], b.value[i]) for b in batches for i in range(len(b))]


@pytest.fixture(scope="module")
def topic(kafka_bootstrap: str) -> Topic:
    """A topic written like upstream: 8 business keys × 3 rounds × 2 writes, one send+flush each."""
    name = create_topic(kafka_bootstrap, PARTITIONS)
    records = make_records(8, 3)
    positions = produce_like_upstream(kafka_bootstrap, name, records, num_partitions=PARTITIONS,
                                      timestamps=range(1_700_000_000_000, 1_700_000_000_000 + len(records)))
    return name, records, positions


def test_load_reads_every_record_where_upstream_put_it(kafka_bootstrap: str, topic: Topic) -> None:
    name, records, positions = topic
    log = ai.load(f"kafka://{kafka_bootstrap}/{name}", progress=False)
    assert len(log.records) == len(records)
    got = {(p, o): (k, v) for p, o, k, v in zip(log.raw.partition, log.raw.offset, log.raw.key, log.raw.value)}
    for (key, value), pos in zip(records, positions):
        assert got[pos] == (key.encode(), value)
        assert pos[0] == kafka_partition(key, PARTITIONS)
    assert log.source.kind == "kafka" and log.source.topic == name
    assert dict(log.source.end_offsets) == dict(end_offsets(kafka_bootstrap, name))
    assert set(log.records["partition"]) <= set(range(PARTITIONS))
    assert log.errors.empty


def test_kafka_load_equals_file_load_of_the_same_records(kafka_bootstrap: str, topic: Topic, tmp_path: Path) -> None:
    name, _, _ = topic
    log = ai.load_kafka(kafka_bootstrap, name, progress=False)
    lines = [json.dumps({"topic": name, "partition": p, "offset": o, "tstype": "create", "ts": ts,
                         "broker": 111, "headers": None, "key": k.decode(), "payload": v.decode()})
             for p, o, ts, k, v in zip(log.raw.partition, log.raw.offset, log.raw.timestamp_ms,
                                       log.raw.key, log.raw.value)]
    dump = tmp_path / "dump.jsonl"
    dump.write_text("\n".join(lines) + "\n")
    from_file = ai.load_file(dump)
    assert from_file.records.equals(log.records)
    assert from_file.source.file_format == "kcat-jsonl" and from_file.source.topic == name


def test_loads_are_read_only(kafka_bootstrap: str, topic: Topic) -> None:
    name, _, _ = topic
    ends, groups = dict(end_offsets(kafka_bootstrap, name)), consumer_groups(kafka_bootstrap)
    ai.load_kafka(kafka_bootstrap, name, progress=False)
    ai.load_kafka(kafka_bootstrap, name, progress=False, markers={0: 1}, config={"group.id": "mine"})
    assert dict(end_offsets(kafka_bootstrap, name)) == ends
    assert consumer_groups(kafka_bootstrap) == groups


def test_markers_merge_by_minimum_and_limit_partitions(kafka_bootstrap: str, topic: Topic) -> None:
    name, _, positions = topic
    full = _raw(kafka_bootstrap, name)
    markers = [{0: 3, 1: 2}, {"0": 1}, {1: 4}]
    got = _raw(kafka_bootstrap, name, markers=markers)
    assert got == [r for r in full if (r[0] == 0 and r[1] >= 1) or (r[0] == 1 and r[1] >= 2)]
    _, info = open_kafka(kafka_bootstrap, name, markers=markers, progress=False)
    assert dict(info.start_offsets) == {0: 1, 1: 2}
    assert info.options["markers"] == {0: 1, 1: 2}


def test_start_offsets_override_some_partitions(kafka_bootstrap: str, topic: Topic) -> None:
    name, _, _ = topic
    full = _raw(kafka_bootstrap, name)
    got = _raw(kafka_bootstrap, name, start_offsets={2: 2})
    assert got == [r for r in full if r[0] != 2 or r[1] >= 2]


def test_marker_at_the_end_reads_nothing(kafka_bootstrap: str, topic: Topic) -> None:
    name, _, _ = topic
    ends = end_offsets(kafka_bootstrap, name)
    log = ai.load_kafka(kafka_bootstrap, name, markers=dict(ends), progress=False)
    assert len(log.records) == 0
    assert dict(log.source.start_offsets) == dict(ends)


def test_business_keys_prune_partitions_and_filter(kafka_bootstrap: str, topic: Topic) -> None:
    name, records, _ = topic
    wanted = "user-3"
    log = ai.load_kafka(kafka_bootstrap, name, business_keys=[wanted], progress=False)
    expected = [k.encode() for k, _ in records if parse_state_key(k).key_text == wanted]
    assert sorted(log.raw.key) == sorted(expected)
    read = set(log.source.start_offsets)
    assert kafka_partition(expected[0].decode(), PARTITIONS) in read
    assert len(read) < PARTITIONS  # only the partitions the key can hash to were assigned
    assert log.source.options["business_keys"] == [wanted]


def test_unknown_partition_in_marker(kafka_bootstrap: str, topic: Topic) -> None:
    name, _, _ = topic
    with pytest.raises(ai.UnknownPartitionError, match="partition 9"):
        ai.load_kafka(kafka_bootstrap, name, markers={0: 0, 9: 1}, progress=False)


def test_marker_beyond_the_end_is_data_loss(kafka_bootstrap: str) -> None:
    # tansu cannot delete records (delete_records panics it), so retention loss below the earliest
    # offset is covered by the planner tests; here the honest broker case: a marker from an earlier
    # incarnation of the topic points past the end of the recreated one.
    name = create_topic(kafka_bootstrap, 2)
    produce_like_upstream(kafka_bootstrap, name, make_records(2, 1), num_partitions=2)
    ends = end_offsets(kafka_bootstrap, name)
    marker = {p: e + 5 for p, e in ends.items()}
    with pytest.raises(ai.DataLossError, match="recreated or truncated"):
        ai.load_kafka(kafka_bootstrap, name, markers=marker, progress=False)
    log = ai.load_kafka(kafka_bootstrap, name, markers=marker, allow_data_loss=True, progress=False)
    assert len(log.records) == sum(ends.values())
    assert set(log.source.options["data_loss"]) == set(ends)


def test_negative_marker_is_data_loss(kafka_bootstrap: str, topic: Topic) -> None:
    name, _, _ = topic
    with pytest.raises(ai.DataLossError, match="earliest retained offset is 0"):
        ai.load_kafka(kafka_bootstrap, name, markers={0: -3}, progress=False)


def _topic_id(bootstrap: str, topic: str) -> str:
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    return str(admin.describe_topics(TopicCollection([topic]), request_timeout=10)[topic].result(10).topic_id)


def test_marker_below_the_log_start_names_partition_marker_and_log_start(kafka_bootstrap: str, topic: Topic) -> None:
    name, _, _ = topic
    with pytest.raises(ai.DataLossError) as info:
        ai.load_kafka(kafka_bootstrap, name, markers={p: -2 for p in range(PARTITIONS)}, progress=False)
    msg = str(info.value)
    assert "partition 0" in msg and "recovery marker offset -2" in msg and "log start" in msg and "#1101" in msg
    # the loaded log keeps each partition's log start, and a later rebuild below it is data loss too
    log = ai.load_kafka(kafka_bootstrap, name, progress=False)
    assert log.source.options["log_start"] == {p: 0 for p in range(PARTITIONS)}
    with pytest.raises(ai.DataLossError, match=r"partition 1: recovery marker offset -1 is below the log start 0"):
        ai.reconstruct(log, markers=[{0: 0, 1: -1}])


def test_versioned_markers_are_checked_like_upstream(kafka_bootstrap: str, topic: Topic) -> None:
    name, _, _ = topic
    topic_id = _topic_id(kafka_bootstrap, name)
    offsets = {str(p): 1 for p in range(PARTITIONS)}
    good = {"schemaVersion": 1, "topic": name, "topicId": topic_id, "offsets": offsets}
    log = ai.load_kafka(kafka_bootstrap, name, markers=[good], progress=False)
    assert dict(log.source.start_offsets) == {p: 1 for p in range(PARTITIONS)}
    recreated = {**good, "topicId": "AAAAAAAAAAAAAAAAAAAAAA"}
    with pytest.raises(ai.SourceError, match=re.escape(  # a topic id is base64: it may hold "+" or "/"
            f"Kafka action-state topic {name} has ID {topic_id}, but the recovery "
            "marker expects AAAAAAAAAAAAAAAAAAAAAA; the topic may have been recreated")):
        ai.load_kafka(kafka_bootstrap, name, markers=[recreated], progress=False)
    with pytest.raises(ai.UnknownPartitionError, match=r"contains partitions \[0, 1\], but topic .* currently has "
                                                       r"partitions \[0, 1, 2, 3\]"):
        ai.load_kafka(kafka_bootstrap, name, markers=[{**good, "offsets": {"0": 1, "1": 1}}], progress=False)
    with pytest.raises(ai.SourceError, match="mixture of versioned and legacy"):
        ai.load_kafka(kafka_bootstrap, name, markers=[good, {0: 1}], progress=False)
    with pytest.raises(ai.SourceError, match="marker schema 2, expected 1"):
        ai.load_kafka(kafka_bootstrap, name, markers=[{**good, "schemaVersion": 2}], progress=False)


def test_missing_topic_is_a_source_error_and_is_not_created(kafka_bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient

    with pytest.raises(ai.SourceError, match="does not exist"):
        ai.load_kafka(kafka_bootstrap, "no-such-topic-here", progress=False)
    topics = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=5).topics
    assert "no-such-topic-here" not in topics


def test_a_misspelt_topic_names_the_close_ones(kafka_bootstrap: str, topic: Topic) -> None:
    name, _, _ = topic
    with pytest.raises(ai.SourceError, match=re.escape(f"; check the topic name; did you mean {name!r}")):
        ai.load_kafka(kafka_bootstrap, name[:-1], progress=False)


@pytest.mark.parametrize("bad", ["bad topic!", "..", "t" * 250, "action-state\n"])
def test_a_name_kafka_cannot_have_fails_before_any_connection(bad: str) -> None:
    # it read "does not exist on <host>", and only once a broker answered; port 1 has no broker at all
    with pytest.raises(ai.SourceError, match=r"is not a Kafka topic name: use 1 to 249 letters, digits, "):
        ai.load_kafka("127.0.0.1:1", bad, progress=False, timeout=2)


def test_live_topic_load_ends_at_offsets_captured_at_start(kafka_bootstrap: str) -> None:
    name = create_topic(kafka_bootstrap, 2)
    produce_like_upstream(kafka_bootstrap, name, make_records(4, 2, prefix="live"), num_partitions=2)
    before = dict(end_offsets(kafka_bootstrap, name))
    stop = threading.Event()

    def writer() -> None:
        n = 0
        while not stop.is_set():
            produce_like_upstream(kafka_bootstrap, name, make_records(1, 1, seed=n, prefix=f"more{n}"),
                                  num_partitions=2)
            n += 1

    thread = threading.Thread(target=writer, daemon=True)
    batches, info = open_kafka(kafka_bootstrap, name, progress=False)
    thread.start()
    try:
        time.sleep(0.3)  # the topic grows before and while the records are fetched
        rows = [(b.partition[i], b.offset[i]) for b in batches for i in range(len(b))]
    finally:
        stop.set()
        thread.join(10)
    assert dict(info.end_offsets) == before
    assert sorted(rows) == [(p, o) for p in sorted(before) for o in range(before[p])]
    assert sum(end_offsets(kafka_bootstrap, name).values()) > sum(before.values())


def test_closed_port_is_broker_unreachable_at_once(capfd: pytest.CaptureFixture[str]) -> None:
    start = time.monotonic()
    with pytest.raises(ai.BrokerUnreachable, match="refused the connection .*Connection refused") as info:
        ai.load_kafka(f"127.0.0.1:{free_port()}", "t", timeout=30, progress=False)
    assert "\n" not in str(info.value)
    assert time.monotonic() - start < 15  # not the 30 s timeout: librdkafka reports the refusal at once
    assert "%3|" not in capfd.readouterr().err  # librdkafka's log lines stay off stderr



def test_silent_peer_is_broker_unreachable_within_timeout(silent_peer: int) -> None:
    start = time.monotonic()
    with pytest.raises(ai.BrokerUnreachable, match="did not answer within 2s"):
        ai.load(f"kafka://127.0.0.1:{silent_peer}/t", timeout=2, progress=False)
    assert time.monotonic() - start < 6


def test_bad_records_through_kafka_become_error_rows(kafka_bootstrap: str) -> None:
    name = create_topic(kafka_bootstrap, 2)
    good = make_records(1, 1)
    bad = [(good[0][0], good[0][1][:40]), ("not-a-state-key", b"{}"), (good[1][0], b"\xff\xfe"),
           (good[1][0], b"[" * 5000 + b"]" * 5000), (good[1][0], b'{"deep":' + b"[" * 3000 + b"]" * 3000 + b"}"),
           (good[1][0], None)]
    produce_like_upstream(kafka_bootstrap, name, [*good, *bad], num_partitions=2, partitioner=lambda k, n: 1)
    log = ai.load_kafka(kafka_bootstrap, name, progress=False)
    assert len(log.records) == len(good) + len(bad)
    assert set(log.errors["offset"]) == {2, 3, 4, 5, 6}  # the tombstone (offset 7) is not an error


def test_progress_bar_reports_records(kafka_bootstrap: str, topic: Topic,
                                     capfd: pytest.CaptureFixture[str]) -> None:
    name, records, _ = topic
    ai.load_kafka(kafka_bootstrap, name, progress=True)
    err = capfd.readouterr().err
    assert f"kafka {name}" in err and "rec" in err


def test_client_config_passes_through_and_secrets_stay_out(kafka_bootstrap: str, topic: Topic) -> None:
    name, records, _ = topic
    config = {"security.protocol": "PLAINTEXT", "sasl.username": "svc", "sasl.password": "hunter2",
              "client.id": "notebook-7"}
    log = ai.load_kafka(kafka_bootstrap, name, config=config, progress=False)
    assert len(log.records) == len(records)
    assert log.source.options["config"] == {"security.protocol": "PLAINTEXT", "sasl.username": "svc",
                                            "client.id": "notebook-7"}
    assert "hunter2" not in repr(log.source)
    with pytest.raises(ai.SourceError, match='bad Kafka client config: Invalid value "bogus"'):
        ai.load_kafka(kafka_bootstrap, name, config={"security.protocol": "bogus"}, progress=False)


def test_broker_gone_during_the_read_is_broker_unreachable(tmp_path: Path) -> None:
    from tests.support.tansu import start_tansu

    broker = start_tansu(log_path=tmp_path / "tansu.log")
    try:
        name = create_topic(broker.bootstrap, 2)
        produce_like_upstream(broker.bootstrap, name, make_records(2, 1), num_partitions=2)
        batches, _ = open_kafka(broker.bootstrap, name, timeout=2, progress=False)
    finally:
        broker.stop()
    start = time.monotonic()
    with pytest.raises(ai.BrokerUnreachable, match="stopped answering"):
        list(batches)
    assert time.monotonic() - start < 8


def test_parquet_keeps_the_kafka_source_info(kafka_bootstrap: str, topic: Topic, tmp_path: Path) -> None:
    name, _, _ = topic
    log = ai.load_kafka(kafka_bootstrap, name, markers={0: 1, 2: 0}, progress=False)
    again = ai.load(log.to_parquet(tmp_path / "k.parquet"))
    assert again.raw.value == log.raw.value and again.raw.key == log.raw.key
    assert again.source.topic == name and dict(again.source.start_offsets) == {0: 1, 2: 0}
    assert again.source.options["markers"] == {0: 1, 2: 0}
    assert again.source.options["origin"] == {"kind": "kafka", "location": log.source.location, "file_format": None}


def test_kafka_values_with_invalid_utf8_export_to_jsonl_exactly(kafka_bootstrap: str, tmp_path: Path) -> None:
    name = create_topic(kafka_bootstrap, 1)
    key, value = make_records(1, 1)[0]
    odd = [(key, b'{"a":"\xff"}'), (key, b'["\xc3"]'), (key, value), ("not-a-state-key", b"\xff{}")]
    produce_like_upstream(kafka_bootstrap, name, odd, num_partitions=1, partitioner=lambda k, n: 0)
    log = ai.load_kafka(kafka_bootstrap, name, progress=False)
    again = ai.load_file(ai.sources.write_jsonl(log, tmp_path / "k.jsonl"))
    for col in ("partition", "offset", "timestamp_ms", "key", "value"):
        assert getattr(again.raw, col) == getattr(log.raw, col)
    assert again.records.equals(log.records)


def test_business_keys_with_no_record_raise_or_warn_on_a_real_broker(kafka_bootstrap: str, topic: Topic) -> None:
    """The one business-key check of ``ai.load`` (tests/test_load_keys.py), here on a topic: none found is an
    InspectError naming the keys, some found keeps the log and warns of the others."""
    name, records, _ = topic
    with pytest.raises(ai.InspectError, match=r"business key 'user-33' has no records in kafka://"):
        ai.load_kafka(kafka_bootstrap, name, business_keys=["user-33"], progress=False)
    with pytest.raises(ai.InspectError, match=r"business keys 'nope', 'user-33' have no records"):
        ai.load(f"kafka://{kafka_bootstrap}/{name}", business_keys=["nope", "user-33"], progress=False)
    with pytest.warns(UserWarning, match=r"no records of business key 'user-33' .* the other 1 asked for"):
        log = ai.load_kafka(kafka_bootstrap, name, business_keys=["user-3", "user-33"], progress=False)
    assert log.keys() == ["user-3"] and log.source.options["missing_business_keys"] == ["user-33"]
    assert len(log.records) == sum(parse_state_key(k).key_text == "user-3" for k, _ in records)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        both = ai.load_kafka(kafka_bootstrap, name, business_keys=["user-3", "user-5"], progress=False)
    assert set(both.keys()) == {"user-3", "user-5"} and "missing_business_keys" not in both.source.options


def test_a_digest_keyed_topic_finds_a_business_key_by_its_text(kafka_bootstrap: str) -> None:
    """K2 state keys name a key by its digest: on a real topic, asking by text finds it, a wrong text is missing."""
    sample = ai.load(ai.samples.path("production_v4"), business_keys=["user-0003", "user-0012"])
    raw = sample.raw
    where = {k: int(p) for k, p in zip(raw.key, raw.partition)}
    name = create_topic(kafka_bootstrap, PARTITIONS)
    produce_like_upstream(kafka_bootstrap, name, [(k.decode(), v) for k, v in zip(raw.key, raw.value)],
                          num_partitions=PARTITIONS, partitioner=lambda key, _: where[key.encode()])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        log = ai.load_kafka(kafka_bootstrap, name, business_keys=["user-0003"], progress=False)
    one = ai.load(ai.samples.path("production_v4"), business_keys=["user-0003"])
    assert len(log.records) == len(one.records) > 0 and log.keys() == one.keys() and len(log.keys()) == 1
    with pytest.warns(UserWarning, match=r"no records of business key 'user-33' .* the other 1 asked for"):
        some = ai.load_kafka(kafka_bootstrap, name, business_keys=["user-0012", "user-33"], progress=False)
    assert some.source.options["missing_business_keys"] == ["user-33"] and len(some.keys()) == 1
    with pytest.raises(ai.InspectError, match=r"business key 'user-33' has no records"):
        ai.load_kafka(kafka_bootstrap, name, business_keys=["user-33"], progress=False)


def test_a_mistyped_business_key_gets_the_close_matches_of_the_partitions_read(kafka_bootstrap: str,
                                                                             topic: Topic) -> None:
    """As ``ai.load`` of a file does, with the keys at hand: those of the partitions the load read (the ones the
    asked keys hash to, spec §6.3), not the whole topic's."""
    import difflib

    from agent_inspect.sources import candidate_partitions

    name, records, _ = topic
    with pytest.raises(ai.InspectError, match=r"business key 'usr-3' has no records in kafka://\S+; "
                                              r"did you mean 'user-3'"):
        ai.load_kafka(kafka_bootstrap, name, business_keys=["usr-3"], progress=False)
    read = candidate_partitions(["user-33"], PARTITIONS)
    pool = sorted({parse_state_key(k).business_key for k, _ in records if kafka_partition(k, PARTITIONS) in read})
    close = difflib.get_close_matches("user-33", pool, n=3)
    assert close and "user-3" not in pool                   # user-3 hashes to a partition this load does not read
    with pytest.raises(ai.InspectError) as raised:
        ai.load(f"kafka://{kafka_bootstrap}/{name}", business_keys=["user-33"], progress=False)
    assert f"did you mean {', '.join(map(repr, close))}?" in str(raised.value)
