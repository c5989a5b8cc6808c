"""Notebook 4 in JupyterLab + chromium: the VerificationView as a person uses it — read, click, pick, filter."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

NOTEBOOK = "notebooks/04_verify_against_trace.ipynb"

# screen position of the most isolated point of trace `name` in the n-th verification view's chart
_POINT_JS = """
([n, name]) => {
  const gd = document.querySelectorAll('.ai-verification')[n].querySelector('.js-plotly-plot');
  const fl = gd._fullLayout, r = gd.getBoundingClientRect();
  const px = (t, k) => [r.left + fl._size.l + fl.xaxis.l2p(t.x[k]),
                        r.top + fl._size.t + fl.yaxis.l2p(fl.yaxis.d2l(t.y[k]))];
  const markers = gd._fullData.filter(t => t.mode === 'markers');
  const all = [];
  for (const t of markers) for (let k = 0; k < t.x.length; k++) all.push([...px(t, k), t.customdata[k]]);
  const trace = markers.find(t => t.name === name);
  if (!trace) return null;
  let best = null;
  for (let k = 0; k < trace.x.length; k++) {
    const [x, y] = px(trace, k);
    const d = Math.min(...all.map(([a, b]) => Math.hypot(a - x, b - y)).filter(v => v > 0.5), 1e9);
    if (!best || d > best.d) best = {x, y, d, row: trace.customdata[k]};
  }
  return best;
}
"""


def test_verification_view_in_the_notebook(lab_page, artifacts: Path) -> None:
    lab_page.open(NOTEBOOK)
    lab_page.run_all(timeout_ms=180_000)
    page = lab_page.page
    page.wait_for_function("() => document.querySelectorAll('.ai-verification .js-plotly-plot').length === 2",
                           timeout=60_000)
    views = page.locator(".ai-verification")
    good, bad = views.nth(0), views.nth(1)

    # the production sample's trace agrees; the fixed-rule variant does not, and the view says why
    assert "agrees" in good.locator(".ai-verification-summary").inner_text()
    assert "643 tasks agree" in good.locator(".ai-verification-summary").inner_text()
    summary = bad.locator(".ai-verification-summary").inner_text()
    assert "disagrees" in summary and "fixed" in summary
    legend = bad.locator(".legend").text_content()
    assert "agree" in legend and "disagree" in legend

    # click a disagreeing task on the chart: the detail shows the cause, its trace records, its records
    bad.scroll_into_view_if_needed()
    point = page.evaluate(_POINT_JS, [1, "disagree"])
    assert point is not None, "the chart has no disagreeing task"
    page.mouse.click(point["x"], point["y"])
    detail = bad.locator(".ai-verification-detail")
    detail.filter(has_text="wrong-rule").wait_for()
    text = detail.inner_text()
    assert "predicted RERUN" in text and "observed REUSE" in text and "rule fixed" in text
    assert detail.locator(".ai-verification-trace table").count() == 1
    assert "reused" in detail.locator(".ai-verification-trace").inner_text()
    bad.screenshot(path=str(artifacts / "nb4-verification-disagree.png"))

    # pick an agreeing task from the list instead: the detail follows
    options = bad.locator(".ai-verification-rows select option")
    labels = options.all_inner_texts()
    agreeing = next(i for i, label in enumerate(labels) if label.startswith("✓"))
    bad.locator(".ai-verification-rows select").select_option(index=agreeing)
    detail.filter(has_text="(agrees)").wait_for()
    assert "action-state records joined" in detail.inner_text()

    # "disagreements only" leaves the two wrong-rule tasks in the list
    bad.locator(".ai-verification-filter input").check()
    page.wait_for_function(
        "() => document.querySelectorAll('.ai-verification')[1]"
        ".querySelectorAll('.ai-verification-rows select option').length === 2")
    assert all(label.startswith("✗") for label in options.all_inner_texts())

    assert lab_page.dialogs == [] and lab_page.xss_hits() == []
