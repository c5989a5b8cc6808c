"""Fixtures: a real log whose keys, event types, attributes, memory paths and function ids carry script probes."""

from __future__ import annotations

from typing import Any

import pytest
from _widget_logs import probe_history

import agent_inspect as ai


@pytest.fixture(scope="module")
def probe_log() -> Any:
    return probe_history().log()


@pytest.fixture(scope="module")
def probe_result(probe_log: Any) -> Any:
    return ai.reconstruct(probe_log, rule="fixed")
