"""The kernel-side data grid in JupyterLab + chromium: it draws, scrolls, sorts, and a row click shows the record."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from agent_inspect._glossary import define

pytestmark = pytest.mark.browser

KERNEL = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
PROBE = "<img src=x onerror=\"window.__xss_hits.push('grid')\">"
CELLS = [
    "import agent_inspect as ai\nimport pandas as pd\n"
    "log = ai.load('sample_logs/production.jsonl')\n"
    "browser = ai.inspect(log)\nbrowser",
    "from agent_inspect.widgets import DataGrid\n"
    f"probe = pd.DataFrame({{'n': range(5000), 'text': [{PROBE!r} + str(i) for i in range(5000)]}})\n"
    "grid = DataGrid(probe, height=240)\ngrid",
]


def test_log_browser_grid_draws_scrolls_and_a_row_click_shows_the_decoded_value(lab_page, lab_root: Path,
                                                                                 artifacts: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS], metadata=KERNEL)
    nbformat.write(nb, lab_root / "grid.ipynb")
    lab_page.open("grid.ipynb")
    lab_page.run_all()
    page = lab_page.page
    rows = page.locator(".ai-log-browser .ai-grid-row")
    rows.first.wait_for()
    assert 10 <= rows.count() <= 200  # a window of rows, not the log
    # a header says on hover what its column holds, in the glossary's words (issue 26 item 6)
    title = page.locator(".ai-log-browser .ai-grid-header[data-column='partition']").get_attribute("title") or ""
    assert define("partition") in title and "sort" in title, title

    # a click on a row shows that record's decoded value below the grid
    row = rows.nth(3)
    position = row.locator(".ai-grid-cell").first.inner_text()
    row.click()
    detail = page.locator(".ai-log-browser .ai-detail")
    page.wait_for_function("(pos) => { const d = document.querySelector('.ai-log-browser .ai-detail'); "
                           "return d && d.innerText.includes('record ' + pos + ':'); }", arg=position)
    assert "taskEvent" in detail.inner_text()
    assert "ai-grid-selected" in (row.get_attribute("class") or "")

    # scrolling far down asks the kernel for that window
    grid = page.locator(".ai-grid").nth(1)
    grid.locator(".ai-grid-status").wait_for()
    grid.locator(".ai-grid-scroll").evaluate("(el) => { el.scrollTop = 24 * 4000; }")
    page.wait_for_function("() => [...document.querySelectorAll('.ai-grid')[1].querySelectorAll('.ai-grid-row')]"
                           ".some(r => r.innerText.startsWith('4000'))")

    # a header click sorts in the kernel: descending on the second click
    header = grid.locator(".ai-grid-header", has_text="n")
    header.click()
    page.wait_for_function("() => document.querySelectorAll('.ai-grid')[1].querySelector('.ai-grid-sorted')")
    header.click()
    page.wait_for_function("() => { const r = document.querySelectorAll('.ai-grid')[1].querySelector('.ai-grid-row');"
                           " return r && r.innerText.startsWith('4999'); }")
    # a column filter, also in the kernel
    box = grid.locator(".ai-grid-filter[data-column='n']")
    box.fill("10-12")
    box.press("Enter")
    page.wait_for_function("() => document.querySelectorAll('.ai-grid')[1].querySelectorAll('.ai-grid-row').length === 3")
    page.screenshot(path=str(artifacts / "data-grid.png"))
    # the probe text is on screen as text and never ran
    assert PROBE in grid.locator(".ai-grid-row").first.inner_text()
    assert lab_page.xss_hits() == [] and lab_page.dialogs == []
