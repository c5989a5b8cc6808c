"""Several views of one live log: closing one leaves the others live; the badge says what the tail could not read."""

from __future__ import annotations

import types

import agent_inspect as ai
from agent_inspect.log import LiveLog
from agent_inspect.raw import RawBatch
from agent_inspect.widgets import LiveKeyTimeline, LiveTail


def _follower(log: ai.ActionStateLog) -> types.SimpleNamespace:
    """A follower handing out the sample once (``ai.tail`` reads Kafka)."""
    batches = [log.raw]
    follower = types.SimpleNamespace(info=log.source, closed=False, data_loss=None,
                                     poll=lambda: batches.pop() if batches else RawBatch())

    def close() -> None:
        follower.closed = True
    follower.close = close
    return follower


def test_closing_one_of_two_views_leaves_the_other_live(probe_log: ai.ActionStateLog) -> None:
    follower = _follower(probe_log)
    live = LiveLog(follower, window=500, start=False)
    first, second = ai.inspect(live), ai.inspect(live)  # the same live log shown twice
    assert isinstance(first, LiveTail) and isinstance(second, LiveTail)
    try:
        first.close()
        first.close()  # a second close of one view does not count as the other's
        assert live.state == "live" and not follower.closed
        live.poll_once()
        live.publish()
        assert f"{len(probe_log):,} records in the window" in second.counter.value  # the open view still updates
        assert "live" in second.state.value
    finally:
        second.close()
    assert live.state == "stopped" and follower.closed  # the last view closed: the tail stops


def test_stop_in_one_view_stops_the_tail_in_every_view(probe_log: ai.ActionStateLog) -> None:
    live = LiveLog(_follower(probe_log), window=500, start=False)
    first, second = (LiveTail(live, views=[LiveKeyTimeline()]) for _ in range(2))
    first.stop()
    assert live.state == "stopped" and "stopped" in second.state.value
    first.close(), second.close()


def test_the_badge_says_which_records_the_tail_could_not_read(probe_log: ai.ActionStateLog) -> None:
    follower = _follower(probe_log)
    live = LiveLog(follower, window=500, start=False)
    view = LiveTail(live, views=[LiveKeyTimeline()])
    try:
        follower.data_loss = "records of topic 't' were gone before the tail read them: partition 0 offset <5>"
        live._step(0.0)  # one turn of the polling thread
        assert live.data_loss == follower.data_loss
        assert "partition 0 offset &lt;5&gt;" in view.state.value  # escaped, in the badge
    finally:
        view.close()
