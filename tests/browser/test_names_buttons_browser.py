"""Issue 26 in JupyterLab + chromium, as a person clicks: names not UUIDs in the attempts diff, Explain (side b)
and Round, record buttons that read "record N" and open the key on that record, the verification headline
that admits differing calls, "disagreements only" with none, and a copied link that brings its view back.

Every cross-view button is clicked: Explain (side b), every record button of each explanation (the diff's, the
explain view's, the one a graph's divergence click opens), and the graph's divergence point on a folded group."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.browser

KERNEL = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
CELLS = [
    "import json\n"
    "import agent_inspect as ai\n"
    "from agent_inspect.history import annotate\n"
    "log = ai.load('sample_logs/production.jsonl')\n"
    "MARKERS = ai.samples.markers('production')\n"
    "KEY = 'user-0019'\n"
    "last = int(annotate(log.for_key(KEY))['attempt'].max())\n"
    "ai.inspect(ai.diff(ai.diffing.attempt(log, KEY, 1), ai.diffing.attempt(log, KEY, last)))",
    "why = ai.explain(log, KEY, 1, 'chat', rule='original', markers=MARKERS, also=['fixed'])\n"
    "ai.inspect(why, log=log)",
    "restore = json.loads(ai.samples.path('production', 'markers').read_text())['restore']\n"
    "v = ai.verify(log, ai.load_trace(ai.samples.path('production', 'trace')), markers=MARKERS, restore=restore)\n"
    "ai.inspect(v)",
    "history = ai.inspect(log, business_key=KEY, rule='original', markers=MARKERS)\n"
    "pos = int(history.lines.iloc[-1]['first_pos'])\n"
    "history.focus(pos)\n"
    "history",
    # a big key's graph: its divergence ✕ sits on a folded attempt group
    "original = ai.reconstruct(log, rule='original', markers=MARKERS)\n"
    "graph = ai.widgets.GraphView(original, 'user-0023')\n"
    "graph",
]
#: the plotly point of trace ``name`` under the view ``sel``, on screen
_POINT_JS = """
([sel, name]) => {
  const gd = document.querySelector(sel + ' .js-plotly-plot');
  const fl = gd._fullLayout, r = gd.getBoundingClientRect();
  const t = gd._fullData.find(t => t.name === name);
  return t ? {x: r.left + fl._size.l + fl.xaxis.l2p(t.x[0]), y: r.top + fl._size.t + fl.yaxis.l2p(t.y[0])} : null;
}
"""
NAMES = {"triage", "audit", "chat", "tool_call", "review", "check_policy", "approve"}
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def test_names_buttons_headline_and_copied_link(lab_page, lab_root: Path, artifacts: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS], metadata=KERNEL)
    nbformat.write(nb, lab_root / "names.ipynb")
    lab_page.open("names.ipynb")
    lab_page.run_all(timeout_ms=240_000)
    page = lab_page.page

    # the attempts diff: the action column shows names (the UUID on hover), Explain (side b) explains
    diff = page.locator(".ai-diff").first
    diff.scroll_into_view_if_needed()
    cells = diff.locator(".ai-diff-fields td.ai-diff-action")
    cells.first.wait_for()
    assert set(cells.all_inner_texts()) <= NAMES
    assert _UUID.fullmatch(cells.first.locator("span").get_attribute("title") or "")
    diff.locator(".ai-diff-explain-button").click()
    diff.locator(".ai-diff-explain .ai-explain .ai-explain-cause").wait_for()
    assert not diff.locator(".ai-diff-explain .ai-warning").count()
    title = diff.locator(".ai-diff-explain .ai-title").inner_text()
    assert not _UUID.search(title) and any(n in title for n in NAMES)
    # changing Round redraws the table too
    rounds = diff.locator(".widget-dropdown select").nth(1)
    options = rounds.locator("option").all_inner_texts()
    rounds.select_option(index=len(options) - 1)
    seq = options[-1].strip()
    diff.locator(f".ai-diff-fields table.ai-table[data-seq='{seq}']").wait_for()
    diff.screenshot(path=str(artifacts / "names-attempts-diff.png"))

    # the explanation: record buttons read "record N" in full and open the key's records on that record
    story = page.locator(".ai-explain").nth(1)
    story.scroll_into_view_if_needed()
    buttons = story.locator(".ai-explain-record")
    assert buttons.count() > 0
    for i in range(buttons.count()):
        assert re.fullmatch(r"record \d+", buttons.nth(i).inner_text().strip())
        assert buttons.nth(i).evaluate("b => b.scrollWidth <= b.clientWidth + 1"), "label cut off"
    _open_every_record(page, story, "user-0019")
    story.screenshot(path=str(artifacts / "names-explain-record.png"))
    # the explanation Explain (side b) opened has record buttons too: each opens its key on its record
    _open_every_record(page, diff.locator(".ai-diff-explain .ai-explain").first, "user-0019")

    # the verification headline never says just "agrees" while the calls differ
    ver = page.locator(".ai-verification").first
    ver.scroll_into_view_if_needed()
    head = ver.locator(".ai-verification-summary").inner_text()
    assert "agrees on tasks; calls differ (205 predicted, 175 observed" in head
    ver.locator(".ai-verification-filter input[type=checkbox]").check()
    ver.locator(".ai-verification-empty", has_text="no disagreement").wait_for()
    # a task's detail tables: UUIDs and timestamps on one line each, cut with the whole value on hover
    ver.locator(".ai-verification-filter input[type=checkbox]").uncheck()
    ver.locator(".ai-verification-rows select").select_option(index=0)
    ver.locator(".ai-verification-detail .ai-verification-trace table td").first.wait_for()
    tall = page.evaluate(
        "() => [...document.querySelectorAll('.ai-verification-detail table.agent-inspect td')]"
        ".filter(td => /^[0-9a-f]{8}-[0-9a-f]{4}-|^\\d{4}-\\d\\d-\\d\\d[ T]\\d/.test(td.textContent))"
        ".map(td => [td.textContent, td.getBoundingClientRect().height / parseFloat(getComputedStyle(td).fontSize),"
        " td.title])")
    assert tall, "the detail shows UUIDs and timestamps"
    # one line is about 1.2-1.5 font sizes plus padding; a wrapped UUID took 3-4 lines
    assert all(h < 2.4 and t == text for text, h, t in tall), tall
    ver.screenshot(path=str(artifacts / "names-verification.png"))

    # the copied link carries the markers and brings the same history back
    hist = page.locator(".ai-history").first
    hist.scroll_into_view_if_needed()
    snippet = hist.locator(".ai-h-focused-record .ai-h-snippet").inner_text()
    assert "markers=" in snippet and "rule='original'" in snippet
    assert lab_page.execute(f"again = {snippet}\n"
                            "assert again.header == history.header, (again.header, history.header)\n"
                            "assert again.lines[['action', 'status', 'outcome']].equals("
                            "history.lines[['action', 'status', 'outcome']])") == "ok"
    names = set(hist.locator(".ai-h-action").all_inner_texts()) - {"action"}
    assert names and names <= NAMES
    hist.screenshot(path=str(artifacts / "names-history.png"))

    # the graph's divergence ✕ on a folded attempt group: the click explains the task inside it (it raised
    # KeyError), filtered to the key, and the explanation's record buttons open the key on each record
    graph = page.locator(".ai-graph").first
    graph.scroll_into_view_if_needed()
    page.wait_for_function("() => { const gd = document.querySelector('.ai-graph .js-plotly-plot'); "
                           "return gd && gd._fullData && gd._fullData.some(t => t.name === 'divergence point'); }")
    point = page.evaluate(_POINT_JS, [".ai-graph", "divergence point"])
    assert point is not None
    page.mouse.click(point["x"], point["y"])
    why = graph.locator(".ai-graph-explain .ai-explain")
    why.locator(".ai-explain-cause").wait_for(timeout=60_000)
    assert "user-0023" in why.inner_text()
    _open_every_record(page, why, "user-0023")
    graph.screenshot(path=str(artifacts / "names-graph-divergence-explain.png"))

    assert lab_page.errors_in_outputs() == []
    assert not lab_page.xss_hits()


def _open_every_record(page, story, key: str) -> None:
    """Click each record button of an explanation: the log browser below opens filtered to ``key`` with that
    record shown, and its row selected and scrolled into view (not far below in the whole log)."""
    story.scroll_into_view_if_needed()
    buttons = story.locator(".ai-explain-record")
    assert buttons.count() > 0
    for i in range(buttons.count()):
        button = buttons.nth(i)
        pos = button.inner_text().split()[1]
        button.click()
        browser = story.locator(".ai-log-browser")
        browser.wait_for()
        key_box = browser.locator("input[placeholder='business key (exact)']").first
        page.wait_for_function("([el, key]) => el.value === key", arg=[key_box.element_handle(), key])
        browser.locator(".ai-detail", has_text=f"record {pos}").wait_for()
        row = browser.locator(".ai-log-grid .ai-grid-row.ai-grid-selected")
        page.wait_for_function("([r, pos]) => r.querySelector('.ai-grid-cell').textContent.trim() === pos",
                               arg=[row.element_handle(), pos])
        page.wait_for_function(
            "(r) => { const s = r.closest('.ai-grid-scroll'); "
            "const a = r.getBoundingClientRect(), b = s.getBoundingClientRect(); "
            "return a.top >= b.top - 1 && a.bottom <= b.bottom + 1; }", arg=row.element_handle())
