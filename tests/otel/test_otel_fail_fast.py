"""An export that cannot arrive fails before the recovery is predicted, verified or turned into spans: an endpoint
that is not an http(s) URL or does not answer, a file in a directory that does not exist (the work came first:
on a topic that is minutes of loading and predicting before the one line)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import opentelemetry.sdk  # noqa: F401 - installed by the test command: a missing SDK fails the run
import pytest

import agent_inspect as ai
from agent_inspect.cli import main


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_: Any, **__: Any) -> Any:
        raise AssertionError("the recovery was worked out before the export was checked")

    import agent_inspect.otel
    import agent_inspect.recovery
    import agent_inspect.trace

    monkeypatch.setattr(agent_inspect.recovery, "predict", fail)
    monkeypatch.setattr(agent_inspect.trace, "verify", fail)
    monkeypatch.setattr(agent_inspect.otel, "spans_of", fail)


@pytest.mark.parametrize(("where", "says"), [
    ({"endpoint": "localhost:4318"}, "bad OpenTelemetry endpoint 'localhost:4318'"),
    ({"endpoint": f"http://127.0.0.1:{_closed_port()}/v1/traces"}, r"cannot reach the OpenTelemetry endpoint .*start the"),
    ({"path": "/nonexistent-dir-s20/spans.json"}, r"directory /nonexistent-dir-s20 does not exist"),
])
def test_an_export_that_cannot_arrive_fails_before_any_work(no_work: None, where: dict[str, Any], says: str) -> None:
    log = ai.load(ai.samples.path("G01"))
    with pytest.raises(ai.InspectError, match=says):
        ai.to_otel(log, markers=ai.samples.markers("G01"), **where)
    with pytest.raises(ai.InspectError, match=says):
        ai.to_otel(log, trace=ai.samples.path("G01", "trace"), markers=ai.samples.markers("G01"), **where)


def test_the_cli_checks_the_endpoint_before_loading(no_work: None, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import agent_inspect.log

    monkeypatch.setattr(agent_inspect.log, "load", lambda *_a, **_k: pytest.fail("loaded before the check"))
    port = _closed_port()
    assert main(["otel", str(ai.samples.path("G01")), "--endpoint", f"http://127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"cannot reach the OpenTelemetry endpoint http://127.0.0.1:{port}/v1/traces" in err


def test_settings_or_a_trace_given_with_a_finished_recovery_are_refused(tmp_path: Path) -> None:
    log = ai.load(ai.samples.path("G01"))
    pred = ai.predict(log, markers=ai.samples.markers("G01"))
    # before: written as the prediction's own (rule original, every task "unchecked"), the rule and trace dropped
    with pytest.raises(ai.InspectError, match=r"rule= would change nothing: a prediction carries its own settings.*"
                                              r"ai.predict\(log, rule=..., markers=...\)"):
        ai.to_otel(pred, path=tmp_path / "s.json", rule="fixed")
    with pytest.raises(ai.InspectError, match=r"trace= would change nothing.*ai.verify\(log, trace"):
        ai.to_otel(pred, path=tmp_path / "s.json", trace=ai.samples.path("G01", "trace"))
    assert not (tmp_path / "s.json").exists()
    assert ai.to_otel(pred, path=tmp_path / "s.json").spans == 5


def test_an_empty_source_says_it_holds_no_records(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    # before: "the log holds no root (_input_event) records to infer replay inputs from; pass a ReplayPlan ..."
    with pytest.raises(ai.InspectError, match=r"empty.jsonl holds no records.*nothing to export"):
        ai.to_otel(empty, path=tmp_path / "s.json")
    assert not (tmp_path / "s.json").exists()


class _Backend:
    """A real OTLP/HTTP receiver on 127.0.0.1 that counts connections: a probe connects and sends nothing, an
    export POSTs to /v1/traces (answered 200, as a collector does)."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        backend = self
        self.probes = self.posts = 0
        self.lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            posted = False

            def handle(self) -> None:
                super().handle()
                if not self.posted:
                    with backend.lock:
                        backend.probes += 1

            def do_POST(self) -> None:
                self.posted = True
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with backend.lock:
                    backend.posts += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def counts(self) -> tuple[int, int]:
        import time

        time.sleep(0.2)          # the last connection's handler thread finishes counting
        with self.lock:
            out = (self.probes, self.posts)
            self.probes = self.posts = 0
        return out

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def backend() -> Any:
    b = _Backend()
    yield b
    b.stop()


def test_each_entry_point_probes_the_endpoint_once(backend: _Backend, capsys: pytest.CaptureFixture[str]) -> None:
    # the CLI probed before loading, to_otel again before predicting, export_spans again before sending: 3 probes
    g01 = str(ai.samples.path("G01"))
    assert main(["otel", g01, "--markers", str(ai.samples.path("G01", "markers")), "--endpoint", backend.url]) == 0
    assert "5 spans" in capsys.readouterr().out
    probes, posts = backend.counts()
    assert (probes, posts) == (1, 1)
    ai.to_otel(ai.load(g01), endpoint=backend.url, markers=ai.samples.markers("G01"))
    assert backend.counts() == (1, 1)
    from agent_inspect.sources import export_spans

    export_spans([], backend.url, resource={})
    assert backend.counts()[0] == 1
