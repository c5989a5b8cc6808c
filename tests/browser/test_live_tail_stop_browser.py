"""``ai.tail`` in JupyterLab stops by itself: its output deleted (it idles, consumer closed), its cell run again."""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest

from tests.support.tansu import consumer_groups, create_topic

pytestmark = [pytest.mark.browser, pytest.mark.kafka]

KERNEL = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}


def _until(lab_page: object, check: str, seconds: float = 60.0) -> None:
    """Wait until the kernel code ``assert check`` passes."""
    deadline = time.monotonic() + seconds
    while lab_page.execute(f"assert {check}") != "ok":
        assert time.monotonic() < deadline, f"still not true: {check}"
        time.sleep(0.3)


def test_a_tail_whose_output_is_gone_idles_and_one_run_again_stops(lab_page, lab_root: Path,
                                                                    kafka_bootstrap: str) -> None:
    topic = create_topic(kafka_bootstrap, 2)
    groups = consumer_groups(kafka_bootstrap)
    cells = ["import agent_inspect as ai\n"
             "from agent_inspect.widgets import LiveTail\n"
             "LiveTail.grace, LiveTail.heartbeat = 3.0, 0.5  # seconds: short, for the test\n"
             "tails = []",
             f"view = ai.tail('kafka://{kafka_bootstrap}/{topic}', business_keys=['lab-1'], window=100)\n"
             "tails.append(view.live)\n"
             "view"]
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells], metadata=KERNEL),
                   lab_root / "live_tail_stop.ipynb")
    lab_page.open("live_tail_stop.ipynb")
    lab_page.run_all()
    page = lab_page.page
    page.locator(".ai-live-tail .ai-live-state", has_text="live").first.wait_for()

    time.sleep(5.0)  # longer than the grace: the view's heartbeats keep the tail polling
    assert lab_page.execute("assert tails[0].state == 'live' and not tails[0]._follower.suspended") == "ok"

    page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    assert page.locator(".ai-live-tail").count() == 0
    # no view on the page: after the grace the tail idles and its consumer closes
    _until(lab_page, "tails[0].state == 'idle' and tails[0]._follower.suspended and tails[0].alive")

    # the tail's cell again: the new tail replaces the old one, which stops for good
    page.evaluate("() => { const nb = window.jupyterapp.shell.currentWidget.content; nb.activeCellIndex = 1; "
                  "return window.jupyterapp.commands.execute('notebook:run-cell'); }")
    page.locator(".ai-live-tail .ai-live-state", has_text="live").first.wait_for()
    _until(lab_page, "len(tails) == 2 and tails[1].state == 'live'")
    _until(lab_page, "tails[0].state == 'stopped' and not tails[0].alive and tails[0]._follower.closed", 10)
    assert consumer_groups(kafka_bootstrap) == groups
    assert lab_page.errors_in_outputs() == []
