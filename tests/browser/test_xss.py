"""Script probes in keys, event types, attributes, memory paths and function ids never run in a browser.

The probe log (tests/report/probe_log.py) goes through every widget in JupyterLab, through every
``_repr_html_`` rendered as a static page without a kernel, and through the static report. Each probe
would push onto ``window.__xss_hits`` or open a dialog if it ran; both must stay empty. Hover text is
exercised by moving the mouse over every point of every figure.
"""

from __future__ import annotations

import html
import time
from pathlib import Path

import nbformat
import pytest

import agent_inspect as ai
from tests.report.probe_log import PROBES, assert_no_live_probe, write_probe_log

pytestmark = pytest.mark.browser

KERNEL = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
CELLS = [
    "import agent_inspect as ai\n"
    "from agent_inspect.agents import AsRecordedAgent\n"
    "from agent_inspect.rules import FixedRule\n"
    "log = ai.load('probe.jsonl')\n"
    "key = log.keys()[0]\n"
    "log",
    "result = ai.reconstruct(log, rule='original')\nfixed = ai.reconstruct(log, rule='fixed')\nresult",
    # the inspector's Records tab is the log browser
    "ai.inspect(fixed)",
    "timeline = ai.widgets.KeyTimeline(result, key)\ntimeline.select(int(result.records.index[-1]))\ntimeline",
    "ai.widgets.DivergenceView(fixed, key=key)",
    "ai.widgets.GraphView(result, key)",
    "ai.widgets.SubagentTreeView(result, key, 5)",
    "executor = ai.ReplayExecutor(log, agent=AsRecordedAgent(log), rule='original')\n"
    "executor.run()\n"
    "ai.inspect(executor)",
    # a rule whose name is a probe, compared on the probe log
    f"class ProbeRule(FixedRule):\n    name = {PROBES['action']!r}\n"
    "ai.inspect(ai.cases.compare(log, [ProbeRule(), 'original']))",
    "executor.report()",
    "ai.recovery.predict(log, rule='original')",
    "fixed.divergences",
    "fixed.lints",
    # a Trace Log whose keys, names, ids and attributes are probes, checked against the probe log
    f"from agent_inspect.sources import write_trace\nP = {PROBES!r}\n"
    "recs = [dict(timestamp='2026-01-01T00:00:00Z', detail='STANDARD', businessKey=key, entityType='event',\n"
    "             entityName='_input_event', entityMetadata=dict(eventId='in-1'), attributes={P['attr']: P['attr']}),\n"
    "        dict(timestamp='2026-01-01T00:00:01Z', detail='STANDARD', businessKey=P['key'] + '2',\n"
    "             entityType='action', entityName=P['action'], executionId=P['function_id'],\n"
    "             entityMetadata=dict(triggerEventId=P['event_type']), status='reused', attributes={'x': P['payload']})]\n"
    "write_trace(recs, 'probe.trace.log')\n"
    "verification = ai.verify(log, 'probe.trace.log', rule='original')\n"
    "view = ai.inspect(verification)\nview.select(len(verification.tasks) - 1)\nview",
    # a diff of two rules and an explanation, as objects (their _repr_html_) and as views
    "rules_diff = ai.diff(ai.diffing.select(log, rule='original'), ai.diffing.select(log, rule='fixed'))\nrules_diff",
    "ai.inspect(rules_diff)",
    "why = ai.explain(ai.recovery.predict(log, rule='original'), task=0, log=log)\nwhy",
    "ai.inspect(why, log=log)",
]

# Screen positions of up to 12 points of every figure, spread over its traces, for hovering.
_POINTS_JS = """
(i) => {
  const gd = document.querySelectorAll('.js-plotly-plot')[i];
  const fl = gd._fullLayout, r = gd.getBoundingClientRect(), out = [];
  if (!fl || !fl.xaxis || !fl.yaxis) return out;
  const per = Math.max(1, Math.floor(12 / Math.max(1, gd._fullData.length)));
  for (const t of gd._fullData) {
    const n = Math.min((t.x || []).length, per);
    for (let k = 0; k < n; k++) {
      const x = fl.xaxis.l2p(fl.xaxis.d2l(t.x[k])), y = fl.yaxis.l2p(fl.yaxis.d2l(t.y[k]));
      if (isFinite(x) && isFinite(y)) out.push([r.left + fl._size.l + x, r.top + fl._size.t + y]);
    }
  }
  return out;
}
"""


def _hover_everything(page) -> int:
    hovered = 0
    for i in range(page.locator(".js-plotly-plot").count()):
        plot = page.locator(".js-plotly-plot").nth(i)
        if not plot.is_visible():  # in a tab that is not selected
            continue
        plot.scroll_into_view_if_needed()
        for x, y in page.evaluate(_POINTS_JS, i):
            page.mouse.move(x, y)
            hovered += 1
    return hovered


@pytest.fixture(scope="module")
def probe_file(lab_root: Path) -> Path:
    return write_probe_log(lab_root / "probe.jsonl")


def test_probes_never_run_in_jupyterlab(lab_page, lab_root: Path, probe_file: Path, artifacts: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS], metadata=KERNEL)
    nbformat.write(nb, lab_root / "xss.ipynb")
    lab_page.open("xss.ipynb")
    t0 = time.monotonic()
    lab_page.run_all()
    ran = time.monotonic() - t0
    page = lab_page.page
    for css in (".ai-inspector .ai-log-browser", ".ai-timeline", ".ai-divergence", ".ai-graph", ".ai-subagent-tree",
                ".ai-stepper", ".ai-rule-compare", ".ai-verification .ai-verification-detail table",
                ".ai-diff", ".ai-explain"):
        page.locator(css).first.wait_for()
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 4")
    t0 = time.monotonic()
    assert _hover_everything(page) > 12
    print(f"run all {ran:.1f} s, hover {time.monotonic() - t0:.1f} s")
    page.screenshot(path=str(artifacts / "xss-lab.png"))
    # the probes are on screen as text, so they went through the views escaped rather than dropped
    text = lab_page.notebook_text()
    assert "onerror=\"window.__xss_hits.push('key')\"" in text
    assert lab_page.xss_hits() == [] and lab_page.dialogs == []


def test_probes_never_run_in_static_views_or_the_report(plain_page, tmp_path: Path, artifacts: Path) -> None:
    """Every ``_repr_html_`` as a page without a kernel, then the report file opened from disk."""
    from agent_inspect.agents import AsRecordedAgent

    log = ai.load(write_probe_log(tmp_path / "probe.jsonl"))
    result = ai.reconstruct(log, rule="original")
    fixed = ai.reconstruct(log, rule="fixed")
    executor = ai.ReplayExecutor(log, agent=AsRecordedAgent(log), rule="original")
    executor.run()

    class ProbeRule(ai.rules.FixedRule):
        name = PROBES["action"]

    from agent_inspect.sources import write_trace

    key = log.keys()[0]
    trace = write_trace([
        dict(timestamp="2026-01-01T00:00:00Z", detail="STANDARD", businessKey=key, entityType="event",
             entityName="_input_event", entityMetadata=dict(eventId="in-1"), attributes={PROBES["attr"]: "x"}),
        dict(timestamp="2026-01-01T00:00:01Z", detail="STANDARD", businessKey=PROBES["key"] + "2",
             entityType="action", entityName=PROBES["action"], executionId=PROBES["function_id"],
             entityMetadata=dict(triggerEventId=PROBES["event_type"]), status="reused",
             attributes={"x": PROBES["payload"]})], tmp_path / "probe.trace.log")

    views = {"log": log, "original": result, "fixed": fixed, "prediction": ai.recovery.predict(log, rule="original"),
             "executor": executor, "replay safety": executor.report(), "divergences": fixed.divergences,
             "lints": fixed.lints, "steps": executor.steps, "rule check": ai.checker.check(ProbeRule(), n=3),
             "trace": ai.load_trace(trace), "verification": ai.verify(log, trace, rule="original"),
             "diff": ai.diff(ai.diffing.select(log, rule="original"), ai.diffing.select(log, rule="fixed")),
             "explanation": ai.explain(ai.recovery.predict(log, rule="original"), task=0, log=log)}
    parts = []
    for name, obj in views.items():
        fragment = obj._repr_html_()
        assert_no_live_probe(fragment)
        parts.append(f'<section class="view" data-name="{html.escape(name)}">{fragment}</section>')
    page = plain_page.page
    page.set_content("<!DOCTYPE html><html><body>" + "".join(parts) + "</body></html>")
    assert page.locator("section.view table").count() >= len(views) - 1
    assert PROBES["event_type"] in page.locator("body").inner_text()
    page.screenshot(path=str(artifacts / "xss-static-views.png"))

    report = ai.write_report(result, tmp_path / "report.html")
    page.goto(report.as_uri())
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length === 1")
    assert _hover_everything(page) > 5
    assert "Divergences" in page.locator("nav").inner_text()
    page.screenshot(path=str(artifacts / "xss-report.png"), full_page=True)
    assert plain_page.xss_hits() == [] and plain_page.dialogs == []
    assert plain_page.console_errors == [], "the report's scripts must pass its own CSP"
    assert all(url.startswith(("file:", "about:", "data:")) for url in plain_page.requests), plain_page.requests
