"""``ai.explain`` of a ``kafka://`` source waits for its broker as long as ``timeout=`` says, as ``ai.diff`` does:
a broker that never answers fails within seconds, not after the loader's default 10."""

from __future__ import annotations

import time

import pytest

import agent_inspect as ai
from agent_inspect import SourceError


def test_a_silent_broker_fails_within_the_timeout(silent_peer: int) -> None:
    start = time.monotonic()
    with pytest.raises(SourceError) as raised:
        ai.explain(f"kafka://127.0.0.1:{silent_peer}/t", "k", 0, "a", timeout=0.7)
    took = time.monotonic() - start
    assert took < 5, took
    assert "0.7" in str(raised.value) and "\n" not in str(raised.value), raised.value
