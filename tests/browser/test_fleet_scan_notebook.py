"""The fleet-scan notebook in JupyterLab + chromium: run it, sort the at-risk table, open a key."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

NOTEBOOK = "notebooks/05_fleet_scan.ipynb"


def _column(page, index: int) -> list[str]:
    """The cells of column ``index`` in the rows the grid has drawn."""
    return page.evaluate("(i) => [...document.querySelectorAll('.ai-scan .ai-scan-table .ai-grid-row')]"
                         ".map(r => r.children[i].textContent)", index)


def test_fleet_scan_notebook(lab_page, artifacts: Path) -> None:
    lab_page.open(NOTEBOOK)
    lab_page.run_all(timeout_ms=240_000)
    page = lab_page.page
    scan = page.locator(".ai-scan").first
    scan.wait_for()
    scan.scroll_into_view_if_needed()
    assert "Fleet scan" in scan.locator(".ai-scan-summary").inner_text()
    # each rule's tasks by outcome, in the CLI's words, one line per rule under the summary
    rules = scan.locator(".ai-scan-summary .ai-scan-rules li")
    assert rules.count() >= 1 and " tasks: " in rules.first.inner_text() and "not dispatched" in rules.first.inner_text()
    page.wait_for_function("() => document.querySelectorAll('.ai-scan .js-plotly-plot').length === 1")
    assert "history size per key" in scan.locator(".ai-scan-histograms").inner_text()

    headers = scan.locator(".ai-scan-table .ai-grid-header")
    names = [h.split(" ")[0] for h in headers.all_inner_texts()]
    col = names.index("history_bytes")
    headers.nth(col).click()  # sort by history size in the kernel, smallest first
    page.wait_for_function("(i) => document.querySelectorAll('.ai-scan .ai-grid-header')[i].innerText.includes('▲')",
                           arg=col)
    page.wait_for_function("(i) => { const v = [...document.querySelectorAll('.ai-scan .ai-grid-row')]"
                           ".map(r => Number(r.children[i].textContent)); "
                           "return v.length > 1 && v.every((x, j) => j === 0 || v[j - 1] <= x); }", arg=col)
    headers.nth(col).click()  # again: largest first
    page.wait_for_function("(i) => document.querySelectorAll('.ai-scan .ai-grid-header')[i].innerText.includes('▼')",
                           arg=col)
    page.wait_for_function("(i) => { const v = [...document.querySelectorAll('.ai-scan .ai-grid-row')]"
                           ".map(r => Number(r.children[i].textContent)); "
                           "return v.length > 1 && v.every((x, j) => j === 0 || v[j - 1] >= x); }", arg=col)
    sizes = [int(v) for v in _column(page, col)]
    assert sizes == sorted(sizes, reverse=True) and len(sizes) > 1

    key = _column(page, names.index("business_key"))[0]
    scan.locator(".ai-scan-table .ai-grid-row").first.click()  # opens the key's reconstruction from the Parquet output
    detail = scan.locator(".ai-scan-detail")
    detail.locator(".ai-inspector").wait_for(timeout=60_000)
    assert key in detail.locator(".ai-scan-key").inner_text()
    assert "Parquet output" in detail.inner_text()
    detail.locator(".ai-history .ai-h-line:not(.ai-h-cols)").first.wait_for()  # a key opens on its history
    page.screenshot(path=str(artifacts / "fleet_scan.png"), full_page=False)
    assert lab_page.xss_hits() == [] and lab_page.dialogs == []
