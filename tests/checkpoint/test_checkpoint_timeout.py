"""A checkpoint on storage that accepts a connection and never answers: the read gives up after ``timeout=``
(``--timeout`` on the command line) with one line naming the wait and what to do.

It waited fsspec's FTP default of 30 s whatever the caller wanted (31 s measured against a silent peer), while the
Kafka and Fluss reads beside it already stopped at their ``timeout``.
"""

from __future__ import annotations

import time

import pytest

import agent_inspect as ai
from agent_inspect.cli import main
from tests.support.unreachable import fails_within

#: Well under fsspec's FTP default (30 s) and the library's (10 s), with room for a busy machine.
BOUND = 6.0


def _silent_url(port: int, tail: str = "") -> str:
    return f"ftp://127.0.0.1:{port}/checkpoints{tail}"


def test_a_silent_server_fails_within_the_timeout(silent_peer: int) -> None:
    error = fails_within(_silent_url(silent_peer), BOUND)
    assert "--timeout" in error.cli_text(), error.cli_text()


def test_a_query_in_the_url_still_reaches_the_server_with_the_timeout(silent_peer: int) -> None:
    url = _silent_url(silent_peer, "?note=kept")   # fsspec hands the query to the filesystem as url_query
    start = time.monotonic()
    with pytest.raises(ai.SourceError, match="no answer within 0.5s"):
        ai.sources.open_checkpoint(url, timeout=0.5)
    assert time.monotonic() - start < BOUND


@pytest.mark.parametrize("command", [["reconstruct", "SOURCE", "--checkpoint", "URL"],
                                     ["markers", "SOURCE", "--checkpoint", "URL"],
                                     ["reconstruct", "SOURCE", "--markers", "URL"],
                                     ["diff", "SOURCE", "SOURCE@markers=URL"]])
def test_the_command_line_waits_as_long_as_timeout_says(command: list[str], silent_peer: int,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    url, source = _silent_url(silent_peer), str(ai.samples.path("G01"))
    args = [a.replace("SOURCE", source).replace("URL", url) for a in command]
    start = time.monotonic()
    code = main([*args, "--timeout", "0.7"])
    took = time.monotonic() - start
    err = capsys.readouterr().err
    assert code == 2, err
    assert took < BOUND, took
    assert err.startswith("agent-inspect: ") and err.count("\n") == 1, err
    assert "no answer within 0.7s" in err and "--timeout" in err and "timeout=" not in err, err


def test_markers_text_and_a_diff_side_take_the_timeout(silent_peer: int) -> None:
    url = _silent_url(silent_peer)
    start = time.monotonic()
    with pytest.raises(ai.SourceError, match="no answer within 0.5s"):
        ai.checkpoint.read_markers_text(url, timeout=0.5)
    with pytest.raises(ai.SourceError, match="no answer within 0.5s"):
        ai.diffing.select(f"{ai.samples.path('G01')}@markers={url}", timeout=0.5)
    assert time.monotonic() - start < 2 * BOUND


def test_a_local_checkpoint_reads_as_before_and_a_bad_timeout_is_refused() -> None:
    path = ai.samples.checkpoint("production")
    assert ai.checkpoint.read(path, timeout=0.5).markers == ai.checkpoint.read(path).markers
    for bad in (0, -1, float("inf"), True):
        with pytest.raises(ai.SourceError, match="timeout must be a positive, finite number of seconds"):
            ai.checkpoint.read(path, timeout=bad)
