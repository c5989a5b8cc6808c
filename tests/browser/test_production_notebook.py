"""The first notebook in JupyterLab + chromium, used the way a person would: run it, click, read."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

NOTEBOOK = "notebooks/01_production_recovery.ipynb"

# Where a trace's first point sits on screen (plotly's own axis maps), and that record's log position.
_POINT_JS = """
([root, traceName]) => {
  const gd = document.querySelector(root + ' .js-plotly-plot');
  const fl = gd._fullLayout;
  const trace = gd._fullData.find(t => t.name === traceName);
  if (!trace) return null;
  const r = gd.getBoundingClientRect();
  return {x: r.left + fl._size.l + fl.xaxis.l2p(trace.x[0]), y: r.top + fl._size.t + fl.yaxis.l2p(trace.y[0]),
          pos: trace.customdata[0]};
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
    lab_page.run_all()
    page = lab_page.page

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
    detail.filter(has_text=f"record {point['pos']}:").wait_for()
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
