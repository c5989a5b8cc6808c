"""The static report: one self-contained file, every section present, everything record-derived escaped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect.report import render_report, write_report
from tests.report.probe_log import assert_no_live_probe

_EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.I)


def test_public_names() -> None:
    assert ai.report.__all__ == ["write_report", "render_report", "prediction_of", "ledger_totals"]
    assert ai.write_report is write_report


@pytest.mark.parametrize("rule", ["original", "fixed"])
def test_report_of_a_log_is_self_contained_and_escaped(probe_log, tmp_path: Path, rule: str) -> None:
    path = write_report(probe_log, tmp_path / "report.html", rule=rule)
    html = path.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    for anchor in ("summary", "divergences", "timelines", "ledger", "why", "lints", "errors"):
        assert f'<section id="{anchor}">' in html
    # plotly.js is inlined (the offline bundle), never fetched
    assert "plotly.js" in html and len(html) > 3_000_000
    markup = re.sub(r"<script>.*?</script>", "<script></script>", html, flags=re.S)
    assert "<script src" not in markup and "<link" not in markup
    assert not _EXTERNAL.search(markup), "the report must not load anything from the network"
    assert "Content-Security-Policy" in html
    assert html.count('class="plotly-graph-div"') == 1  # one affected key in the probe log
    assert_no_live_probe(html)
    # the probe text is shown, escaped, to the reader
    assert "&lt;img src=x onerror=" in html


def test_the_report_redraws_its_charts_in_the_dark_palette(probe_log) -> None:
    """The charts are built light; the page carries (and its CSP allows) the script that swaps each palette colour
    for its dark variant when the reader's scheme is dark (they kept light marks, a near-black crash mark on dark)."""
    import base64
    import hashlib

    from agent_inspect.widgets import PALETTE

    html = render_report(probe_log, rule="original")
    scripts = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    (dark,) = [s for s in scripts if "prefers-color-scheme: dark" in s]
    for shade in PALETTE.values():
        assert f'"{shade.light.lower()}": "{shade.dark}"' in dark
    digest = base64.b64encode(hashlib.sha256(dark.encode("utf-8")).digest()).decode("ascii")
    assert f"'sha256-{digest}'" in html.split("</head>")[0]
    assert scripts.index(dark) == len(scripts) - 1       # after the charts it redraws


def test_report_of_a_result_uses_its_rule(probe_log) -> None:
    result = ai.reconstruct(probe_log, rule="original")
    html = render_report(result, rule="fixed", max_keys=0)
    assert "rule original" in html
    assert 'class="plotly-graph-div"' not in html and "plotly.js" not in html
    assert "script-src 'none'" in html
    assert_no_live_probe(html)


def test_report_rejects_what_it_cannot_show(tmp_path: Path) -> None:
    with pytest.raises(ai.InspectError, match="ActionStateLog"):
        write_report({"records": 1}, tmp_path / "x.html")


def test_report_without_the_views_extra_says_what_to_install(probe_log, monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "plotly.io", None)  # as if plotly were not installed
    with pytest.raises(ai.InspectError, match=r"agent_inspect\[views\].*max_keys=0"):
        render_report(probe_log, rule="original")
    assert "<!DOCTYPE html>" in render_report(probe_log, rule="original", max_keys=0)


def test_the_report_says_which_runtime_wrote_the_log(tmp_path) -> None:
    import agent_inspect as ai

    html = ai.report.render_report(ai.load("sample_logs/subagents_v4.jsonl"), rule="original")
    assert "main (inferred: 10 records carry subagentResultEvents (V4)" in html
    assert "default rule original" in html
