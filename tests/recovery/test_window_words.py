"""Which restore an answer is about: ``agent-inspect reconstruct`` and the report say the rebuild window (the
markers and where they came from) and where the replayed inputs came from, so two runs that differ only in
``--markers`` cannot be mistaken for each other (both read "rule original: 2,989 records, …")."""

from __future__ import annotations

import html as htmllib
import re

import pytest

import agent_inspect as ai
from agent_inspect.cli import main
from agent_inspect.report import render_report

SAMPLE = ai.samples.path("production")
MARKERS = str(SAMPLE).replace(".jsonl", ".markers.json")


@pytest.mark.parametrize(("given", "expected"), [
    ([], "markers: none given: the whole loaded log is the rebuild window"),
    (["--markers", "@" + MARKERS], "markers: {0: 248, 1: 245, 2: 215, 3: 444} (given)"),
    (["--markers", "[]"], "markers: [] (a fresh start: nothing is rebuilt)"),
    (["--markers", "{}"], "markers: [] (a fresh start: nothing is rebuilt)"),
    (["--checkpoint", str(ai.samples.checkpoint("production"))], "markers: {0: 248, 1: 245, 2: 215, 3: 444} "
                                                                   "(read from checkpoint 4"),
])
def test_reconstruct_says_its_rebuild_window(given: list[str], expected: str, capsys) -> None:
    assert main(["reconstruct", str(SAMPLE), "--no-ledger", *given]) == 0
    out = capsys.readouterr().out
    assert expected in out
    assert "replayed inputs: " in out


def test_recovery_markers_label() -> None:
    log = ai.load(SAMPLE)
    assert ai.Recovery.for_log(log).markers_label == "none given: the whole loaded log is the rebuild window"
    assert ai.Recovery.for_log(log, markers=[{0: 5, 1: 7}, {0: 3}]).markers_label == "{0: 3, 1: 7} (given)"


def _text(page: str) -> str:
    page = re.sub(r"<script>.*?</script>", "", page, flags=re.S)
    return htmllib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def test_the_report_says_its_rebuild_window() -> None:
    log = ai.load(SAMPLE)
    given = _text(render_report(log, markers=ai.samples.markers("production"), max_keys=0))
    assert "markers {0: 248, 1: 245, 2: 215, 3: 444} (given)" in given
    assert "replayed inputs from the log's own later attempt" in given
    whole = _text(render_report(log, max_keys=0))
    assert "markers none given: the whole loaded log is the rebuild window" in whole
    # a reconstruction carries its settings: the report of it says the same
    result = ai.reconstruct(log, markers=[])
    assert "markers [] (a fresh start: nothing is rebuilt)" in _text(render_report(result, max_keys=0))
