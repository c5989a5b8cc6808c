"""``ai.tail`` in JupyterLab: the live view updates in place while a producer writes, pauses and stops."""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import expect

from tests.sources._records import make_records
from tests.support.tansu import consumer_groups, create_topic, produce_like_upstream

pytestmark = [pytest.mark.browser, pytest.mark.kafka]

KERNEL = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
PARTITIONS = 2


def _text(page: object, css: str) -> str:
    return page.locator(css).first.inner_text()


def _wait_text(page: object, css: str, text: str, seconds: float = 90.0) -> None:
    """Wait until the first ``css`` element reads ``text`` (the first update also pays the views' imports)."""
    deadline = time.monotonic() + seconds
    while text not in (shown := _text(page, css)):
        assert time.monotonic() < deadline, f"{css} still reads {shown!r}, not {text!r}"
        time.sleep(0.1)


def test_the_live_view_updates_pauses_and_stops_in_the_browser(lab_page, lab_root: Path, kafka_bootstrap: str,
                                                               artifacts: Path) -> None:
    topic = create_topic(kafka_bootstrap, PARTITIONS)
    records = make_records(2, 6, prefix="lab")  # 12 records per key
    groups = consumer_groups(kafka_bootstrap)
    cells = ["import agent_inspect as ai\n"
             f"view = ai.tail('kafka://{kafka_bootstrap}/{topic}', business_keys=['lab-1'], window=100, refresh=0.2)\n"
             "view"]
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells], metadata=KERNEL),
                   lab_root / "live_tail.ipynb")
    lab_page.open("live_tail.ipynb")
    lab_page.run_all()
    page = lab_page.page
    page.locator(".ai-live-tail .ai-live-state").first.wait_for()
    assert "live" in _text(page, ".ai-live-state")
    assert "0 records in the window" in _text(page, ".ai-live-counter")

    # records written after the cell finished show up in the same output, without running anything
    produce_like_upstream(kafka_bootstrap, topic, records[:18], num_partitions=PARTITIONS)  # lab-1: 6 records
    _wait_text(page, ".ai-live-counter", "6 records in the window")
    page.locator(".ai-live-tail .ai-timeline .js-plotly-plot").first.wait_for()
    # the counter changes after the views, so they show the counted window already
    assert "timeline of key lab-1 · 6 records" in _text(page, ".ai-live-tail .ai-timeline .ai-title")
    produce_like_upstream(kafka_bootstrap, topic, records[18:], num_partitions=PARTITIONS)  # 6 more of lab-1
    _wait_text(page, ".ai-live-tail .ai-timeline .ai-title", "12 records")
    _wait_text(page, ".ai-live-counter", "12 records in the window", 10)
    page.locator(".ai-live-tail .ai-history").first.wait_for()  # the key's compact history, updated in place
    assert page.locator(".ai-live-tail").count() == 1  # updated in place, not a new output

    page.locator(".ai-live-pause button, button.ai-live-pause").first.click()
    _wait_text(page, ".ai-live-state", "paused", 30)
    assert "Resume" in _text(page, ".ai-live-pause")
    produce_like_upstream(kafka_bootstrap, topic, make_records(2, 8, prefix="lab")[24:],  # 8 more of lab-1
                          num_partitions=PARTITIONS)
    time.sleep(2.0)
    assert "12 records in the window" in _text(page, ".ai-live-counter")  # paused: no update

    page.locator(".ai-live-pause").first.click()  # resume
    _wait_text(page, ".ai-live-counter", "20 records in the window")
    page.locator(".ai-live-stop").first.click()
    _wait_text(page, ".ai-live-state", "stopped", 30)
    expect(page.locator(".ai-live-stop").first).to_be_disabled(timeout=10_000)   # its own message, may come later
    page.screenshot(path=str(artifacts / "live-tail.png"))
    assert consumer_groups(kafka_bootstrap) == groups
    assert lab_page.errors_in_outputs() == []
