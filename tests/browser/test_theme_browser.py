"""Every view in JupyterLab's light and dark theme: text contrast computed from the rendered styles, charts that
follow the theme, charts that read (issue 26 rows 2, 3, 6 and 8), and a screenshot of each view in each theme.

Contrast is WCAG's: the text colour (``color``, or ``fill`` for the charts' SVG text) composited with its
ancestors' opacity over the backgrounds under it (each ancestor's ``background-color``, down to the first opaque
one), against that background; every visible text of a view must reach 4.5:1.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.browser

KERNEL = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
SETUP = """\
import json
import agent_inspect as ai
from agent_inspect.agents import AsRecordedAgent
from agent_inspect.executor import Breakpoint
from agent_inspect.history import annotate
log = ai.load(ai.samples.path("production"))
MARKERS = ai.samples.markers("production")
original = ai.reconstruct(log, rule="original", markers=MARKERS)
removed = original.records[original.records["status"].isin(["evicted", "invalidated"])]
key = removed["business_key"].value_counts().index[0]
seq = int(removed.loc[removed["business_key"] == key, "seq"].min())
calls = ai.reconstruct(ai.load(ai.samples.path("subagents")), rule="original", markers=ai.samples.markers("subagents"))
sub = calls.records[calls.records["subagent_session_id"].notna()].iloc[0]
restore = json.loads(ai.samples.path("production", "markers").read_text())["restore"]
good = ai.verify(log, ai.samples.path("production", "trace"), markers=MARKERS, restore=restore)
n04 = ai.load(ai.samples.path("N04"))
bad = ai.verify(n04, ai.samples.sample_dir() / "N04.fixed-rule.trace.log", markers=ai.samples.markers("N04"),
                restore=json.loads(ai.samples.path("N04", "markers").read_text())["restore"])
prediction = ai.recovery.predict(log, rule="original", markers=MARKERS)
tasks = prediction.tasks
again = tasks[tasks["outcome"] == "RERUN"].iloc[0]
KEY, SEQ, ACTION = again["key"], int(again["seq"]), again["action"]
attempts = annotate(log.for_key(KEY))["attempt"]
attempt_diff = ai.diff(ai.diffing.attempt(log, KEY, 1), ai.diffing.attempt(log, KEY, int(attempts.max())))
why = ai.explain(log, KEY, SEQ, ACTION, rule="original", markers=MARKERS, also=["fixed"])
rules = ai.diff(ai.diffing.select(log, rule="original", markers=MARKERS),
                ai.diffing.select(log, rule="fixed", markers=MARKERS))
executor = ai.ReplayExecutor(log, agent=AsRecordedAgent(log), rule="original", markers=MARKERS,
                             breakpoints=[Breakpoint(kind="eviction")])
import tempfile
from pathlib import Path
WORK = Path(tempfile.mkdtemp(prefix="theme-scan-"))
fleet = ai.samples.write_fleet(WORK / "fleet.parquet", 60, partitions=2, rounds=3, branch_every=7, seed=1)
scan = ai.scan(fleet, markers=None, what_if=("fixed",), workers=1, output=WORK / "scan", dashboard=False)
"""
# (name, the cell that shows the view, its CSS class)
VIEWS = [
    ("log-browser", "ai.inspect(log)", "ai-log-browser"),
    ("result", "ai.inspect(original)", "ai-inspector"),
    ("timeline", "ai.widgets.KeyTimeline(original, key)", "ai-timeline"),
    ("history", "ai.widgets.KeyHistory(original, key)", "ai-history"),
    ("divergence", "ai.widgets.DivergenceView(original, key=key)", "ai-divergence"),
    ("graph", "ai.widgets.GraphView(original, key, seq)", "ai-graph"),
    ("subagent-tree", "ai.widgets.SubagentTreeView(calls, sub['business_key'], int(sub['seq']))", "ai-subagent-tree"),
    ("prediction", "ai.inspect(prediction)", "ai-prediction"),
    ("stepper", "ai.inspect(executor)", "ai-stepper"),
    ("rule-comparison", "ai.inspect(ai.cases.compare(log, ['original', 'fixed'], markers=MARKERS))",
     "ai-rule-compare"),
    ("verification", "ai.inspect(good)", "ai-verification"),
    ("verification-bad-trace", "ai.inspect(bad)", "ai-verification"),
    ("attempt-diff", "ai.inspect(attempt_diff)", "ai-diff"),
    ("explain", "ai.inspect(why, log=log)", "ai-explain"),
    ("rules-diff", "ai.inspect(rules, key=KEY)", "ai-diff"),
    ("fleet-scan", "ai.inspect(scan)", "ai-scan"),
    ("replay-safety", "safety = ai.ReplayExecutor(log, markers=MARKERS)\nsafety.run()\nai.inspect(safety.report())",
     "ai-result-view"),
]

_CONTRAST_JS = """
(root) => {
  const parse = (s) => {
    s = (s || '').trim();
    let m = s.match(/^rgba?\\(([^)]*)\\)$/);
    if (m) {
      const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
      return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    }
    m = s.match(/^#([0-9a-f]{6})$/i);
    if (m) return [0, 2, 4].map(i => parseInt(m[1].slice(i, i + 2), 16)).concat([1]);
    m = s.match(/^color\\(srgb ([^)]*)\\)$/);
    if (m) {
      const p = m[1].split(/[\\s\\/]+/).filter(Boolean).map(Number);
      return [p[0] * 255, p[1] * 255, p[2] * 255, p.length > 3 ? p[3] : 1];
    }
    if (s === 'transparent' || s === 'none' || s === '') return [0, 0, 0, 0];
    return null;
  };
  const over = (top, under) => {  // top (with alpha) composited over an opaque colour
    const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + under[i] * (1 - a)).concat([1]);
  };
  const lum = (c) => {
    const ch = c.slice(0, 3).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2];
  };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const background = (el) => {
    const layers = [];
    for (let n = el; n && n.nodeType === 1; n = n.parentElement) {
      const c = parse(getComputedStyle(n).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let bg = [255, 255, 255, 1];
    for (let i = layers.length - 1; i >= 0; i--) bg = layers[i][3] >= 1 ? layers[i] : over(layers[i], bg);
    return bg;
  };
  // a heatmap's value text sits on its cell: the trace's colour scale at that value, over the page
  const heatCell = (el, bg) => {
    const gd = el.closest('.js-plotly-plot');
    const trace = gd && (gd._fullData || []).find(t => t.type === 'heatmap');
    const z = Number(el.textContent);
    if (!trace || !Number.isFinite(z)) return null;
    const span = (trace.zmax - trace.zmin) || 1;
    const f = Math.min(1, Math.max(0, (z - trace.zmin) / span));
    const stops = trace.colorscale;
    for (let i = 1; i < stops.length; i++) {
      if (f <= stops[i][0]) {
        const [a, b] = [parse(stops[i - 1][1]), parse(stops[i][1])];
        const k = (f - stops[i - 1][0]) / ((stops[i][0] - stops[i - 1][0]) || 1);
        return over([0, 1, 2, 3].map(j => a[j] + (b[j] - a[j]) * k), bg);
      }
    }
    return null;
  };
  const opacity = (el) => {
    let o = 1;
    for (let n = el; n && n.nodeType === 1; n = n.parentElement) o *= Number(getComputedStyle(n).opacity);
    return o;
  };
  const holders = new Set();
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const t = walker.currentNode;
    if (!t.textContent.trim() || !t.parentElement) continue;
    let el = t.parentElement;
    if (el.closest('select')) el = el.closest('select');
    if (el.closest('style, script')) continue;
    holders.add(el);
  }
  const out = [];
  for (const el of holders) {
    const cs = getComputedStyle(el);
    const box = el.getBoundingClientRect();
    if (cs.visibility !== 'visible' || cs.display === 'none' || box.width === 0 || box.height === 0) continue;
    const svg = el instanceof SVGElement;
    const fg = parse(svg ? cs.fill : cs.color);
    const o = opacity(el);
    if (o < 0.05) continue;  // an invisible helper
    if (!fg) { out.push({text: el.textContent.slice(0, 40), unparsed: svg ? cs.fill : cs.color}); continue; }
    if (el.closest('[disabled], .ai-plot-tip[hidden]')) continue;  // WCAG exempts inactive controls
    let bg = background(el);
    if (svg && el.closest('.heatmaplayer')) bg = heatCell(el, bg) || bg;
    const ink = over([fg[0], fg[1], fg[2], fg[3] * o], bg);
    out.push({text: el.textContent.trim().slice(0, 40), tag: el.tagName, cls: String(el.className.baseVal ?? el.className),
              ratio: Math.round(ratio(ink, bg) * 100) / 100, fg: svg ? cs.fill : cs.color, bg: bg.map(Math.round)});
  }
  return out;
}
"""

_LABEL_VIEW_JS = """
(names) => {
  const cells = window.jupyterapp.shell.currentWidget.content.widgets;
  names.forEach((name, i) => { cells[i + 1].outputArea.node.dataset.themeView = name; });
}
"""

# tick labels, axis titles and the legend of every chart in a view's output
_CHARTS_JS = """
(root) => [...root.querySelectorAll('.js-plotly-plot')].map(gd => ({
  xticks: [...gd.querySelectorAll('.xaxislayer-above .xtick text')].map(t => t.textContent),
  yticks: [...gd.querySelectorAll('.yaxislayer-above .ytick text')].map(t => t.textContent),
  xticks2: [...gd.querySelectorAll('.xaxislayer-above .x2tick text')].map(t => t.textContent),
  yticks2: [...gd.querySelectorAll('.yaxislayer-above .y2tick text')].map(t => t.textContent),
  titles: [...gd.querySelectorAll('.g-xtitle text, .g-ytitle text, .g-x2title text, .g-y2title text')]
    .map(t => t.textContent),
  legend: [...gd.querySelectorAll('.legend .legendtext')].map(t => t.textContent),
  labels: [...gd.querySelectorAll('.textpoint text, .annotation-text')].map(t => { const b = t.getBoundingClientRect();
    return [b.left, b.top, b.right, b.bottom]; }),
  paper: gd._fullLayout.paper_bgcolor, theme: gd.closest('.ai-plot').dataset.aiTheme,
}))
"""


def _notebook(lab_root: Path) -> str:
    cells = [SETUP] + [code for _, code, _ in VIEWS]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells], metadata=KERNEL)
    nbformat.write(nb, lab_root / "theme-views.ipynb")
    return "theme-views.ipynb"


def _set_theme(page, name: str, light: bool) -> None:
    page.evaluate("(name) => window.jupyterapp.commands.execute('apputils:change-theme', {theme: name})", name)
    page.wait_for_function("(light) => document.body.dataset.jpThemeLight === String(light)", arg=light,
                           timeout=30_000)
    theme = "light" if light else "dark"
    # every chart has drawn itself again in the new theme (a chart that does not say which theme it drew in is
    # taken as drawn: the contrast check then judges it as it is)
    page.wait_for_function("(t) => [...document.querySelectorAll('.ai-plot')].every(p => (p.dataset.aiTheme || t) "
                           "=== t && p.dataset.drawn === '1')", arg=theme, timeout=60_000)
    page.wait_for_timeout(800)  # JupyterLab's own stylesheet transition


def _overlapping(boxes: list[list[float]]) -> int:
    return sum(1 for i, a in enumerate(boxes) for b in boxes[i + 1:]
               if a[0] < b[2] - 1 and b[0] < a[2] - 1 and a[1] < b[3] - 1 and b[1] < a[3] - 1)


@pytest.fixture(scope="module")
def views_page(browser, lab, lab_root: Path):
    from tests.browser.conftest import open_lab_page

    # tall enough that each view's screenshot is the view itself, not the page scrolled under it
    with open_lab_page(browser, lab, height=2600, timeout_ms=60_000) as wrapper:
        page = wrapper.page
        wrapper.open(_notebook(lab_root))
        wrapper.run_all(timeout_ms=600_000)
        page.evaluate(_LABEL_VIEW_JS, [name for name, _, _ in VIEWS])
        for name, _, css in VIEWS:
            page.locator(f'[data-theme-view="{name}"] .{css}').first.wait_for(timeout=120_000)
        page.wait_for_function("() => [...document.querySelectorAll('.ai-plot')].every(p => p.dataset.drawn === '1')",
                               timeout=120_000)
        yield wrapper


@pytest.mark.parametrize(("theme", "light"), [("JupyterLab Light", True), ("JupyterLab Dark", False)])
def test_every_view_reads_in_both_themes(views_page, artifacts: Path, theme: str, light: bool) -> None:
    page = views_page.page
    _set_theme(page, theme, light)
    variant = "light" if light else "dark"
    failures: dict[str, list[dict]] = {}
    checked = 0
    for name, _, css in VIEWS:
        view = page.locator(f'[data-theme-view="{name}"] .{css}').first
        view.scroll_into_view_if_needed()
        view.screenshot(path=str(artifacts / f"theme-{name}-{variant}.png"))
        texts = page.evaluate(_CONTRAST_JS, view.element_handle())
        assert texts, f"{name}: no text found"
        checked += len(texts)
        bad = [t for t in texts if "ratio" not in t or t["ratio"] < 4.5]
        if bad:
            failures[name] = bad[:6]
    print(f"{theme}: {checked} texts in {len(VIEWS)} views")
    assert not failures, f"text under 4.5:1 in {theme}: {failures}"


def test_charts_follow_the_theme(views_page) -> None:
    page = views_page.page
    _set_theme(page, "JupyterLab Dark", False)
    charts = page.evaluate(_CHARTS_JS, page.locator("body").element_handle())
    assert charts and all(c["theme"] == "dark" for c in charts), {c["theme"] for c in charts}
    # no white block: the paper is transparent over JupyterLab's dark background
    assert {c["paper"].replace(" ", "") for c in charts} == {"rgba(0,0,0,0)"}, {c["paper"] for c in charts}
    history = page.locator('[data-theme-view="history"] .ai-h-line.ai-h-rerun').first
    if history.count():  # issue 26 row 2: re-run rows were light pink under near-white text
        bg = page.evaluate("(el) => getComputedStyle(el).backgroundColor", history.element_handle())
        assert "255, 243, 240" not in bg, bg
    _set_theme(page, "JupyterLab Light", True)


def test_verification_chart_reads(views_page) -> None:
    """Issue 26 row 6: labels that do not overlap, a legend for the shapes, integer ticks, the view fits."""
    page = views_page.page
    _set_theme(page, "JupyterLab Light", True)
    for name in ("verification", "verification-bad-trace"):
        out = page.locator(f'[data-theme-view="{name}"]')
        out.scroll_into_view_if_needed()
        (chart,) = page.evaluate(_CHARTS_JS, out.element_handle())
        assert _overlapping(chart["labels"]) == 0, f"{name}: labels overlap"
        assert any(t.startswith("predicted ") for t in chart["legend"]), chart["legend"]
        assert len(chart["xticks"]) == len(set(chart["xticks"])), f"{name}: x ticks {chart['xticks']}"
        assert all(t.lstrip("−-").isdigit() for t in chart["xticks"]), chart["xticks"]
        assert "task (dispatch order within the key)" in chart["titles"] and "key" in chart["titles"]
        widths = page.evaluate("(el) => [el.scrollWidth, el.clientWidth, el.querySelector('.ai-verification')"
                               ".getBoundingClientRect().width, el.getBoundingClientRect().width]",
                               out.element_handle())
        assert widths[0] <= widths[1] + 1 and widths[2] <= widths[3] + 1, f"{name}: wider than the output {widths}"


def test_fleet_histograms_read(views_page) -> None:
    """Issue 26 row 8: counts on integer ticks, and axis titles."""
    page = views_page.page
    out = page.locator('[data-theme-view="fleet-scan"]')
    out.scroll_into_view_if_needed()
    (chart,) = page.evaluate(_CHARTS_JS, out.element_handle())
    for ticks in (chart["yticks"], chart["yticks2"], chart["xticks2"]):
        assert ticks and all(t.replace(",", "").replace("k", "").lstrip("−-").isdigit() for t in ticks), ticks
        assert len(ticks) == len(set(ticks)), ticks
    assert {"bytes of history", "durable calls re-executed", "keys"} <= set(chart["titles"]), chart["titles"]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import agent_inspect as ai

    log = ai.load(ai.samples.path("production"))
    original = ai.reconstruct(log, rule="original", markers=ai.samples.markers("production"))
    return ai.write_report(original, tmp_path_factory.mktemp("report") / "report.html", max_keys=2)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_report_reads_in_both_schemes(browser, report: Path, artifacts: Path, scheme: str) -> None:
    """The static report follows the reader's prefers-color-scheme, charts included."""
    context = browser.new_context(viewport={"width": 1280, "height": 1400}, color_scheme=scheme)
    try:
        page = context.new_page()
        page.goto(report.as_uri())
        page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length > 0")
        page.screenshot(path=str(artifacts / f"theme-report-{scheme}.png"))
        texts = page.evaluate(_CONTRAST_JS, page.locator("body").element_handle())
        bad = [t for t in texts if "ratio" not in t or t["ratio"] < 4.5]
        assert len(texts) > 50 and not bad, bad[:8]
        paper = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        channels = [int(c) for c in re.findall(r"\d+", paper)[:3]]
        assert (min(channels) > 200) if scheme == "light" else (max(channels) < 60), paper
    finally:
        context.close()


def test_the_reports_charts_take_the_dark_palette(browser, report: Path) -> None:
    """In the dark scheme the report's chart marks are the palette's dark variants (a crash mark drawn in the light
    "ink" was near-black on the dark paper)."""
    from agent_inspect.widgets import PALETTE

    def rgb(hex_colour: str) -> str:
        r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
        return f"rgb({r}, {g}, {b})"

    light = {rgb(s.light) for role, s in PALETTE.items() if role != "paper"}
    dark = {rgb(s.dark) for s in PALETTE.values()}
    context = browser.new_context(viewport={"width": 1280, "height": 1400}, color_scheme="dark")
    try:
        page = context.new_page()
        page.goto(report.as_uri())
        page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length > 0")
        page.wait_for_timeout(500)
        fills = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot .scatterlayer path.point')]"
                              ".map((p) => getComputedStyle(p).fill)")
        assert fills and not light & set(fills), sorted(light & set(fills))
        assert rgb(PALETTE["ink"].dark) in fills, sorted(set(fills))   # the crash mark
        assert set(fills) <= dark, sorted(set(fills) - dark)
    finally:
        context.close()
