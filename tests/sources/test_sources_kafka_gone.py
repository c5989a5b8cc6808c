"""Records gone from under a read (retention, deleteRecords, a recreated topic) are never skipped silently.

tansu cannot delete records and answers a fetch past a partition's end with an empty batch and no error (platform
notes), so these tests use librdkafka's own mock cluster: it answers OFFSET_OUT_OF_RANGE as Kafka does, and its
size-based retention (about 5 MB a partition) moves the log start as records are written. librdkafka's default
``auto.offset.reset`` would jump to the partition's end there, without a word.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from agent_inspect._errors import DataLossError
from agent_inspect.sources import ReadPlan, open_kafka, open_kafka_tail, read_partitions
from tests.support.waiting import wait_until

pytestmark = pytest.mark.kafka

BIG = b"x" * 100_000  # 100 KB: the mock keeps about 50 of them a partition
_TOPICS = itertools.count()


@dataclass
class Mock:
    bootstrap: str
    producer: Any

    def write(self, topic: str, count: int, partition: int = 0) -> None:
        """``count`` records of 100 KB, each its own batch (the mock drops whole batches)."""
        for _ in range(count):
            self.producer.produce(topic, value=BIG, key=b"k", partition=partition)
            assert self.producer.flush(10) == 0

    def earliest(self, topic: str, partition: int = 0) -> int:
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "probe"})
        try:
            return int(consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[0])
        finally:
            consumer.close()


@pytest.fixture(scope="module")
def mock() -> Iterator[Mock]:
    """A librdkafka mock cluster (topics of 4 partitions, made on first write); it lives as long as its producer."""
    from confluent_kafka import Producer

    quiet = logging.getLogger("tests.rdkafka-mock")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    producer = Producer({"bootstrap.servers": "unused:1", "test.mock.num.brokers": 1, "logger": quiet})
    brokers = producer.list_topics(timeout=10).brokers.values()
    yield Mock(",".join(f"{b.host}:{b.port}" for b in brokers), producer)
    del producer


def _topic() -> str:
    return f"gone-{next(_TOPICS)}"


def test_a_load_whose_position_retention_removed_raises_data_loss(mock: Mock) -> None:
    topic = _topic()
    mock.write(topic, 80)
    assert mock.earliest(topic) > 5  # retention moved the log start past where the load reads
    plan = ReadPlan(start={0: 5}, end={0: 80})
    with pytest.raises(DataLossError, match=rf"partition 0 of topic '{topic}': offset 5 .*allow_data_loss=True"):
        list(read_partitions({"bootstrap.servers": mock.bootstrap}, topic, plan, keys=None, timeout=5.0, bar=None))


def test_a_load_past_a_partition_s_end_raises_data_loss(mock: Mock) -> None:
    topic = _topic()
    mock.write(topic, 3)
    plan = ReadPlan(start={0: 50}, end={0: 60})  # the topic was recreated or truncated since the plan
    with pytest.raises(DataLossError, match=rf"partition 0 of topic '{topic}': offset 50 "):
        list(read_partitions({"bootstrap.servers": mock.bootstrap}, topic, plan, keys=None, timeout=5.0, bar=None))


@pytest.mark.parametrize("allow", [False, True])
def test_retention_between_the_plan_and_the_read(mock: Mock, allow: bool) -> None:
    topic = _topic()
    mock.write(topic, 80)
    start = mock.earliest(topic) + 2
    batches, info = open_kafka(mock.bootstrap, topic, start_offsets={0: start}, progress=False,
                               allow_data_loss=allow)  # planned while offset `start` was still retained
    mock.write(topic, 40)  # retention moves the log start past it before the read
    earliest = mock.earliest(topic)
    assert earliest > start
    if not allow:
        with pytest.raises(DataLossError, match=rf"offset {start} is no longer retained"):
            list(batches)
        return
    offsets = [o for batch in batches for o in batch.offset]
    assert offsets == list(range(earliest, 80))  # read on from the earliest retained offset to the planned end
    assert info.options["data_loss"] == {0: {"asked": start, "read_from": earliest}}


def test_a_tail_whose_position_is_gone_says_so_and_reads_on_from_the_earliest(mock: Mock) -> None:
    topic = _topic()
    mock.write(topic, 80)
    mock.write(topic, 5, partition=1)
    earliest = mock.earliest(topic)
    tail = open_kafka_tail(mock.bootstrap, topic, last=0)
    try:
        tail.suspend()
        tail.positions.update({0: 5, 1: 0})  # the saved positions of an idle tail; 5 no longer retained when it wakes
        read: list[tuple[int, int]] = []

        def polled() -> bool:
            batch = tail.poll()
            read.extend(zip(batch.partition, batch.offset))
            return len(read) >= 80 - earliest + 5

        wait_until(polled)
        polled()  # nothing more: each record arrives once
        assert sorted(read) == [(0, o) for o in range(earliest, 80)] + [(1, o) for o in range(5)]
        assert tail.data_loss is not None
        assert f"partition 0 offset 5 ({earliest - 5} records skipped, reading on from offset {earliest})" \
            in tail.data_loss
        assert tail.trouble is None  # not a reason why nothing arrives: LiveLog.data_loss and the badge show it

        # a later gap in the other partition adds to what the tail says; the first one stays named
        mock.write(topic, 80, partition=1)
        earliest_1 = mock.earliest(topic, 1)
        tail.suspend()
        tail.positions[1] = 5
        wait_until(lambda: len(tail.poll()) > 0 or tail.positions[1] >= earliest_1)
        assert f"partition 0 offset 5 ({earliest - 5} records skipped" in tail.data_loss
        assert f"partition 1 offset 5 ({earliest_1 - 5} records skipped, reading on from offset {earliest_1})" \
            in tail.data_loss
    finally:
        tail.close()


def test_a_tail_names_its_newest_gaps_and_counts_the_earlier(mock: Mock, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_inspect.sources import _tail

    monkeypatch.setattr(_tail, "GAPS_SHOWN", 1)  # two gaps against a cap of one, as 11 against the default 10
    topic = _topic()
    mock.write(topic, 80)
    tail = open_kafka_tail(mock.bootstrap, topic, last=0)
    try:
        for partition in (0, 1):
            if partition:
                mock.write(topic, 80, partition=1)
            tail.suspend()
            tail.positions[partition] = 5
            gone_to = mock.earliest(topic, partition)
            wait_until(lambda: len(tail.poll()) > 0 and tail.positions[partition] >= gone_to)
        assert tail.data_loss is not None
        assert "partition 0 offset 5" not in tail.data_loss   # the older gap is counted, not named
        assert "partition 1 offset 5" in tail.data_loss and tail.data_loss.endswith("; and 1 earlier gap")
    finally:
        tail.close()


@pytest.mark.parametrize("allow", [False, True])
def test_a_load_on_workers_keeps_the_one_rule(mock: Mock, allow: bool) -> None:
    """``workers=``: each worker reads its partitions with a consumer of its own; retention deleting records
    meanwhile raises, or with ``allow_data_loss`` is skipped and noted in the log's ``data_loss``, as in one
    process. (The workers' reads ignored ``allow_data_loss``: they raised either way.)"""
    from agent_inspect.log._parallel import Workers

    topic = _topic()
    mock.write(topic, 80)
    mock.write(topic, 3, partition=1)
    start = mock.earliest(topic) + 2
    _, info = open_kafka(mock.bootstrap, topic, start_offsets={0: start, 1: 0}, progress=False,
                         allow_data_loss=allow)
    mock.write(topic, 40)  # retention moves partition 0's log start past `start` before the workers read it
    earliest = mock.earliest(topic)
    assert earliest > start
    with Workers(2) as pool:
        if not allow:
            with pytest.raises(DataLossError, match=rf"offset {start} is no longer retained"):
                pool.load_kafka({"bootstrap.servers": mock.bootstrap}, topic, info, keys=None, timeout=5.0,
                                progress=False)
            return
        log = pool.load_kafka({"bootstrap.servers": mock.bootstrap}, topic, info, keys=None, timeout=5.0,
                              progress=False, allow_data_loss=True)
    read = sorted(zip(list(log.raw.partition), list(log.raw.offset)))
    assert read == [(0, o) for o in range(earliest, 80)] + [(1, o) for o in range(3)]
    assert log.source.options["data_loss"] == {0: {"asked": start, "read_from": earliest}}
