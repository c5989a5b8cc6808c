"""A Kafka address where something else answers (an HTTP server, a listener that drops plain-text Kafka) is told
apart from a refused connection: "refused the connection ... check that the broker is running" sent the user to
start a broker that was running, on another port or behind TLS."""

from __future__ import annotations

import http.server
import socket
import struct
import threading
from collections.abc import Iterator

import pytest

import agent_inspect as ai
from agent_inspect.cli import main
from tests.support.tansu import free_port


class _AnswersAtOnce(http.server.BaseHTTPRequestHandler):
    """An HTTP server that answers a request it cannot parse with 400 at once, as nginx does (http.server's own
    handler waits for the end of a request line, which a Kafka request never sends)."""

    def handle_one_request(self) -> None:
        self.request.recv(1024)
        self.request_version, self.requestline, self.command = "HTTP/1.1", "", None
        self.send_error(400)
        self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass   # librdkafka hangs up before the 400 is written: a reset, not the test's concern


@pytest.fixture
def http_port() -> Iterator[int]:
    server = _QuietServer(("127.0.0.1", 0), _AnswersAtOnce)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def dropping_port() -> Iterator[int]:
    """A listener that reads the first request and resets the connection, as a TLS listener does with plain text."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.recv(1024)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))   # close with a reset
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()
        thread.join(5)


def test_an_http_server_is_not_reported_as_a_refused_connection(http_port: int, capsys) -> None:
    assert main(["summary", f"kafka://127.0.0.1:{http_port}/topic", "--timeout", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"at 127.0.0.1:{http_port} is not a Kafka broker" in err and "Invalid response size" in err, err
    assert "refused" not in err and "receive.message.max.bytes" not in err and "broker is running" not in err
    assert "security.protocol" in err and "config=" in err       # the command line cannot set it: Python can


def test_python_names_the_config_that_reaches_a_tls_or_sasl_listener(http_port: int) -> None:
    with pytest.raises(ai.BrokerUnreachable, match="is not a Kafka broker") as info:
        ai.load_kafka(f"127.0.0.1:{http_port}", "topic", timeout=2, progress=False)
    assert "config={'security.protocol': …}" in str(info.value) and "\n" not in str(info.value)


def test_a_listener_that_drops_plain_kafka_is_not_a_refused_connection(dropping_port: int) -> None:
    with pytest.raises(ai.BrokerUnreachable, match="is not a Kafka broker") as info:
        ai.load_kafka(f"127.0.0.1:{dropping_port}", "topic", timeout=2, progress=False)
    assert "refused" not in str(info.value)


def test_a_closed_port_is_still_a_refused_connection(capsys) -> None:
    port = free_port()
    assert main(["summary", f"kafka://127.0.0.1:{port}/topic", "--timeout", "2"]) == 2
    err = capsys.readouterr().err
    assert f"Kafka at 127.0.0.1:{port} refused the connection" in err and "not a Kafka broker" not in err, err
