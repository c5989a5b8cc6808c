"""The URL ``check_export`` returns skips the probe down one call chain only: kept and reused later, after its
endpoint has gone, it fails fast again with the one line (before: the mark rode on the string for ever, and the
export went ahead unprobed)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import opentelemetry.sdk  # noqa: F401 - installed by the test command: a missing SDK fails the run
import pytest

import agent_inspect as ai
from agent_inspect.sources import _otlp, check_export, export_spans


class _Quiet(BaseHTTPRequestHandler):
    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[tuple[str, ThreadingHTTPServer]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_checked_url_reused_after_its_endpoint_went_fails_fast(
        endpoint: tuple[str, ThreadingHTTPServer], monkeypatch: pytest.MonkeyPatch) -> None:
    url, server = endpoint
    checked = check_export(endpoint=url)
    assert checked == f"{url}/v1/traces"
    server.shutdown()
    server.server_close()                # the endpoint is gone
    later = time.monotonic() + 3600.0
    monkeypatch.setattr(_otlp, "_clock", lambda: later, raising=False)     # an hour later, the same value reused
    with pytest.raises(ai.InspectError, match=r"cannot reach the OpenTelemetry endpoint .*/v1/traces"):
        export_spans([], checked, resource={})
    with pytest.raises(ai.InspectError, match=r"cannot reach the OpenTelemetry endpoint"):
        ai.to_otel(ai.load(ai.samples.path("G01")), endpoint=checked, markers=ai.samples.markers("G01"))
