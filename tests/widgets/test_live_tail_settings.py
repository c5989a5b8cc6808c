"""``ai.tail`` reconstructs each window under the settings every verb takes, with the answer ``ai.reconstruct`` gives."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect.widgets import KeyTimeline, LiveDivergences, LiveKeyTimeline, LiveTail
from agent_inspect.widgets._divergence import DivergenceView

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.support.tansu import create_topic, produce_like_upstream
from tests.support.waiting import wait_until

pytestmark = pytest.mark.kafka




def _write_sample(bootstrap: str, name: str) -> str:
    """A topic holding the sample's records at the sample's partitions and offsets."""
    log = ai.load(ai.samples.path(name))
    partitions = len(log.source.end_offsets)
    topic = create_topic(bootstrap, partitions)
    raw = log.raw
    each = iter(raw.partition)  # the sample's own partition of each record, in order
    produce_like_upstream(bootstrap, topic, [(k.decode(), v) for k, v in zip(raw.key, raw.value, strict=True)],
                          num_partitions=partitions, partitioner=lambda _key, _n: next(each),
                          timestamps=[t or 0 for t in raw.timestamp_ms])
    return topic


def test_the_tail_answers_what_reconstruct_answers_under_the_same_settings(kafka_bootstrap: str,
                                                                           views: list[LiveTail]) -> None:
    topic = _write_sample(kafka_bootstrap, "N04")  # original reruns B, fixed reuses all
    markers = ai.samples.markers("N04")
    view = ai.tail(f"kafka://{kafka_bootstrap}/{topic}", window=100, refresh=0.05, key="k",
                   rule="fixed", markers=markers)
    views.append(view)
    wait_until(lambda: "10 records in the window" in view.counter.value)
    expected = ai.reconstruct(view.log, rule="fixed", markers=markers)
    other = ai.reconstruct(view.log, markers=markers)
    timeline, divergences = view.views[0], view.views[1]
    assert isinstance(timeline, LiveKeyTimeline) and isinstance(timeline.timeline, KeyTimeline)
    assert isinstance(divergences, LiveDivergences)
    shown = timeline.timeline.records["status"].tolist()
    assert shown == KeyTimeline(expected, "k").records["status"].tolist()
    assert shown != KeyTimeline(other, "k").records["status"].tolist()  # the settings changed the answer
    assert divergences.count == len(DivergenceView(expected, key="k").divergences)
    # a what-if says so, in the one wording every verb uses
    assert expected.rule_label.startswith("fixed (what-if") and expected.rule_label in view.settings.value


def test_a_recovery_object_is_taken_as_the_verbs_take_it(kafka_bootstrap: str, views: list[LiveTail]) -> None:
    topic = create_topic(kafka_bootstrap, 1)
    recovery = ai.Recovery.for_log(None, rule="fixed")
    view = ai.tail(f"kafka://{kafka_bootstrap}/{topic}", window=10, recovery=recovery)
    views.append(view)
    assert "fixed (what-if" in view.settings.value
    with pytest.raises(ai.InspectError, match="unknown recovery setting"):
        ai.tail(f"kafka://{kafka_bootstrap}/{topic}", window=10, marker=[{0: 0}])  # type: ignore[call-arg]


def test_inspect_of_a_live_log_takes_the_settings_too(kafka_bootstrap: str, views: list[LiveTail]) -> None:
    topic = create_topic(kafka_bootstrap, 1)
    view = ai.inspect(ai.log.follow(f"kafka://{kafka_bootstrap}/{topic}", window=10), rule="fixed")
    views.append(view)
    assert isinstance(view, LiveTail) and view.overrides == {"rule": "fixed"}
    assert "fixed (what-if" in view.settings.value  # it was dropped: the tail showed the shipped rule's answer


class _Replay:
    """A follower that hands out the sample once, then nothing new (a stopped job: no more writes)."""

    def __init__(self, log: ai.ActionStateLog) -> None:
        self.info, self.batches = log.source, [log.raw]

    def poll(self) -> ai.raw.RawBatch:
        return self.batches.pop() if self.batches else ai.raw.RawBatch()

    def close(self) -> None:
        pass


class _PublishesDuringTheFirstDraw:
    """A view whose first draw lets the polling thread publish a window meanwhile."""

    def __init__(self, live: ai.log.LiveLog) -> None:
        self.live, self.shown = live, 0

    def show_log(self, log: ai.ActionStateLog, rule: object = None) -> None:
        if self.shown == 0 and not len(log):
            thread = threading.Thread(target=lambda: (self.live.poll_once(), self.live.publish()), daemon=True)
            thread.start()
            wait_until(lambda: len(self.live.log) > 0, 10)  # published; its listeners may still be waiting
        self.shown = len(log)


def test_a_window_published_while_the_view_is_built_is_shown() -> None:
    # a tail opened on records already written, then no new write (the job is down): the view showed
    # "0 records in the window" until the next record, as the first window came before its listener did
    sample = ai.load(ai.samples.path("N04"))
    live = ai.log.LiveLog(_Replay(sample), window=100, start=False)
    probe = _PublishesDuringTheFirstDraw(live)
    view = LiveTail(live, views=[probe])
    try:
        wait_until(lambda: probe.shown == 10, 10)
        assert "10 records in the window" in view.counter.value
    finally:
        view.close()


def test_a_window_that_starts_after_the_markers_says_what_the_rebuild_misses(kafka_bootstrap: str,
                                                                             views: list[LiveTail]) -> None:
    topic = _write_sample(kafka_bootstrap, "N04")  # 10 records; the markers start the rebuild at offset 0
    view = ai.tail(f"kafka://{kafka_bootstrap}/{topic}", window=4, refresh=0.05, key="k",
                   markers=ai.samples.markers("N04"))
    views.append(view)
    wait_until(lambda: "4 records in the window" in view.counter.value)
    # the header named the markers only: the rebuild window silently began 6 records after them
    assert "partition 0 from offset 6, the markers at 0" in view.settings.value
    assert "ai-live-window-short" in view.settings.value
    # reconstruct refuses markers below the window's start: the tail says so (it raised in the drawing thread)
    assert "cannot be reconstructed under these settings: marker offset 0 for partition 0" in view.settings.value
