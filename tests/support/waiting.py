"""Waiting for something a background thread (a live log's poller, a broker) makes true."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(condition: Callable[[], bool], seconds: float = 30.0) -> None:
    """Poll ``condition`` every 50 ms; fail the test when it is still false after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition did not come true in time"
        time.sleep(0.05)
