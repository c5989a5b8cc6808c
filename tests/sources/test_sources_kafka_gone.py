"""Records gone from under a read (retention, deleteRecords, a recreated topic) are never skipped silently.

tansu answers a fetch at an unretained offset with an empty batch and no error (docs: platform notes), so these
tests use librdkafka's own mock cluster, which answers OFFSET_OUT_OF_RANGE like Kafka does. The read is told
to start where no record is retained; librdkafka's default reset would jump to the partition's end.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from agent_inspect._errors import DataLossError
from agent_inspect.sources import ReadPlan, open_kafka_tail, read_partitions
from tests.support.waiting import wait_until

pytestmark = pytest.mark.kafka

TOPIC = "gone"


@pytest.fixture(scope="module")
def mock_bootstrap() -> Iterator[str]:
    """A librdkafka mock cluster: topic ``gone`` with 10 records in partition 0, 5 in partition 1; it lives as long as its producer."""
    from confluent_kafka import Producer

    quiet = logging.getLogger("tests.rdkafka-mock")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    producer = Producer({"bootstrap.servers": "unused:1", "test.mock.num.brokers": 1, "logger": quiet})
    brokers = producer.list_topics(timeout=10).brokers.values()
    for i in range(10):
        producer.produce(TOPIC, value=b"v%d" % i, key=b"k", partition=0)
    for i in range(5):
        producer.produce(TOPIC, value=b"w%d" % i, key=b"j", partition=1)
    assert producer.flush(10) == 0
    yield ",".join(f"{b.host}:{b.port}" for b in brokers)
    del producer


def test_a_load_whose_position_is_no_longer_retained_raises_data_loss(mock_bootstrap: str) -> None:
    plan = ReadPlan(start={0: 50}, end={0: 60})  # what a load sees once retention moved past where it read
    with pytest.raises(DataLossError, match=r"partition 0 of topic 'gone': offset 50 .*allow_data_loss=True"):
        list(read_partitions({"bootstrap.servers": mock_bootstrap}, TOPIC, plan, keys=None, timeout=5.0, bar=None))


def test_a_tail_whose_position_is_gone_says_so_and_reads_on_from_the_earliest(mock_bootstrap: str) -> None:
    tail = open_kafka_tail(mock_bootstrap, TOPIC, last=0)
    try:
        tail.suspend()
        tail.positions.update({0: 50, 1: 0})  # the saved positions of an idle tail; 50 no longer retained when it wakes
        read: list[tuple[int, int]] = []

        def polled() -> bool:
            batch = tail.poll()
            read.extend(zip(batch.partition, batch.offset))
            return len(read) >= 15

        wait_until(polled)
        polled()  # nothing more: each record arrives once
        assert sorted(read) == [(0, o) for o in range(10)] + [(1, o) for o in range(5)]
        assert tail.data_loss is not None and "partition 0 offset 50" in tail.data_loss
        assert tail.trouble is None  # not a reason why nothing arrives: LiveLog.data_loss and the badge show it
    finally:
        tail.close()
