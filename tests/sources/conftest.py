"""Session fixtures for the source tests: one real tansu broker for the whole session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.tansu import Broker, start_tansu


@pytest.fixture(scope="session")
def tansu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """A running tansu broker on 127.0.0.1 (in-memory storage), stopped by PID at the end."""
    broker = start_tansu(log_path=tmp_path_factory.mktemp("tansu") / "tansu.log")
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(tansu: Broker) -> str:
    return tansu.bootstrap
