"""Following a topic live (``ai.log.follow``, the model of ``ai.tail``) against the session's tansu broker."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Iterator

import pytest

import agent_inspect as ai
from agent_inspect.log import ActionStateLog, LiveLog, follow
from agent_inspect.log._live import window_bounds
from agent_inspect.raw import RawBatch
from tests.sources._records import make_records
from tests.support.tansu import consumer_groups, create_topic, produce_like_upstream
from tests.support.waiting import wait_until

pytestmark = pytest.mark.kafka

PARTITIONS = 3
T0 = 1_700_000_000_000




@pytest.fixture
def stopped() -> Iterator[list[LiveLog]]:
    """Live logs a test starts; each is stopped at the end whatever happens."""
    lives: list[LiveLog] = []
    yield lives
    for live in lives:
        live.stop()


def _produce(bootstrap: str, topic: str, records: list[tuple[str, bytes | None]], first_ts: int) -> None:
    produce_like_upstream(bootstrap, topic, records, num_partitions=PARTITIONS,
                          timestamps=range(first_ts, first_ts + len(records)))


def test_records_appear_while_a_producer_writes_and_the_window_holds(kafka_bootstrap: str,
                                                                    stopped: list[LiveLog]) -> None:
    topic = create_topic(kafka_bootstrap, PARTITIONS)
    records = make_records(6, 5, prefix="tail")  # 60 records
    _produce(kafka_bootstrap, topic, records[:12], T0)
    groups = consumer_groups(kafka_bootstrap)
    live = follow(f"kafka://{kafka_bootstrap}/{topic}", window=25, refresh=0.1)
    stopped.append(live)
    sizes: list[int] = []
    live.add_listener(lambda log: sizes.append(len(log)))
    wait_until(lambda: live.count == 12 and len(live.log) == 12)  # the backlog: at most 25 per partition

    writer = threading.Thread(target=_produce, args=(kafka_bootstrap, topic, records[12:], T0 + 12), daemon=True)
    writer.start()
    wait_until(lambda: len(live.log) == 25 and live.count > 12)  # updates arrive while the producer still writes
    writer.join(60)
    wait_until(lambda: live.count == 60)
    wait_until(lambda: sorted(_ts(live.log)) == list(range(T0 + 35, T0 + 60)))  # the newest 25
    assert max(sizes) == 25 and len(sizes) >= 2
    assert live.state == "live" and live.updated is not None

    # decoded by the same builder as ai.load: the window's rows equal the loaded log's rows
    whole = ai.load_kafka(kafka_bootstrap, topic, progress=False).records
    cols = ["partition", "offset", "state_key", "business_key", "seq", "value_format", "completed",
            "task_event_type", "output_event_count", "error"]
    window = live.log.records[cols].sort_values(["partition", "offset"]).reset_index(drop=True)
    same = whole.merge(window[["partition", "offset"]], on=["partition", "offset"])[cols]
    assert window.astype(str).equals(same.sort_values(["partition", "offset"]).reset_index(drop=True).astype(str))

    live.stop()
    assert live.state == "stopped" and not live.alive
    assert live._follower.closed  # type: ignore[attr-defined]
    assert consumer_groups(kafka_bootstrap) == groups  # read-only: no consumer group left behind


def _ts(log: ActionStateLog) -> list[int]:
    return [int(t) for t in log.raw.timestamp_ms if t is not None]


def test_pause_stops_updates_and_resume_catches_up(kafka_bootstrap: str, stopped: list[LiveLog]) -> None:
    topic = create_topic(kafka_bootstrap, PARTITIONS)
    records = make_records(3, 4, prefix="pause")  # 24 records
    live = follow(f"kafka://{kafka_bootstrap}/{topic}", window=100, refresh=0.05)
    stopped.append(live)
    _produce(kafka_bootstrap, topic, records[:8], T0)
    wait_until(lambda: len(live.log) == 8)

    live.pause()
    assert live.state == "paused"
    time.sleep(0.5)  # a poll under way when pausing may still finish
    seen = live.count
    updates: list[ActionStateLog] = []
    live.add_listener(updates.append)
    _produce(kafka_bootstrap, topic, records[8:], T0 + 8)
    time.sleep(1.5)
    assert live.count == seen == 8 and len(live.log) == 8
    assert all(len(u) == 8 for u in updates)  # only state notices, no new window

    live.resume()
    assert live.state == "live"
    wait_until(lambda: len(live.log) == 24)
    assert live.count == 24


@pytest.mark.parametrize("keys", [["keys-2"], "keys-2"], ids=["list", "lone-string"])
def test_business_keys_keep_only_their_records(kafka_bootstrap: str, stopped: list[LiveLog],
                                               keys: list[str] | str) -> None:
    """A lone string is one key, as the loaders take it (it was searched character by character)."""
    topic = create_topic(kafka_bootstrap, PARTITIONS)
    records = make_records(6, 2, prefix="keys")
    _produce(kafka_bootstrap, topic, records, T0)
    live = follow(f"kafka://{kafka_bootstrap}/{topic}", business_keys=keys, window=100, refresh=0.05)
    stopped.append(live)
    wait_until(lambda: len(live.log) == 4)
    time.sleep(0.5)
    assert set(live.log.records["business_key"]) == {"keys-2"} and len(live.log) == 4


def test_a_time_window_starts_at_its_time_and_keeps_only_newer_records(kafka_bootstrap: str,
                                                                       stopped: list[LiveLog]) -> None:
    topic = create_topic(kafka_bootstrap, PARTITIONS)
    now = int(time.time() * 1000)
    records = make_records(4, 2, prefix="since")  # 16 records: the first 8 three hours old, the rest fresh
    produce_like_upstream(kafka_bootstrap, topic, records, num_partitions=PARTITIONS,
                          timestamps=[now - 3 * 3_600_000 + i for i in range(8)] + [now + i for i in range(8)])
    live = follow(f"kafka://{kafka_bootstrap}/{topic}", window="1h", refresh=0.05)
    stopped.append(live)
    wait_until(lambda: len(live.log) == 8)
    time.sleep(0.5)
    assert len(live.log) == 8 and min(_ts(live.log)) >= now
    # tansu answers ListOffsets by timestamp with the earliest offset, so here the old records are fetched
    # too (Kafka starts at the window's start time); either way the window keeps only the fresh ones
    assert live.count in (8, 16)
    since = follow(f"kafka://{kafka_bootstrap}/{topic}", window=dt.datetime.fromtimestamp(now / 1000 - 7200,
                                                                                           dt.UTC))
    stopped.append(since)
    wait_until(lambda: len(since.log) == 8)


def test_bad_records_stay_as_error_rows(kafka_bootstrap: str, stopped: list[LiveLog]) -> None:
    topic = create_topic(kafka_bootstrap, PARTITIONS)
    good = make_records(1, 1, prefix="bad")
    live = follow(f"kafka://{kafka_bootstrap}/{topic}", window=10, refresh=0.05)
    stopped.append(live)
    produce_like_upstream(kafka_bootstrap, topic, [*good, (good[0][0], b"not json"), ("not-a-state-key", b"{}")],
                          num_partitions=PARTITIONS, partitioner=lambda key, n: 0)
    wait_until(lambda: len(live.log) == 4)
    assert len(live.log.errors) == 2


def test_only_kafka_can_be_followed() -> None:
    with pytest.raises(ai.SourceError, match="tail follows Kafka topics only"):
        follow("sample_logs/production.jsonl")
    with pytest.raises(ai.SourceError, match="fluss:// sources cannot be followed"):
        follow("fluss://127.0.0.1:9123/db.table")


@pytest.mark.parametrize("window, message", [
    (0, "at least one record"), (True, "record count"), ("soon", "not a duration"), (-dt.timedelta(1), "positive"),
    (1.5, "float"),
])
def test_bad_windows_say_what_a_window_is(window: object, message: str) -> None:
    with pytest.raises(ai.InspectError, match=message):
        window_bounds(window)  # type: ignore[arg-type]


def test_windows_read_as_count_span_or_start() -> None:
    assert window_bounds(50) == (50, None, None)
    assert window_bounds("15min") == (None, dt.timedelta(minutes=15), None)
    naive = dt.datetime(2026, 1, 2, 3, 4)
    assert window_bounds(naive) == (None, None, naive.replace(tzinfo=dt.UTC))


class _Scripted:
    """A follower handing out prepared batches (the window logic, without a broker)."""

    def __init__(self, batches: list[list[tuple[int, int, int | None]]]) -> None:
        from agent_inspect.raw import SourceInfo

        self.info = SourceInfo(kind="kafka", location="kafka://scripted/topic", topic="topic")
        self.closed = False
        values = make_records(2, 10, prefix="scripted")
        self._batches = [[(p, o, ts, *values[(p * 7 + o) % len(values)]) for p, o, ts in b] for b in batches]

    def poll(self) -> RawBatch:
        batch = RawBatch()
        for p, o, ts, key, value in self._batches.pop(0) if self._batches else []:
            batch.append(p, o, ts, key.encode(), value)
        return batch

    def close(self) -> None:
        self.closed = True


def test_a_count_window_keeps_the_newest_records_by_time_even_out_of_order() -> None:
    follower = _Scripted([[(0, 0, 10), (1, 0, 30), (0, 1, 20)], [(1, 1, 5), (0, 2, 40)], [(1, 2, None)]])
    live = LiveLog(follower, window=3, start=False)
    for _ in range(3):
        live.poll_once()
    log = live.publish()
    assert sorted(_ts(log)) == [20, 30, 40] and len(log) == 3  # 5, 10 and the untimed record are the oldest
    assert live.count == 6 and live.state == "live"
    live.stop()
    assert follower.closed and live.state == "stopped"


def test_a_span_window_slides_with_the_clock() -> None:
    now = int(time.time() * 1000)
    follower = _Scripted([[(0, 0, now - 120_000), (0, 1, now - 1_000), (0, 2, now)]])
    live = LiveLog(follower, window=dt.timedelta(seconds=60), start=False)
    live.poll_once()
    assert sorted(_ts(live.publish())) == [now - 1_000, now]
    live.stop()
