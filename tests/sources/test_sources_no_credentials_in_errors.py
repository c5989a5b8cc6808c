"""Credentials in an OpenTelemetry endpoint or a checkpoint URL are never echoed by an error, as a Kafka or Fluss
URL's never are (they were: "cannot reach the OpenTelemetry endpoint http://user:s3cret@…")."""

from __future__ import annotations

import socket

import pytest

import agent_inspect as ai
from agent_inspect.cli import main


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("argv", [
    ["otel", "{G01}", "--endpoint", "http://user:s3cret@127.0.0.1:{port}/v1/traces"],
    ["otel", "{G01}", "--endpoint", "user:s3cret@127.0.0.1:{port}"],
    ["reconstruct", "{G01}", "--checkpoint", "ftp://user:s3cret@127.0.0.1:{port}/chk"],
    ["reconstruct", "{G01}", "--checkpoint", "memory://user:s3cret@bucket/no-such-checkpoint"],
])
def test_errors_name_the_address_without_its_credentials(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    import fsspec  # noqa: F401 - installed by the test command: the checkpoint cases read through it

    port = _closed_port()
    assert main([a.format(G01=ai.samples.path("G01"), port=port) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "s3cret" not in err and "user" not in err


def test_shown_url() -> None:
    from agent_inspect.sources._urls import shown_url

    assert shown_url("s3://key:pw@bucket/chk") == "s3://bucket/chk"
    assert shown_url("http://u:p@h:1/x", "failed: http://u:p@h:1/x refused") == "failed: http://h:1/x refused"
    assert shown_url("http://h:1/x") == "http://h:1/x"
