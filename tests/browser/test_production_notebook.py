"""The first notebook in JupyterLab + chromium, used the way a person would: run it, click, read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_core_views_browser import assert_the_new_marks

pytestmark = pytest.mark.browser

NOTEBOOK = "notebooks/01_production_recovery.ipynb"
# the views whose marks (issue 24) are checked and photographed in both themes, as for notebooks 02 and 03
NB1_SHOTS = {".ai-timeline": "nb1-timeline", ".ai-divergence": "nb1-divergence", ".ai-graph": "nb1-graph",
             ".ai-stepper": "nb1-stepper"}

# The most isolated point of a trace on screen (plotly's own axis maps), so a click selects just it.
_POINT_JS = """
([root, traceName]) => {
  const gd = document.querySelector(root + ' .js-plotly-plot');
  const fl = gd._fullLayout, r = gd.getBoundingClientRect();
  const px = (t, k) => [r.left + fl._size.l + fl.xaxis.l2p(t.x[k]), r.top + fl._size.t + fl.yaxis.l2p(t.y[k])];
  const all = [];
  for (const t of gd._fullData) for (let k = 0; k < (t.x || []).length; k++) all.push([...px(t, k), t.customdata[k]]);
  const trace = gd._fullData.find(t => t.name === traceName);
  if (!trace) return null;
  let best = null;
  for (let k = 0; k < trace.x.length; k++) {
    const [x, y] = px(trace, k);
    if (y < r.top + fl._size.t + 30) continue;  // keep clear of the mode bar
    const d = Math.min(...all.map(([a, b]) => Math.hypot(a - x, b - y)).filter(v => v > 0.5), 1e9);
    if (!best || d > best.d) best = {x, y, d, pos: trace.customdata[k]};
  }
  // records a click there may select (plotly picks the closest point; markers overlap)
  if (best) best.near = all.filter(([a, b]) => Math.hypot(a - best.x, b - best.y) <= 8).map(p => p[2]);
  return best;
}
"""


def _counter(page, name: str) -> int:
    return int(page.locator(f".ai-stepper .ai-counter[data-name='{name}'] b").inner_text())


def _wait_change(page, before: int) -> int:
    """Wait until the stepper's step counter differs from ``before``; return the new value."""
    page.wait_for_function(
        "(before) => { const b = document.querySelector(\".ai-stepper .ai-counter[data-name='steps'] b\"); "
        "return b && Number(b.textContent) !== before; }", arg=before)
    return _counter(page, "steps")


def test_production_recovery_notebook(lab_page, artifacts: Path) -> None:
    lab_page.open(NOTEBOOK)
    lab_page.run_all(timeout_ms=180_000)
    page = lab_page.page
    # the notebook is run once (about 40 s in CI): the marks as drawn by "Run all", before anything is clicked
    assert_the_new_marks(page, NB1_SHOTS, artifacts)

    # what a person sees after "Run all": the log browser, the timeline, the divergence, the stepper
    for css in (".ai-log-browser", ".ai-timeline", ".ai-divergence", ".ai-stepper"):
        page.locator(css).first.wait_for()
    page.wait_for_function("() => document.querySelectorAll('.ai-timeline .js-plotly-plot').length === 1")
    assert "evicted" in page.locator(".ai-timeline .legend").text_content()
    figures = page.locator(".js-plotly-plot").count()
    assert figures >= 3, f"expected the browser, timeline and stepper figures, saw {figures}"
    assert "count>1" in page.locator(".jp-OutputArea-output").filter(has_text="explanation").first.inner_text()

    # click an evicted record on the timeline: its decoded value appears below the chart
    timeline = page.locator(".ai-timeline").first
    timeline.scroll_into_view_if_needed()
    point = page.evaluate(_POINT_JS, [".ai-timeline", "evicted"])
    assert point is not None, "the timeline has no evicted trace"
    page.mouse.click(point["x"], point["y"])
    detail = timeline.locator(".ai-detail")
    detail.filter(has_text=re.compile(r"record \d+:")).wait_for()
    selected = int(re.search(r"record (\d+):", detail.inner_text()).group(1))
    assert selected in point["near"], f"clicked near records {point['near']}, the view shows {selected}"
    assert '"taskEvent"' in detail.inner_text()
    timeline.screenshot(path=str(artifacts / "nb1-timeline-selected.png"))

    # the stepper: Step, Step, Back, Run to breakpoint (an eviction), Reset
    stepper = page.locator(".ai-stepper").first
    stepper.scroll_into_view_if_needed()
    assert _counter(page, "steps") == 0
    button = {name: stepper.locator("button.ai-stepper-button", has_text=name) for name in
              ("Step", "Back", "Run to breakpoint", "Reset")}
    button["Step"].click()
    first = _wait_change(page, 0)
    stepper.locator(".ai-step-detail caption").filter(has_text="step").wait_for()
    button["Step"].click()
    second = _wait_change(page, first)
    assert second > first
    button["Back"].click()
    assert _wait_change(page, second) == first
    button["Run to breakpoint"].click()
    stepper.locator(".ai-step-detail", has_text="eviction").wait_for()
    assert _counter(page, "steps") > 1
    assert stepper.locator(".js-plotly-plot").count() == 1
    stepper.screenshot(path=str(artifacts / "nb1-stepper-at-breakpoint.png"))
    button["Reset"].click()
    stepper.locator(".ai-step-detail", has_text="no step yet").wait_for()
    assert _counter(page, "steps") == 0

    page.screenshot(path=str(artifacts / "nb1-full.png"))
    assert lab_page.dialogs == [] and lab_page.xss_hits() == []
