"""A trace with no readable record cannot disagree with anything: verify says so instead of DISAGREE."""

from __future__ import annotations

from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect.cli import main


def test_verify_against_an_empty_trace_is_an_input_error(tmp_path: Path, capsys) -> None:
    empty = tmp_path / "empty.trace.log"
    empty.write_text("", encoding="utf-8")
    log, markers = ai.load(ai.samples.path("G01")), ai.samples.markers("G01")
    with pytest.raises(ai.SourceError) as said:     # it said "the trace holds no record", naming no file
        ai.verify(log, str(empty), markers=markers)
    assert str(said.value) == (f"{empty} holds no Trace Log record (0 bytes): is it the right file, and did the job "
                               "write its trace there?")
    # the CLI: one line and exit 2 (a bad input), not "DISAGREE: 2 of 3 tasks" with exit 1
    assert main(["verify", str(ai.samples.path("G01")), "--trace", str(empty), "--markers", "[]"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"agent-inspect: {said.value}" and "\n" not in err
