"""``agent-inspect diff --timeout``: a ``kafka://`` or ``fluss://`` side waits for its broker as long as
``--timeout`` says (every other verb reading a topic or table takes it), and a broker that never answers fails in
one line naming the option, within seconds rather than the loader's default 10."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agent_inspect.cli import main


def test_a_silent_broker_side_fails_within_the_timeout(silent_peer: int, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text('{"partition": 0, "offset": 0, "key": "k", "value": "v"}\n')
    start = time.monotonic()
    code = main(["diff", f"kafka://127.0.0.1:{silent_peer}/t", str(other), "--timeout", "0.7"])
    took = time.monotonic() - start
    err = capsys.readouterr().err
    assert code == 2, err
    assert took < 5, took
    assert err.startswith("agent-inspect: ") and err.count("\n") == 1, err
    assert "within 0.7s" in err and "--timeout" in err and "timeout=" not in err, err
