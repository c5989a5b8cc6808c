"""Session fixtures shared by every test package: one real tansu broker for the whole session."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `tests.support` must import however pytest was started
    sys.path.insert(0, str(REPO))

from tests.support.tansu import Broker, start_tansu  # noqa: E402


@pytest.fixture(scope="session")
def tansu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """A running tansu broker on 127.0.0.1 (in-memory storage), stopped by PID at the end."""
    broker = start_tansu(log_path=tmp_path_factory.mktemp("tansu") / "tansu.log")
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(tansu: Broker) -> str:
    return tansu.bootstrap
