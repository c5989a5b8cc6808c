"""``--timeout SECONDS``: every command that reads a Kafka topic or Fluss table waits as long as it is told, and a
slow service's error says ``--timeout`` on the command line, ``timeout=`` in Python."""

from __future__ import annotations

import pickle
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import agent_inspect as ai
from agent_inspect.cli import build_parser, main
from agent_inspect.sources import _fluss
from tests.sources._fake_fluss import Behaviour, FakeTable, factory

READERS = ["summary", "export", "explain", "markers", "otel", "reconstruct", "report", "verify", "scan"]


@pytest.mark.parametrize("verb", READERS)
def test_every_source_reading_command_takes_timeout(verb: str) -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    parser = sub.choices[verb]  # type: ignore[attr-defined]
    option = next(a for a in parser._actions if a.dest == "timeout")
    assert option.option_strings == ["--timeout"] and option.default is None


def test_a_bad_timeout_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["summary", "kafka://127.0.0.1:1/t", "--timeout", "0"])
    assert info.value.code == 2
    assert "--timeout: must be a positive, finite number of seconds" in capsys.readouterr().err


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections and never answers (a broker too slow to matter)."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(2)
    for conn in held:
        conn.close()
    server.close()


def test_kafka_waits_as_long_as_told_and_says_timeout_as_an_option(silent_port: int,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", f"kafka://127.0.0.1:{silent_port}/t", "--timeout", "0.7"]) == 2
    err = capsys.readouterr().err
    assert "did not answer within 0.7s" in err and err.rstrip().endswith("or raise --timeout")
    assert "timeout=" not in err


def _silent_fluss(monkeypatch: pytest.MonkeyPatch, call: str) -> None:
    buckets: dict[int, list[dict[str, object]]] = {0: []}
    make = factory({"db.t": FakeTable(buckets=buckets, earliest={})}, Behaviour(silent=call))
    monkeypatch.setattr(_fluss, "_default_factory", lambda fluss: make)


@pytest.mark.parametrize("verb", ["reconstruct", "explain"])
def test_fluss_from_the_cli_says_timeout_as_an_option(verb: str, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    _silent_fluss(monkeypatch, "get_table")
    task = ["--key", "k", "--seq", "1", "--action", "a"] if verb == "explain" else []
    assert main([verb, "fluss://h:1/db.t", "--timeout", "0.3", *task]) == 2
    err = capsys.readouterr().err
    assert "did not answer within 0.3s" in err and err.rstrip().endswith("or raise --timeout")


def test_fluss_from_python_says_the_keyword(monkeypatch: pytest.MonkeyPatch) -> None:
    _silent_fluss(monkeypatch, "create")
    with pytest.raises(ai.BrokerUnreachable) as info:
        ai.load("fluss://h:1/db.t", timeout=0.3, progress=False)
    assert str(info.value).endswith("or raise timeout=")
    assert info.value.cli_text().endswith("or raise --timeout")
    again = pickle.loads(pickle.dumps(info.value))   # a scan's worker sends its error back pickled
    assert (str(again), again.cli_text()) == (str(info.value), info.value.cli_text())


def test_an_error_without_cli_words_reads_the_same_in_both() -> None:
    error = ai.InspectError("check the file")
    assert error.cli_text() == str(error) == "check the file"


def test_a_file_source_ignores_the_timeout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(ai.samples.path("G01")), "--timeout", "2", "--json"]) == 0
    assert '"records"' in capsys.readouterr().out


def test_scan_passes_the_timeout_to_the_source_and_the_scheduler(monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import agent_inspect.fleet as fleet

    seen: dict[str, Any] = {}

    def scan(source: str, **options: Any) -> Any:
        seen.update(options)
        raise ai.InspectError("stopped here")

    monkeypatch.setattr(fleet, "scan", scan)
    assert main(["scan", "kafka://127.0.0.1:1/t", "--timeout", "42", "--scheduler", "tcp://127.0.0.1:1"]) == 2
    assert seen["timeout"] == 42.0
    seen.clear()
    assert main(["scan", "kafka://127.0.0.1:1/t"]) == 2
    assert seen["timeout"] is None   # None: the library's default (10 s)


def test_python_only_advice_has_cli_words(capsys: pytest.CaptureFixture[str]) -> None:
    """A --key without records, and explain's key without a task, say where keys are listed in words a shell user
    can follow; Python keeps its own."""
    sample = str(ai.samples.path("G01"))
    assert main(["summary", sample, "--key", "zzzzzzzzzzzz"]) == 2
    err = capsys.readouterr().err
    assert "log.keys() of a load" not in err and "in Python, agent_inspect.load(source).keys()" in err
    with pytest.raises(ai.InspectError, match=r"log\.keys\(\) of a load without business_keys"):
        ai.load(sample, business_keys=["zzzzzzzzzzzz"])
    markers = str(ai.samples.path("G01", "markers"))
    assert main(["explain", sample, "--markers", markers, "--key", "zzzzzzzzzzzz", "--seq", "1", "--action", "a"]) == 2
    err = capsys.readouterr().err
    assert "(ai.predict(...).tasks)" not in err and "in Python, agent_inspect.predict(log, ...).tasks" in err
