"""Session fixtures shared by every test package: one real tansu broker for the whole session."""

from __future__ import annotations

import socket
import sys
import threading
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


@pytest.fixture()
def silent_peer() -> Iterator[int]:
    """A TCP listener on 127.0.0.1 that accepts connections and never answers: a port whose service hangs."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1]
    server.close()
    for conn in held:
        conn.close()
