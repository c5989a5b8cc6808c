"""ai.inspect(scan_result): the at-risk table sorts, pages and opens a key's reconstruction (model level)."""

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
    return [b.description for b in view.table.children if "ai-scan-key-button" in b._dom_classes]


def test_inspect_picks_the_scan_view_and_sorts_by_header_clicks(saved: Path) -> None:
    result = ai.ScanResult.open(saved)
    view = ai.inspect(result)
    assert isinstance(view, FleetScanView) and "ai-scan" in view._dom_classes
    headers = [b for b in view.table.children if "ai-scan-sort" in b._dom_classes]
    assert [h.description.split(" ")[0] for h in headers] == view.columns
    assert view.sort_column == "original_stale_reuse_risk"
    assert view.rows()["original_stale_reuse_risk"].is_monotonic_decreasing
    assert _keys(view) == list(view.rows()["business_key"][:15])
    bytes_header = headers[view.columns.index("history_bytes")]
    bytes_header.click()
    assert view.sort_column == "history_bytes" and view.descending
    assert view.rows()["history_bytes"].is_monotonic_decreasing
    assert _keys(view)[0] == result.keys.sort_values("history_bytes", ascending=False)["business_key"].iloc[0]
    [h for h in view.table.children if "ai-scan-sort" in h._dom_classes][view.columns.index("history_bytes")].click()
    assert not view.descending and view.rows()["history_bytes"].is_monotonic_increasing
    view.next.click()
    assert view.page_label.value.startswith("page 2 of 3")
    view.rule.value = "fixed"
    assert view.columns[-1] == "fixed_evictions"
    assert len(view.figure.data) == 2 and list(view.figure.data[1].x) == list(result.keys["fixed_calls"])


def test_clicking_a_key_opens_its_reconstruction_from_the_output(saved: Path) -> None:
    result = ai.ScanResult.open(saved)
    view = FleetScanView(result)
    button = next(b for b in view.table.children if "ai-scan-key-button" in b._dom_classes)
    button.click()
    inspector = view.detail.children[-1]
    assert isinstance(inspector, ResultInspector)
    key = button.description
    assert view.selected == key
    recs = inspector.result.records
    assert set(recs["business_key"].astype(str)) == {key}
    expected = ai.reconstruct(ai.load(ai.samples.path("production", "parquet")).for_key(key), rule="original",
                              markers=ai.samples.markers("production"))
    pd.testing.assert_series_equal(recs["status"].reset_index(drop=True).astype(str),
                                   expected.records["status"].reset_index(drop=True).astype(str), check_names=False)
    assert "Parquet output" in view.detail.children[0].value


def test_escapes_and_failures(saved: Path, tmp_path: Path) -> None:
    evil = "<img src=x onerror=alert(1)>"
    result = ai.ScanResult.open(saved)
    failures = pd.DataFrame([{"window": evil, "partition": 9, "path": evil, "start": None, "end": None,
                              "reason": evil}])
    from dataclasses import replace

    broken = replace(result, failures=failures, source=evil)
    view = FleetScanView(broken)
    assert "<img" not in view.summary.value and "&lt;img" in view.summary.value
    assert "1 window(s) failed" in view.summary.value
