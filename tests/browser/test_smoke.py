"""The harness itself: JupyterLab + chromium run a trivial notebook with a widget and figures."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.browser

KERNEL = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
CELLS = [
    "import ipywidgets as w\n"
    "out = w.Output()\n"
    "btn = w.Button(description='Click me')\n"
    "n = [0]\n"
    "def on_click(_):\n"
    "    n[0] += 1\n"
    "    with out:\n"
    "        print(f'clicked {n[0]} time(s)')\n"
    "btn.on_click(on_click)\n"
    "w.VBox([btn, out])",
    "import plotly.graph_objects as go\n"
    "go.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2]))",
]


def test_lab_runs_a_widget_notebook(lab_page, lab_root: Path, artifacts: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS], metadata=KERNEL)
    nbformat.write(nb, lab_root / "smoke.ipynb")
    lab_page.open("smoke.ipynb")
    lab_page.run_all()
    page = lab_page.page
    button = page.locator("button.jupyter-button", has_text="Click me")
    button.click()
    page.locator(".jupyter-widgets-output-area, .widget-output").filter(has_text="clicked 1 time(s)").wait_for()
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 1")
    page.screenshot(path=str(artifacts / "smoke.png"))
    assert lab_page.dialogs == []
