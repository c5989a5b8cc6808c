"""``ai.tail``: the live view of a followed topic, against the session's tansu broker while a producer writes."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

import agent_inspect as ai
from agent_inspect.widgets import KeyHistory, KeyTimeline, LiveKeyHistory, LiveKeyTimeline, LiveTail

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.sources._records import make_records
from tests.support.tansu import consumer_groups, create_topic, produce_like_upstream
from tests.support.waiting import wait_until

pytestmark = pytest.mark.kafka

PARTITIONS = 2






def _timeline_records(view: LiveTail) -> int:
    pane = view.views[0]
    assert isinstance(pane, LiveKeyTimeline)
    return len(pane.timeline.records) if isinstance(pane.timeline, KeyTimeline) else 0


def test_the_view_updates_in_place_pauses_and_stops(kafka_bootstrap: str, views: list[LiveTail]) -> None:
    topic = create_topic(kafka_bootstrap, PARTITIONS)
    records = make_records(3, 6, prefix="live")  # 12 records per key
    groups = consumer_groups(kafka_bootstrap)
    view = ai.tail(f"kafka://{kafka_bootstrap}/{topic}", business_keys=["live-1"], window=100, refresh=0.05)
    views.append(view)
    assert isinstance(view, LiveTail)
    assert "live" in view.state.value and "Pause" == view.pause_button.description
    assert "waiting for records" in view.views[0].message.value  # type: ignore[attr-defined]
    header = view.children[0]

    produce_like_upstream(kafka_bootstrap, topic, records[:18], num_partitions=PARTITIONS)  # keys live-0, live-1
    wait_until(lambda: "6 records in the window" in view.counter.value)  # set after the views: they show it already
    assert _timeline_records(view) == 6 and "last update" in view.counter.value
    first_timeline = view.views[0].timeline  # type: ignore[attr-defined]
    history = view.views[2]
    assert isinstance(history, LiveKeyHistory) and isinstance(history.history, KeyHistory)
    first_history = history.history
    assert first_history.total == 3  # 6 records of live-1 fold into one line per action execution
    first_history.expand(0)
    produce_like_upstream(kafka_bootstrap, topic, records[18:24], num_partitions=PARTITIONS)
    wait_until(lambda: "12 records in the window" in view.counter.value)
    assert _timeline_records(view) == 12
    assert view.views[0].timeline is not first_timeline  # type: ignore[attr-defined]
    assert view.children[0] is header and list(view.children[1:4]) == view.views  # updated in place
    assert history.history is first_history and first_history.total == 6  # the same history widget, grown
    assert "0" in first_history.details  # the line the user opened stays open
    assert "of key <code>live-1</code> in the window" in view.views[1].title.value  # type: ignore[attr-defined]

    view.pause_button.click()
    assert "paused" in view.state.value and view.pause_button.description == "Resume"
    time.sleep(0.5)
    shown = view.views[0].timeline  # type: ignore[attr-defined]
    produce_like_upstream(kafka_bootstrap, topic, make_records(3, 8, prefix="live")[24:],  # 8 more of live-1
                          num_partitions=PARTITIONS)
    time.sleep(1.5)
    assert view.views[0].timeline is shown and _timeline_records(view) == 12  # type: ignore[attr-defined]
    view.pause_button.click()
    assert "live" in view.state.value
    wait_until(lambda: _timeline_records(view) == 20)

    view.stop_button.click()
    assert "stopped" in view.state.value
    assert view.pause_button.disabled and view.stop_button.disabled
    assert not view.live.alive
    assert consumer_groups(kafka_bootstrap) == groups


def test_inspect_of_a_live_log_is_the_live_view(kafka_bootstrap: str, views: list[LiveTail]) -> None:
    topic = create_topic(kafka_bootstrap, PARTITIONS)
    live = ai.log.follow(f"kafka://{kafka_bootstrap}/{topic}", window=10)
    view = ai.inspect(live)
    views.append(view)
    assert isinstance(view, LiveTail) and view.live is live
    view.close()  # closing the widget stops following
    assert live.state == "stopped" and not live.alive


def test_tail_of_a_file_says_it_needs_kafka() -> None:
    with pytest.raises(ai.SourceError, match="tail follows Kafka topics only"):
        ai.tail("sample_logs/production.jsonl")


def test_a_failure_shows_escaped_in_the_badge(kafka_bootstrap: str, views: list[LiveTail]) -> None:
    topic = create_topic(kafka_bootstrap, PARTITIONS)
    view = ai.tail(f"kafka://{kafka_bootstrap}/{topic}", window=10)
    views.append(view)

    def broken() -> Any:
        raise ai.SourceError("<img src=x onerror=alert(1)> broker said no")

    view.live._follower.poll = broken  # type: ignore[attr-defined, method-assign]
    wait_until(lambda: view.live.state == "failed")
    wait_until(lambda: "stopped by an error" in view.state.value)
    assert "<img" not in view.state.value and "&lt;img src=x" in view.state.value
    assert view.pause_button.disabled


def test_without_a_key_the_panes_keep_the_first_window_s_most_affected_key(kafka_bootstrap: str,
                                                                           views: list[LiveTail]) -> None:
    topic = create_topic(kafka_bootstrap, PARTITIONS)
    view = ai.tail(f"kafka://{kafka_bootstrap}/{topic}", window=200, refresh=0.05)
    views.append(view)
    produce_like_upstream(kafka_bootstrap, topic, make_records(1, 3, prefix="first"), num_partitions=PARTITIONS)
    wait_until(lambda: "6 records in the window" in view.counter.value)
    produce_like_upstream(kafka_bootstrap, topic, make_records(1, 9, prefix="second"), num_partitions=PARTITIONS)
    wait_until(lambda: "24 records in the window" in view.counter.value)
    timeline, divergences, history = view.views
    assert timeline.key == divergences.key == history.key == "first-0"  # type: ignore[attr-defined]
    assert "first-0" in timeline.timeline.title.value  # type: ignore[attr-defined]


def test_running_the_cell_again_stops_the_previous_tail(kafka_bootstrap: str, views: list[LiveTail]) -> None:
    topic = create_topic(kafka_bootstrap, PARTITIONS)
    url = f"kafka://{kafka_bootstrap}/{topic}"
    first = ai.tail(url, business_keys=["k-1"], window=10)
    views.append(first)
    other_keys = ai.tail(url, business_keys=["k-2"], window=10)
    views.append(other_keys)
    again = ai.tail(url, business_keys=["k-1"], window=10)
    views.append(again)
    assert first.live.state == "stopped" and not first.live.alive and "stopped" in first.state.value
    assert other_keys.live.state == "live" and again.live.state == "live"


def test_tail_takes_the_views_its_panes_document(kafka_bootstrap: str, views: list[LiveTail]) -> None:
    # LiveKeyTimeline & co. say "a view for ai.tail(..., views=[view])": tail passes them on
    topic = create_topic(kafka_bootstrap, PARTITIONS)
    pane = LiveKeyTimeline("live-1")
    view = ai.tail(f"kafka://{kafka_bootstrap}/{topic}", business_keys=["live-1"], window=50, refresh=0.05,
                   views=[pane])
    views.append(view)
    assert view.views == [pane] and pane in view.children
    produce_like_upstream(kafka_bootstrap, topic, make_records(3, 2, prefix="live"), num_partitions=PARTITIONS)
    wait_until(lambda: "4 records in the window" in view.counter.value)   # live-1's 2 rounds
    assert isinstance(pane.timeline, KeyTimeline) and len(pane.timeline.records) == 4
