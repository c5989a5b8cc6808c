"""ai.inspect(scan_result): the at-risk grid sorts and filters in the kernel and opens a key's reconstruction."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import agent_inspect as ai
from agent_inspect.widgets import FleetScanView, ResultInspector


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from distributed import Client, LocalCluster

    out = tmp_path_factory.mktemp("scan") / "out"
    with LocalCluster(n_workers=1, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                      scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}, silence_logs=40) as cluster, Client(cluster) as client:
        ai.scan(ai.samples.path("production", "parquet"), markers=ai.samples.markers("production"), client=client,
                output=out)
    return out


def _keys(view: FleetScanView) -> list[str]:
    """The keys of the rows the grid ships to the browser (its window)."""
    at = view.table.columns.index("business_key")
    return [row[at] for row in view.table.window["cells"]]


def test_inspect_picks_the_scan_view_and_sorts_by_header_clicks(saved: Path) -> None:
    result = ai.ScanResult.open(saved)
    view = ai.inspect(result)
    assert isinstance(view, FleetScanView) and "ai-scan" in view._dom_classes
    # the summary's words say what they count on hover (the glossary's definitions)
    from agent_inspect._glossary import define
    from agent_inspect._html import escape

    for term in ("windows", "exposed to #1301"):
        assert f"title='{escape(define(term))}'" in view.summary.value, term
    assert view.table.columns == view.columns
    # at_risk() order by default, not the stale-reuse column (all zero on this sample)
    assert view.sort_column == "risk_rank" and not view.descending
    assert list(view.rows()["business_key"]) == list(result.at_risk(None)["business_key"])
    assert view.rows()["risk_rank"].tolist() == list(range(1, len(result.keys) + 1))
    assert _keys(view) == list(view.rows()["business_key"][:len(_keys(view))])
    view.table.sort = ["history_bytes", True]  # what a header click in grid.js sets
    assert view.sort_column == "history_bytes" and view.descending
    assert view.rows()["history_bytes"].is_monotonic_decreasing
    assert _keys(view)[0] == result.keys.sort_values("history_bytes", ascending=False)["business_key"].iloc[0]
    view.sort_by("history_bytes")  # the same column again: reversed
    assert not view.descending and view.rows()["history_bytes"].is_monotonic_increasing
    view.table.set_filter("business_key", "vip")
    assert len(view.rows()) == int(result.keys["business_key"].str.contains("vip").sum()) > 0
    view.table.set_filter("business_key", "")
    view.rule.value = "fixed"
    assert view.columns[-1] == "fixed_evictions"
    assert len(view.figure.data) == 2 and list(view.figure.data[1].x) == list(result.keys["fixed_calls"])


def test_clicking_a_key_opens_its_reconstruction_from_the_output(saved: Path) -> None:
    result = ai.ScanResult.open(saved)
    view = FleetScanView(result)
    key = _keys(view)[0]
    view.table._on_message(view.table, {"type": "select", "row": view.table.window["ids"][0]}, [])  # a row click
    inspector = view.detail.children[-1]
    assert isinstance(inspector, ResultInspector)
    assert view.selected == key
    recs = inspector.result.records
    assert set(recs["business_key"].astype(str)) == {key}
    expected = ai.reconstruct(ai.load(ai.samples.path("production", "parquet")).for_key(key), rule="original",
                              markers=ai.samples.markers("production"))
    pd.testing.assert_series_equal(recs["status"].reset_index(drop=True).astype(str),
                                   expected.records["status"].reset_index(drop=True).astype(str), check_names=False)
    assert "Parquet output" in view.detail.children[0].value
    from ipywidgets.widgets.widget import _instances

    models = len(_instances)
    for other in _keys(view)[1:4]:    # opening other keys closes the one opened before: no model is left behind
        view.open_key(other)
        view.open_key(key)
        assert len(_instances) == models
    assert inspector.comm is None and view.detail.children[-1] is not inspector


def test_escapes_and_failures(saved: Path, tmp_path: Path) -> None:
    evil = "<img src=x onerror=alert(1)>"
    result = ai.ScanResult.open(saved)
    failures = pd.DataFrame([{"window": evil, "partition": 9, "path": evil, "start": None, "end": None,
                              "reason": evil}])
    from dataclasses import replace

    broken = replace(result, failures=failures, source=evil)
    view = FleetScanView(broken)
    assert "<img" not in view.summary.value and "&lt;img" in view.summary.value
    assert "<b>1 window failed</b>" in view.summary.value and "window(s)" not in view.summary.value


def test_the_summary_gives_each_rule_s_tasks_by_outcome_as_the_cli_does(saved: Path) -> None:
    from agent_inspect._html import escape

    result = ai.ScanResult.open(saved)
    view = FleetScanView(result)
    s = result.summary()
    assert result.what_if == ("fixed",)
    for rule in result.rules:   # "643 tasks: 169 reused, …" after the rule's label, a what-if marked
        line = f"<li><code>{escape(result.rule_label(rule))}</code>: {escape(ai.fleet.tasks_text(s[rule]))}</li>"
        assert line in view.summary.value, rule
    assert "fixed (what-if; 0.4 ships original)" in view.summary.value


def test_the_scan_view_styles_through_the_views_css_only(saved: Path) -> None:
    """No inline CSS; every class its HTML names that the views' stylesheet styles is there (tests/widgets checks
    the other views)."""
    import re
    from importlib import resources

    import ipywidgets as w

    css = resources.files("agent_inspect.widgets").joinpath("static/views.css").read_text(encoding="utf-8")
    styled = set(re.findall(r"\.(ai-[a-z-]+)\s*\{", css))
    view = FleetScanView(ai.ScanResult.open(saved))
    nodes, classes = [view], set()
    while nodes:
        node = nodes.pop()
        nodes.extend(getattr(node, "children", ()) or ())
        if isinstance(node, w.HTML):
            assert " style=" not in node.value, node.value[:200]
            classes |= {c for attr in re.findall(r"""class=["']([^"']*)["']""", node.value) for c in attr.split()}
    assert "ai-scan-rules" in classes & styled
