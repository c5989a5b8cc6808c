"""A notebook saved with its widget state draws its charts again without the kernel that made them.

JupyterLab's "Save Widget State Automatically" writes every widget model into the notebook. Reopened, the
notebook gets a fresh kernel that knows none of those models (JupyterLab's widget manager needs some kernel to
exist at all; no kernel of ours answers): the charts must draw from the saved state alone, plotly.js included.
"""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.browser

KERNEL = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
SAVE_STATE = "@jupyter-widgets/jupyterlab-manager:saveWidgetState"
CELLS = ["import agent_inspect as ai\n"
         "log = ai.load(ai.samples.path('production'))\n"
         "result = ai.reconstruct(log, rule='original', markers=ai.samples.markers('production'))\n"
         "key = result.records['business_key'].value_counts().index[0]",
         "ai.widgets.KeyTimeline(result, key)",
         "ai.widgets.KeyTimeline(result, key)"]
DRAWN = ".ai-plot[data-ai-drawn]:not([data-ai-drawn='false'])"


def _drawn(page: object) -> list[str]:
    return page.eval_on_selector_all(DRAWN, "els => els.map(e => e.dataset.aiDrawn)")


def _set_saving(page: object, on: bool) -> None:
    page.evaluate("async ([id, on]) => { const c = window.jupyterapp.commands; "
                  "if (c.isToggled(id) !== on) await c.execute(id); }", [SAVE_STATE, on])
    page.wait_for_function("([id, on]) => window.jupyterapp.commands.isToggled(id) === on", arg=[SAVE_STATE, on])


def test_saved_widget_state_draws_the_charts_without_their_kernel(lab_page, lab_root: Path, artifacts: Path) -> None:
    path = lab_root / "saved_state.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS], metadata=KERNEL),
                   path)
    lab_page.open("saved_state.ipynb")
    lab_page.run_all()
    page = lab_page.page
    page.wait_for_function(f"() => document.querySelectorAll(\"{DRAWN}\").length >= 2", timeout=90_000)
    live = _drawn(page)
    _set_saving(page, True)
    try:
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")
    finally:
        _set_saving(page, False)  # the lab is shared by the session's other tests

    state = json.loads(path.read_text())["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]
    models = state["state"]
    libraries = {k: b for k, m in models.items() for b in m.get("buffers", []) if b["path"] == ["bundle"]}
    charts = [m for m in models.values() if "_library" in m["state"]]
    assert len(libraries) == 1 and len(charts) >= 2  # plotly.js saved once, however many charts
    (library, saved), = libraries.items()
    assert b"plotly.js v" in gzip.decompress(base64.b64decode(saved["data"]))[:400]
    assert {c["state"]["_library"] for c in charts} == {f"IPY_MODEL_{library}"}

    lab_page.shutdown_kernel()
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.sessionContext.session")  # gone for good
    lab_page.open("saved_state.ipynb")  # the page afresh: no plotly.js loaded, a new kernel
    assert lab_page.execute("import sys\nassert 'agent_inspect' not in sys.modules") == "ok"  # it made nothing
    page.wait_for_function(f"() => document.querySelectorAll(\"{DRAWN}\").length >= 2", timeout=60_000)
    assert sorted(_drawn(page)) == sorted(live)  # the same charts, the same records each
    assert page.locator(".ai-plot .js-plotly-plot .main-svg").count() >= 2
    page.screenshot(path=str(artifacts / "saved-state.png"))
