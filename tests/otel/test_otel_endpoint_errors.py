"""An endpoint that answers but does not take the spans: one line that says what it answered.

The SDK's exporter logged its reason ("code: 404, reason: Not Found", each retry of a 503) as lines of their own
and the error said "see the warning above"; a silent endpoint's timeout was called a refusal.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import opentelemetry.sdk  # noqa: F401 - installed by the test command: a missing SDK fails the run
import pytest

import agent_inspect as ai
from agent_inspect.cli import main

SPAN = {"name": "action", "trace_id": "1" * 32, "span_id": "2" * 16, "start_ns": 1, "end_ns": 2}


@pytest.fixture()
def not_found() -> Iterator[str]:
    """An HTTP server that answers every POST with 404."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/v1/traces"
    server.shutdown()
    server.server_close()



def test_the_error_says_what_the_endpoint_answered(not_found: str, capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ai.InspectError, match=r"did not take the spans \(.*code: 404, reason: Not Found\)") as info:
        ai.sources.export_spans([SPAN], not_found, resource={"service.name": "t"})
    assert "\n" not in str(info.value) and "above" not in str(info.value)
    assert capfd.readouterr().err == ""   # the exporter's own lines are in the error, not printed


def test_the_cli_says_it_in_one_line(not_found: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["otel", str(ai.samples.path("G01")), "--markers", str(ai.samples.path("G01", "markers")),
                 "--endpoint", not_found])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "404" in err and "-o spans.json" in err


def test_a_silent_endpoint_is_a_timeout_not_a_refusal(silent_peer: int) -> None:
    with pytest.raises(ai.InspectError, match="did not take the spans .*timeout") as info:
        ai.sources.export_spans([SPAN], f"http://127.0.0.1:{silent_peer}", resource={"service.name": "t"},
                                timeout=1)
    assert "refused" not in str(info.value)


def test_the_exporters_logging_is_left_as_it_was(not_found: str) -> None:
    import logging

    logger = logging.getLogger("opentelemetry.exporter.otlp.proto.http")
    before = (list(logger.handlers), logger.propagate)
    with pytest.raises(ai.InspectError):
        ai.sources.export_spans([SPAN], not_found, resource={"service.name": "t"})
    assert (list(logger.handlers), logger.propagate) == before
