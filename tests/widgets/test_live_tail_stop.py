"""``ai.tail`` stops by itself: no view on any page for a while (it idles), its comm closed, its object collected."""

from __future__ import annotations

import gc
import sys
import time
import weakref
from pathlib import Path

import pytest
from ipywidgets.widgets.widget import _instances

import agent_inspect as ai
from agent_inspect.widgets import LiveTail
from agent_inspect.widgets._style import view_style, widgets_under

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.sources._records import make_records
from tests.support.tansu import consumer_groups, create_topic, produce_like_upstream
from tests.support.waiting import wait_until

pytestmark = pytest.mark.kafka

PARTITIONS = 2




def _heartbeat(view: LiveTail) -> None:
    """What ``static/presence.js`` sends from each view on a page."""
    view._presence._handle_custom_msg({"type": "seen"}, [])


def test_a_tail_no_page_shows_idles_and_a_view_brings_it_back(kafka_bootstrap: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LiveTail, "grace", 0.5)
    topic = create_topic(kafka_bootstrap, PARTITIONS)
    records = make_records(2, 3, prefix="seen")  # 6 records per key
    groups = consumer_groups(kafka_bootstrap)
    view = ai.tail(f"kafka://{kafka_bootstrap}/{topic}", business_keys=["seen-1"], window=100, refresh=0.05)
    try:
        follower = view.live._follower
        for _ in range(8):  # a page showing it keeps it polling past its grace
            _heartbeat(view)
            time.sleep(0.1)
        assert view.live.state == "live" and not follower.suspended  # type: ignore[attr-defined]

        wait_until(lambda: view.live.state == "idle")  # no heartbeat for `grace` seconds
        wait_until(lambda: follower.suspended)  # type: ignore[attr-defined]
        wait_until(lambda: "idle" in view.state.value)
        produce_like_upstream(kafka_bootstrap, topic, records, num_partitions=PARTITIONS)
        time.sleep(1.0)
        assert view.live.count == 0  # nothing read while nobody looks

        # a view appears again (the notebook reopened) and keeps beating
        wait_until(lambda: _heartbeat(view) is None and "6 records in the window" in view.counter.value)
        _heartbeat(view)
        assert "live" in view.state.value and not follower.suspended  # type: ignore[attr-defined]
    finally:
        view.close()
    assert follower.closed and consumer_groups(kafka_bootstrap) == groups  # type: ignore[attr-defined]


def test_the_front_end_closing_the_comm_stops_the_tail(kafka_bootstrap: str) -> None:
    topic = create_topic(kafka_bootstrap, PARTITIONS)
    view = ai.tail(f"kafka://{kafka_bootstrap}/{topic}", window=10)
    live = view.live
    assert view.comm is not None
    view.comm.handle_close({"content": {"comm_id": view.comm.comm_id, "data": {}}})  # a comm_close from the page
    assert live.state == "stopped" and not live.alive and live._follower.closed  # type: ignore[attr-defined]
    assert view.comm is None and view._presence.comm is None


def test_a_closed_tail_is_collected_with_its_live_log(kafka_bootstrap: str) -> None:
    topic = create_topic(kafka_bootstrap, PARTITIONS)
    view = ai.tail(f"kafka://{kafka_bootstrap}/{topic}", window=10)
    live_ref, view_ref = weakref.ref(view.live), weakref.ref(view)
    thread = view.live._thread
    under = {widget.model_id for widget in widgets_under(view)}
    style = view_style()
    assert style in view.children and style.model_id not in under and len(under) > 10
    view.close()
    assert style.model_id in _instances                              # the shared stylesheet stays for other views
    assert not under & set(_instances)                               # the panes, buttons, layouts: all closed
    del view
    gc.collect()
    assert view_ref() is None and live_ref() is None  # no callback or registry keeps either alive
    assert thread is not None and not thread.is_alive()


@pytest.mark.parametrize("pane", ["timeline", "divergences"])
def test_a_pane_rebuilt_on_every_refresh_leaves_no_widget_behind(pane: str) -> None:
    """A live pane draws each window anew: the old view's models (charts, tables, layouts) are closed with it."""
    from agent_inspect.widgets import LiveDivergences, LiveKeyTimeline

    log = ai.load(ai.samples.path("production"))
    view = (LiveKeyTimeline if pane == "timeline" else LiveDivergences)("user-0019")
    view.show_log(log)
    models = len(_instances)
    for _ in range(3):
        view.show_log(log)
    assert len(_instances) == models
