"""``agent-inspect report`` (and ai.write_report) on a fleet scan's output directory."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import agent_inspect as ai
from agent_inspect.cli import main


def test_report_of_a_scan_directory(dask_client: Any, tmp_path: Path) -> None:
    out = tmp_path / "scan"
    result = ai.scan(ai.samples.path("production_k1", "parquet"), markers=ai.samples.markers("production_k1"),
                     client=dask_client, output=out)
    assert result.fleet_wide == ("original",)
    html_path = tmp_path / "report.html"
    assert main(["report", str(out), "-o", str(html_path)]) == 0
    html = html_path.read_text()
    for title in ("Fleet scan summary", "Most at risk", "History sizes and re-executed calls", "Windows read",
                  "Failed windows"):
        assert f"<h2>{title}</h2>" in html
    top = result.at_risk(1)["business_key"][0]
    assert top in html and "Every window was scanned." in html
    assert "rules run fleet-wide" in html and 'id="scan-histograms"' in html
    assert re.search(r"script-src 'sha256-", html)  # the page's scripts are hashed, nothing else runs


def test_write_report_escapes_a_hostile_source(dask_client: Any, tmp_path: Path) -> None:
    from dataclasses import replace

    result = ai.scan(ai.samples.path("G01", "parquet"), client=dask_client)
    evil = replace(result, source="<script>alert(1)</script>")
    html = ai.write_report(evil, tmp_path / "r.html").read_text()
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html


def test_a_scan_report_labels_its_what_if_and_counts_sub_agent_calls(dask_client: Any) -> None:
    """The production sample: `fixed` is a what-if beside the rule 0.4 ships, in the totals, the calls by function,
    the at-risk captions and the page header (they said "fixed"); the sub-agent calls the "by function" table
    names are a column of their own (9 under original), not among the durable calls."""
    import html as htmllib

    from agent_inspect.report import render_report

    result = ai.scan(ai.samples.path("production"), markers=ai.samples.markers("production"), client=dask_client)
    page = render_report(result)
    text = htmllib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", re.sub(r"<script>.*?</script>", "", page,
                                                                                  flags=re.S))))
    label = result.rule_label("fixed")
    assert label == "fixed (what-if; 0.4 ships original)"
    assert f"rule original, {label} ·" in text
    assert f"ranked under {label}" in text
    assert "sub-agent calls sent again" in text
    assert "calls re-executed, by function (sub-agent calls: sent again)" in text
    original = result.summary()["original"]
    assert original["calls_subagent"] == 9
    assert f"original {original['tasks']:,} {original['reused']:,} {original['resumed']:,} {original['rerun']:,} " \
           f"{original['failed']:,} {original['not_dispatched']:,} {original['evictions']:,} {original['calls']:,} 9 " \
           in text
