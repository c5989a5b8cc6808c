"""A reconstruction of a fresh start (``markers=[]``) keeps saying so: its ``markers`` are ``{}``, not None (which
reads as "the whole log"), so ``verify`` of it checks the same recovery, and a report refuses a verification of
the whole log beside it."""

from __future__ import annotations

import pytest

import agent_inspect as ai
from agent_inspect import InspectError


def test_verify_of_a_fresh_start_reconstruction_checks_a_fresh_start() -> None:
    log, trace = ai.load(ai.samples.path("G01")), ai.load_trace(ai.samples.path("G01", "trace"))
    fresh = ai.reconstruct(log, markers=[])
    assert fresh.markers == {} and ai.reconstruct(log).markers is None
    of_reconstruction = ai.verify(fresh, trace, candidates=())
    of_log = ai.verify(log, trace, markers=[], candidates=())
    whole = ai.verify(log, trace, candidates=())
    outcomes = [v.prediction.tasks["outcome"].astype(str).tolist() for v in (of_reconstruction, of_log, whole)]
    assert outcomes[0] == outcomes[1] == ["RERUN", "RERUN"] != outcomes[2]


def test_a_report_tells_a_fresh_start_from_the_whole_log(tmp_path) -> None:
    log, trace = ai.load(ai.samples.path("G01")), ai.load_trace(ai.samples.path("G01", "trace"))
    fresh = ai.reconstruct(log, markers=[])
    with pytest.raises(InspectError, match=r"markers none \(the whole log\)\) than this report's .*markers \[\] "
                                           r"\(a fresh start\)"):
        ai.write_report(fresh, tmp_path / "r.html", verification=ai.verify(log, trace, candidates=()))
    same = ai.verify(log, trace, markers=[], candidates=())
    assert ai.write_report(fresh, tmp_path / "r.html", verification=same).is_file()
