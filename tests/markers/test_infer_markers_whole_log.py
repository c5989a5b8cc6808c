"""The "whole log" candidate says what it holds: the ``{partition: offset}`` maps every verb reads through
``ai.recovery.rebuild_start`` (the loaded log's first offsets), not ``markers=None``, and they rebuild the same
window as no markers."""

from __future__ import annotations

import agent_inspect as ai
from agent_inspect.cli import main
from agent_inspect.markers import infer_markers
from agent_inspect.recovery import predict, rebuild_start


def test_the_whole_log_candidate_shows_the_maps_it_holds(capsys) -> None:
    log = ai.load(ai.samples.path("production"))
    whole = next(c for c in infer_markers(log) if c.source == "whole log")
    start = rebuild_start(whole.markers)
    assert start == {0: 0, 1: 0, 2: 0, 3: 0} and whole.markers == ai.recovery.whole_log_markers(log)
    assert "markers=None" not in whole.evidence and "{0: 0, 1: 0, 2: 0, 3: 0}" in whole.evidence
    # what it says: the same window as giving no markers
    assert predict(log, markers=whole).tasks["outcome"].tolist() == predict(log).tasks["outcome"].tolist()
    assert main(["markers", str(ai.samples.path("production"))]) == 0
    assert "markers=None" not in capsys.readouterr().out
