"""``ai.tail`` while its broker is down: it carries on (librdkafka reconnects) and its badge says why nothing comes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect.sources import _tail

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.sources._records import make_records
from tests.support.tansu import create_topic, produce_like_upstream, start_tansu
from tests.support.waiting import wait_until

pytestmark = pytest.mark.kafka


def test_a_tail_whose_broker_goes_down_says_so_and_clears_when_it_is_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_tail, "TROUBLE_FOR", 2.0)  # a client error older than this no longer counts
    broker = start_tansu(log_path=tmp_path / "tansu.log")  # its own broker: this test stops it
    view = None
    try:
        topic = create_topic(broker.bootstrap, 1)
        produce_like_upstream(broker.bootstrap, topic, make_records(1, 2), num_partitions=1)
        view = ai.tail(f"kafka://{broker.bootstrap}/{topic}", window=10, refresh=0.05)
        wait_until(lambda: "4 records in the window" in view.counter.value)
        assert view.live.warning is None and "refused" not in view.state.value
        broker.stop()
        # it stayed "● live" with no word while every reconnect was refused
        wait_until(lambda: "refused" in view.state.value)
        assert view.live.state == "live" and "ai-live-trouble" in view.state.value
        assert "retrying" in view.state.value and view.live.alive
        assert len(view.live._follower._errors) <= _tail.ERRORS_KEPT  # type: ignore[attr-defined]
        broker = start_tansu(log_path=tmp_path / "tansu.log", port=broker.port)
        wait_until(lambda: view.live.warning is None and "refused" not in view.state.value)
    finally:
        if view is not None:
            view.close()
        broker.stop()
