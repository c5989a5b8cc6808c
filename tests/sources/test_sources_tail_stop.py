"""A followed topic stops by itself: when nothing refers to its live log, and (idling) when its lease runs out."""

from __future__ import annotations

import gc
import time
import weakref

import pytest

from agent_inspect.log import LiveLog, follow
from tests.sources._records import make_records
from tests.support.tansu import consumer_groups, create_topic, produce_like_upstream
from tests.support.waiting import wait_until

pytestmark = pytest.mark.kafka

PARTITIONS = 2




def test_a_live_log_nobody_refers_to_closes_its_consumer_and_its_thread_ends(kafka_bootstrap: str) -> None:
    topic = create_topic(kafka_bootstrap, PARTITIONS)
    groups = consumer_groups(kafka_bootstrap)
    live = follow(f"kafka://{kafka_bootstrap}/{topic}", window=10, refresh=0.05)
    got: list[int] = []
    live.add_listener(lambda log: got.append(len(log)))  # a listener that does not refer to the log
    produce_like_upstream(kafka_bootstrap, topic, make_records(1, 2, prefix="gc"), num_partitions=PARTITIONS)
    wait_until(lambda: bool(got) and got[-1] == 4)
    follower, thread, ref = live._follower, live._thread, weakref.ref(live)
    assert thread is not None and thread.is_alive()

    del live
    # the polling thread holds it only during one turn (a bounded poll), never between turns
    wait_until(lambda: gc.collect() is not None and ref() is None, 5)
    wait_until(lambda: not thread.is_alive())
    assert follower.closed  # type: ignore[attr-defined]
    assert consumer_groups(kafka_bootstrap) == groups


def test_a_lapsed_lease_idles_with_the_consumer_closed_and_a_new_one_reads_on(kafka_bootstrap: str) -> None:
    topic = create_topic(kafka_bootstrap, PARTITIONS)
    records = make_records(2, 4, prefix="lease")  # 16 records
    groups = consumer_groups(kafka_bootstrap)
    live: LiveLog = follow(f"kafka://{kafka_bootstrap}/{topic}", window=100, refresh=0.05)
    try:
        assert live.state == "live"  # never leased: polls until stopped
        produce_like_upstream(kafka_bootstrap, topic, records[:8], num_partitions=PARTITIONS)
        wait_until(lambda: len(live.log) == 8)
        states: list[str] = []
        live.add_listener(lambda _log: states.append(live.state))

        live.lease(0.2)
        wait_until(lambda: live.state == "idle" and live._follower.suspended)  # type: ignore[attr-defined]
        assert "idle" in states  # the listeners heard of it (a view redraws its badge)
        seen = live.count
        produce_like_upstream(kafka_bootstrap, topic, records[8:], num_partitions=PARTITIONS)
        time.sleep(1.0)
        assert live.count == seen == 8 and live.alive  # idle: nothing read, the thread waits

        live.lease(30)
        assert live.state == "live"
        wait_until(lambda: len(live.log) == 16)  # reopened where it stopped: nothing skipped, nothing twice
        assert live.count == 16 and not live._follower.suspended  # type: ignore[attr-defined]
        assert sorted(zip(live.log.raw.partition, live.log.raw.offset)) == sorted(
            set(zip(live.log.raw.partition, live.log.raw.offset)))
    finally:
        live.stop()
    assert live._follower.closed and not live.alive  # type: ignore[attr-defined]
    assert consumer_groups(kafka_bootstrap) == groups
