"""The core views in JupyterLab + chromium (issue 24 items 1-4): what a person sees without clicking.

The divergence point and its legend entry in a round's graph, reused and re-run sub-agent children told apart
by their badges and colours, the stepper's height after Run to end, the ✕ of the timeline hovered. Notebooks
02 and 03 are run and photographed in JupyterLab's light and dark themes (01 by test_production_notebook.py,
which runs it for its clicks). Reads what the page drew (plotly's
``_fullData`` and the DOM); timings are never asserted.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

pytestmark = pytest.mark.browser

KERNEL = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
SETUP = (
    "import agent_inspect as ai\n"
    "from agent_inspect.agents import AsRecordedAgent\n"
    "log = ai.load(ai.samples.path('production'))\n"
    "MARKERS = ai.samples.markers('production')\n"
    "original = ai.reconstruct(log, rule='original', markers=MARKERS)"
)
# the production sample's first divergent round of its first diverging key in the inspector's Graph tab
GRAPH = "graph = ai.widgets.GraphView(original, 'user-0004', 0)\ngraph"
TREE = ("sub = ai.reconstruct(ai.load(ai.samples.path('subagents')), rule='original',\n"
        "                     markers=ai.samples.markers('subagents'))\n"
        "tree = ai.widgets.SubagentTreeView(sub, 'order-1')\ntree")
STEPPER = ("executor = ai.ReplayExecutor(log, agent=AsRecordedAgent(log), rule='original', markers=MARKERS)\n"
           "stepper = ai.inspect(executor)\nstepper")
TIMELINE = "timeline = ai.widgets.KeyTimeline(original, 'user-0004')\ntimeline"

_TRACES_JS = """
(sel) => {
  const gd = document.querySelector(sel + ' .js-plotly-plot');
  if (!gd || !gd._fullData) return null;
  return gd._fullData.map(t => ({name: t.name, n: (t.x || []).length, colour: (t.marker || {}).color,
                                 symbol: (t.marker || {}).symbol, text: Array.from(t.text || [])}));
}
"""
# screen position of the k-th point of trace `name` in the chart under `sel`
_POINT_JS = """
([sel, name, k]) => {
  const gd = document.querySelector(sel + ' .js-plotly-plot');
  const fl = gd._fullLayout, r = gd.getBoundingClientRect();
  const t = gd._fullData.find(t => t.name === name);
  if (!t) return null;
  return {x: r.left + fl._size.l + fl.xaxis.l2p(t.x[k]), y: r.top + fl._size.t + fl.yaxis.l2p(t.y[k])};
}
"""


def _notebook(lab_root: Path, name: str, cells: list[str]) -> str:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells], metadata=KERNEL)
    nbformat.write(nb, lab_root / name)
    return name


def _drawn(page, sel: str, trace: str, timeout: float = 60_000) -> list[dict]:
    page.wait_for_function("([sel, name]) => { const gd = document.querySelector(sel + ' .js-plotly-plot'); "
                           "return gd && gd._fullData && gd._fullData.some(t => t.name === name); }",
                           arg=[sel, trace], timeout=timeout)
    return page.evaluate(_TRACES_JS, sel)


def _hover_tip(page, sel: str, trace: str, pattern: str) -> str:
    page.locator(sel).first.scroll_into_view_if_needed()
    point = page.evaluate(_POINT_JS, [sel, trace, 0])
    assert point is not None, f"{sel} draws no {trace!r}"
    page.mouse.move(point["x"] + 1, point["y"] + 1)
    page.mouse.move(point["x"], point["y"])
    page.wait_for_function("([sel, pattern]) => new RegExp(pattern).test("
                           "(document.querySelector(sel + ' .ai-plot-tip') || {}).innerText || '')",
                           arg=[sel, pattern], timeout=10_000)
    return page.locator(sel + " .ai-plot-tip").first.inner_text()


def _theme(page, name: str) -> None:
    light = "true" if name == "JupyterLab Light" else "false"
    page.evaluate("(theme) => window.jupyterapp.commands.execute('apputils:change-theme', {theme})", name)
    page.wait_for_function("(light) => document.body.dataset.jpThemeLight === light", arg=light, timeout=30_000)
    page.wait_for_timeout(500)  # the theme's stylesheet reaches every view


def _light_and_dark(page, shots: dict[str, str], artifacts: Path) -> None:
    """Screenshots of each element (``{css: file stem}``) in the light theme, then in the dark one."""
    for theme, suffix in (("JupyterLab Light", "light"), ("JupyterLab Dark", "dark")):
        _theme(page, theme)
        for css, stem in shots.items():
            element = page.locator(css).first
            element.scroll_into_view_if_needed()
            element.screenshot(path=str(artifacts / f"{stem}-{suffix}.png"))
    _theme(page, "JupyterLab Light")


def test_graph_marks_the_divergence_point_in_the_legend(lab_page, lab_root: Path, artifacts: Path) -> None:
    lab_page.open(_notebook(lab_root, "core-graph.ipynb", [SETUP, GRAPH]))
    lab_page.run_all()
    page = lab_page.page
    sel = ".ai-graph"
    traces = _drawn(page, sel, "divergence point")
    mark = next(t for t in traces if t["name"] == "divergence point")
    assert mark["n"] == 1 and mark["symbol"] == "circle-open"  # the triage lookup of attempt 2
    assert "divergence point" in page.locator(sel + " .legend").first.text_content()
    title = page.locator(sel + " .ai-title").first.inner_text()
    assert "user-0004" in title and "seq 0" in title and "attempts 1, 2" in title
    # the evicted suffix lies in later rounds: the graph says which and how many
    assert "removed seq 1 ×5" in page.locator(sel + " .ai-graph-suffix").first.inner_text()
    lanes = page.evaluate("() => document.querySelector('.ai-graph .js-plotly-plot')._fullLayout.annotations"
                          ".map(a => a.text)")
    assert "<b>attempt 1</b>" in lanes and "<b>attempt 2</b>" in lanes
    tip = _hover_tip(page, sel, "divergence point", "rule original")
    assert "cause:" in tip and "removed:" in tip
    _light_and_dark(page, {sel: "core-graph-user-0004-seq-0"}, artifacts)
    assert lab_page.dialogs == [] and lab_page.xss_hits() == []


def test_subagent_tree_tells_children_apart_by_what_the_recovery_did(lab_page, lab_root: Path, artifacts: Path) -> None:
    lab_page.open(_notebook(lab_root, "core-tree.ipynb", ["import agent_inspect as ai", TREE]))
    lab_page.run_all()
    page = lab_page.page
    sel = ".ai-subagent-tree"
    traces = {t["name"]: t for t in _drawn(page, sel, "child · re-run")}
    # seq 5's caller is reused and makes no call: its finished children are not dispatched (spec S02)
    rerun, idle = traces["child · re-run"], traces.get("child · not-dispatched")
    assert idle is not None, list(traces)
    assert rerun["colour"] != idle["colour"]
    # the badges are drawn as text beside the nodes: no click, no hover needed
    drawn_text = page.locator(sel + " .js-plotly-plot .scatterlayer").first.text_content()
    assert "RE-RUN" in drawn_text and "NOT-DISPATCHED" in drawn_text and "REUSED" in drawn_text  # + the caller
    assert "evicted" in drawn_text and "live" in drawn_text   # next to the record status
    legend = page.locator(sel + " .legend").first.text_content()
    assert "child · re-run" in legend and "child · not-dispatched" in legend
    edge_words = page.evaluate("() => document.querySelector('.ai-subagent-tree .js-plotly-plot')._fullLayout"
                               ".annotations.map(a => a.text)")
    assert "<i>calls</i>" in edge_words and "<i>emits</i>" in edge_words
    _light_and_dark(page, {sel: "core-subagent-tree-order-1"}, artifacts)
    assert lab_page.dialogs == [] and lab_page.xss_hits() == []


def test_stepper_after_run_to_end_stays_short(lab_page, lab_root: Path, artifacts: Path) -> None:
    lab_page.open(_notebook(lab_root, "core-stepper.ipynb", [SETUP, STEPPER]))
    lab_page.run_all()
    page = lab_page.page
    stepper = page.locator(".ai-stepper").first
    stepper.locator(".ai-stepper-button", has_text="Run to breakpoint").click()
    stepper.locator(".ai-stepper-status", has_text="finished").wait_for(timeout=180_000)
    page.wait_for_function("() => document.querySelector('.ai-stepper [data-ai-drawn]')"
                           ".dataset.aiDrawn > 3000", timeout=60_000)
    height = page.evaluate("() => { const s = document.querySelector('.ai-stepper'); "
                           "return (s.closest('.jp-OutputArea') || s).getBoundingClientRect().height; }")
    parts = page.evaluate("() => [...document.querySelector('.ai-stepper').children].map(c => "
                          "[c.className.slice(0, 60), Math.round(c.getBoundingClientRect().height)])")
    print(f"stepper output after Run to end: {height:.0f} px tall: {parts}")
    assert height < 2500, height
    traces = {t["name"]: t for t in page.evaluate(_TRACES_JS, ".ai-stepper")}
    # evictions: their own symbol, drawn after (over) the reruns they cause
    names = list(traces)
    assert traces["eviction"]["symbol"] == "x" and names.index("eviction") > names.index("rerun")
    assert stepper.locator(".ai-step-cause").inner_text().strip()  # the last step says why, in one line
    _light_and_dark(page, {".ai-stepper": "core-stepper-run-to-end"}, artifacts)


def test_timeline_cross_hover_names_the_rule(lab_page, lab_root: Path, artifacts: Path) -> None:
    lab_page.open(_notebook(lab_root, "core-timeline.ipynb", [SETUP, TIMELINE]))
    lab_page.run_all()
    page = lab_page.page
    sel = ".ai-timeline"
    _drawn(page, sel, "divergence")
    legend = page.locator(sel + " .legend").first.text_content()
    assert "divergence" in legend and "evicted suffix" in legend
    tip = _hover_tip(page, sel, "divergence", "rule original")
    # the ✕ (or a record beneath it, whichever point the mouse picks) leads with the divergence, not a record
    assert re.match(r"✕: divergence #\d+ · count>1", tip.lstrip()) and "removed: seq 1 ×5" in tip
    point = page.evaluate(_POINT_JS, [sel, "divergence", 0])
    detail = page.locator(sel + " .ai-detail").first
    shown = detail.filter(has_text=re.compile(r"divergence #\d+"))
    for attempt in range(3):
        # a click can land while plotly still redraws the hover of the last move: leave the chart, click again
        if attempt:
            page.mouse.move(1, 1)
        page.mouse.click(point["x"], point["y"])
        try:
            shown.wait_for(timeout=5_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    assert "cause:" in detail.inner_text() and "status: superseded" not in detail.inner_text()
    _light_and_dark(page, {sel: "core-timeline-user-0004"}, artifacts)


# notebook 01's marks: test_production_notebook.py checks them on its run of that notebook (run once, not twice)
@pytest.mark.parametrize("notebook, shots", [
    ("notebooks/02_action_graphs.ipynb", {".ai-graph": "nb2-graph", ".ai-subagent-tree": "nb2-subagent-tree"}),
    # the case matrix's heatmap and the checker's report (its stale reuses and their story)
    ("notebooks/03_divergence_rules.ipynb", {".ai-rule-compare": "nb3-rule-compare", ".ai-repr": "nb3-check-report"}),
], ids=["02", "03"])
def test_notebooks_show_the_new_marks(lab_page, artifacts: Path, notebook: str, shots: dict[str, str]) -> None:
    lab_page.open(notebook)
    lab_page.run_all(timeout_ms=180_000)
    assert_the_new_marks(lab_page.page, shots, artifacts)
    assert lab_page.dialogs == [] and lab_page.xss_hits() == []


def assert_the_new_marks(page, shots: dict[str, str], artifacts: Path) -> None:
    """The marks of a run notebook's views are drawn; each view photographed in the light and dark themes."""
    for css in shots:
        page.locator(css).first.wait_for()
    if ".ai-graph" in shots:
        _drawn(page, ".ai-graph", "divergence point")
    if ".ai-subagent-tree" in shots:
        _drawn(page, ".ai-subagent-tree", "child · re-run")
    if ".ai-timeline" in shots:
        _drawn(page, ".ai-timeline", "divergence")
    if ".ai-rule-compare" in shots:
        page.locator(".ai-rule-heatmap .js-plotly-plot").first.wait_for()
        assert "stale" in page.locator(".ai-repr").first.inner_text()   # the checker found the G09 stale reuse
    _light_and_dark(page, shots, artifacts)
