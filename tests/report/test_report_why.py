"""The report's "Why did these run again?" section."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import agent_inspect as ai
from agent_inspect._glossary import define
from agent_inspect.report import render_report
from tests.report.probe_log import assert_no_live_probe

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"


def _section(html: str) -> str:
    return re.search(r'<section id="why">(.*?)</section>', html, flags=re.S).group(1)


def test_top_reruns_are_explained_with_their_cause():
    log = ai.load(str(SAMPLES / "production.jsonl"))
    markers = json.loads((SAMPLES / "production.markers.json").read_text())["markers"]
    why = _section(render_report(log, rule="original", markers=markers, max_keys=0))
    assert "Why did these run again?" in why
    prediction = ai.recovery.predict(log, rule="original", markers=markers)
    top = prediction.tasks.loc[prediction.tasks["outcome"] == "RERUN", "action"].value_counts()
    assert f"{top.index[0]} reruns {int(top.iloc[0])}×" in why
    assert why.count("<div class='why'>") == min(5, len(top))
    evict = html.escape(define("evict"))
    assert f'(cause: <span title="{evict}">evict</span>)' in why and "why-step" in why and "downstream" in why


def test_nothing_reruns_says_so():
    log = ai.load(str(SAMPLES / "N04.jsonl"))
    why = _section(render_report(log, rule="fixed", max_keys=0))
    assert "Nothing runs again" in why and "<ol>" not in why


def test_the_section_is_escaped(probe_log):
    html = render_report(probe_log, rule="original", max_keys=0)
    assert_no_live_probe(_section(html))
