"""Fixtures: a real log whose keys, event types, attributes, memory paths and function ids carry script probes; the
live tails a test opens, closed at its end."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from _widget_logs import probe_history

import agent_inspect as ai

if TYPE_CHECKING:
    from agent_inspect.widgets import LiveTail


@pytest.fixture(scope="module")
def probe_log() -> Any:
    return probe_history().log()


@pytest.fixture(scope="module")
def probe_result(probe_log: Any) -> Any:
    return ai.reconstruct(probe_log, rule="fixed")


@pytest.fixture
def views() -> Iterator[list[LiveTail]]:
    """The live tails a test opens: each is closed at the end whatever happens."""
    made: list[LiveTail] = []
    yield made
    for view in made:
        view.close()
