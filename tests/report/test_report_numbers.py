"""Counts in the report read as the rest of it writes them: 1,194, never 1194 (the Reconstruction and Prediction
views' status and outcome counts were written bare)."""

from __future__ import annotations

import html as htmllib
import re
from pathlib import Path

import agent_inspect as ai
from agent_inspect._html import render_parts
from agent_inspect.report import render_report


def _text(page: str) -> str:
    page = re.sub(r"<(script|style)>.*?</\1>", "", page, flags=re.S)
    return htmllib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def test_the_reconstruction_view_in_the_report_separates_thousands() -> None:
    log = ai.load(ai.samples.path("production"))
    text = _text(render_report(log, markers=ai.samples.markers("production"), max_keys=0))
    view = text[text.index("Reconstruction under rule"):]
    assert "2,989 records ( superseded : 1,194, outside : 1,152," in view
    assert "1194" not in text and "1152" not in text


def test_the_prediction_view_separates_thousands(tmp_path: Path) -> None:
    log = ai.load(ai.samples.write_fleet(tmp_path / "fleet.parquet", 200, partitions=2))
    prediction = ai.predict(log, rule="fixed")
    text = _text(render_parts(prediction._html_parts()))
    assert "REUSE 1,700" in text and "1700" not in text
    assert "REUSE 1,700" in repr(prediction)
    assert "3,640 records" in repr(ai.reconstruct(log, rule="fixed"))
