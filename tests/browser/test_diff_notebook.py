"""The diff-and-explain notebook in JupyterLab + chromium: DiffView and ExplainView as a person uses them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

NOTEBOOK = "notebooks/06_diff_and_explain.ipynb"

# Screen position of the first point of the "changed" trace of the n-th diff timeline, and its pair.
_POINT_JS = """
(n) => {
  const gd = [...document.querySelectorAll('.ai-diff')[n].querySelectorAll('.ai-diff-timeline .js-plotly-plot')]
    .find(e => e._fullData && e._fullData.length);
  if (!gd || !gd._fullLayout) return null;
  const fl = gd._fullLayout, r = gd.getBoundingClientRect();
  const t = gd._fullData.find(t => t.name === 'changed');
  if (!t || !t.x.length) return null;
  return {x: r.left + fl._size.l + fl.xaxis.l2p(t.x[0]), y: r.top + fl._size.t + fl.yaxis.l2p(t.y[0]),
          pair: t.customdata[0]};
}
"""


def test_diff_and_explain_notebook(lab_page, artifacts: Path) -> None:
    lab_page.open(NOTEBOOK)
    lab_page.run_all(timeout_ms=180_000)
    page = lab_page.page

    for css in (".ai-diff", ".ai-explain"):
        page.locator(css).first.wait_for()
    assert page.locator(".ai-diff").count() == 2          # the attempts' diff and the rules' diff

    # the attempts' diff: counts, the first divergence highlighted in the field panel, the round graph
    attempts = page.locator(".ai-diff").first
    attempts.scroll_into_view_if_needed()
    attempts.locator(".ai-diff-graph .js-plotly-plot").wait_for()
    assert re.search(r"changed \d+", attempts.locator(".ai-diff-summary").inner_text())
    first = attempts.locator(".ai-diff-fields tr.ai-first-divergence")
    assert first.count() == 1 and "state_key.event_uuid" in first.inner_text()
    assert "different event UUID" in attempts.locator(".ai-first-divergence-summary").inner_text()
    page.wait_for_function("() => [...document.querySelector('.ai-diff').querySelectorAll('.ai-diff-graph "
                           ".js-plotly-plot')].some(e => e._fullData && e._fullData.length)")
    names = page.evaluate("() => [...document.querySelector('.ai-diff').querySelectorAll('.ai-diff-graph "
                          ".js-plotly-plot')].find(e => e._fullData && e._fullData.length)._fullData.map(t => t.name)")
    assert "edges" in names and {"changed", "only in b"} & set(names), names

    # the explanation: a vertical story ending in the eviction, with record links into the log browser
    story = page.locator(".ai-explain").first
    steps = story.locator(".ai-explain-step")
    assert steps.count() >= 3
    cause = story.locator(".ai-explain-cause")
    assert cause.get_attribute("data-kind") == "evict" and "count>1" in cause.inner_text()
    assert "under rule fixed" in story.inner_text()
    story.locator(".ai-explain-record").last.click()
    story.locator(".ai-log-browser").wait_for()
    story.screenshot(path=str(artifacts / "nb6-explain.png"))

    # the rules' diff: click a changed mark on the timeline, then ask why side b decided so
    rules = page.locator(".ai-diff").nth(1)
    rules.scroll_into_view_if_needed()
    rules.locator(".ai-diff-timeline .js-plotly-plot").wait_for()
    page.wait_for_function(f"() => ({_POINT_JS})(1) !== null")
    pos = page.evaluate(_POINT_JS, 1)
    page.mouse.click(pos["x"], pos["y"])
    rules.locator(f".ai-diff-fields tr.ai-selected[data-pair='{pos['pair']}']").wait_for()
    rules.locator(".ai-diff-explain-button").click()
    rules.locator(".ai-diff-explain .ai-explain .ai-explain-cause").wait_for()
    assert re.search(r"→ (REUSE|RERUN|RESUME)", rules.locator(".ai-diff-explain .ai-title").inner_text())
    rules.screenshot(path=str(artifacts / "nb6-rules-diff.png"))

    assert lab_page.errors_in_outputs() == []
    assert not lab_page.xss_hits()
