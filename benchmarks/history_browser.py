"""The compact history of a 20k-record key in chromium through JupyterLab: cell run to lines drawn.

Starts JupyterLab on 127.0.0.1 (the test harness, ``tests/support/jupyter.py``) and headless chromium,
builds the synthetic key of ``history.py`` in a first cell (not timed), then times:
- ``history_20k_drawn``: running ``ai.inspect(result, business_key="user-0")`` until its first page is drawn;
- ``history_expand``: a click on a line until its records and values are drawn;
- ``history_search``: Enter in the search box until the filtered page is drawn (first search: builds the index);
- ``history_jump``: "first divergence" until the focused line is drawn (turns pages).
Each also reports how long the page's main thread worked (CDP ``TaskDuration``), which a loaded machine
skews far less than wall time. Usage: ``python benchmarks/history_browser.py [--key-records N]``. Last line: JSON ``{"name", "seconds",
"ratio", "target"}`` (ratio = target ÷ measured).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.jupyter import CHROMIUM_ARGS, chromium_executable, isolated_env, start_jupyterlab  # noqa: E402

_RUN_NEW_CELL = """
async (src) => {
  const nb = window.jupyterapp.shell.currentWidget.content;
  nb.activeCellIndex = nb.widgets.length - 1;
  await window.jupyterapp.commands.execute('notebook:insert-cell-below');
  nb.activeCell.model.sharedModel.setSource(src);
  window.__t0 = performance.now();
  await window.jupyterapp.commands.execute('notebook:run-cell');
}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key-records", type=int, default=20_000)
    parser.add_argument("--page-size", type=int, default=100, help="lines per page")
    args = parser.parse_args(argv)
    rounds = max(2, args.key_records // 4 * 2 // 3)
    setup = (f"import sys; sys.path.insert(0, {str(REPO / 'benchmarks')!r})\n"
             "from views import build_log\nimport agent_inspect as ai\n"
             f"result = ai.reconstruct(build_log(1, {rounds}, branch_at={rounds // 2}), rule='fixed')\n"
             "len(result.records)")
    from playwright.sync_api import sync_playwright

    results = []
    main_thread: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root, scratch = Path(tmp) / "root", Path(tmp) / "scratch"
        root.mkdir()
        scratch.mkdir()
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(setup)],
                                      metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                               "language": "python"}})
        nbformat.write(nb, root / "bench.ipynb")
        lab = start_jupyterlab(root, scratch=scratch)
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium_executable(), headless=True,
                                             args=CHROMIUM_ARGS, env=isolated_env(scratch))
                page = browser.new_page(viewport={"width": 1280, "height": 1400})
                page.set_default_timeout(120_000)
                page.goto(lab.lab_url("bench.ipynb"))
                page.wait_for_function("() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
                                       " return w && w.sessionContext.session && w.sessionContext.session.kernel &&"
                                       " w.sessionContext.session.kernel.status === 'idle'; }")
                page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
                page.wait_for_function("() => { const c = window.jupyterapp.shell.currentWidget.content.widgets[0];"
                                       " return c.model.executionCount !== null && window.jupyterapp.shell"
                                       ".currentWidget.sessionContext.session.kernel.status === 'idle'; }")
                cdp = page.context.new_cdp_session(page)
                cdp.send("Performance.enable")

                def busy() -> float:  # seconds the page's main thread has worked (load skews it far less than wall time)
                    return next(m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]
                                if m["name"] == "TaskDuration")

                b0 = busy()
                page.evaluate(_RUN_NEW_CELL, f"ai.inspect(result, business_key='user-0', page_size={args.page_size})")
                page.wait_for_function("() => document.querySelectorAll('.ai-history .ai-h-item').length > 0")
                results.append(("history_20k_drawn", page.evaluate("() => (performance.now() - window.__t0) / 1000"), 1.0))
                main_thread.append(("history_20k_drawn", busy() - b0))
                view = page.locator(".ai-history")

                def timed(name: str, action, done_js: str, target: float) -> None:
                    b0, t0 = busy(), time.perf_counter()
                    action()
                    page.wait_for_function(done_js)
                    results.append((name, time.perf_counter() - t0, target))
                    main_thread.append((name, busy() - b0))

                timed("history_expand", lambda: view.locator(".ai-h-item .ai-h-line").nth(3).click(),
                      "() => document.querySelectorAll('.ai-history .ai-h-record').length > 0", 0.2)
                search = view.locator(".ai-h-search")
                search.fill("t4")
                timed("history_search", lambda: search.press("Enter"),
                      "() => document.querySelector('.ai-history .ai-h-search-info').textContent.includes('t4')", 0.5)
                search.fill("")
                search.press("Enter")
                page.wait_for_function("() => document.querySelector('.ai-history .ai-h-search-info').textContent === ''")
                timed("history_jump", lambda: view.locator(".ai-h-first-divergence").click(),
                      "() => document.querySelector('.ai-history .ai-h-focused') !== null", 0.2)
                lines = view.locator(".ai-h-page-info").inner_text()
                browser.close()
        finally:
            lab.stop()
    print(lines)
    busy_of = dict(main_thread)
    for name, s, target in results:
        print(f"{name}: {s * 1000:.0f} ms wall (target {target * 1000:.0f} ms); "
              f"browser main thread busy {busy_of[name] * 1000:.0f} ms")
    print(json.dumps([{"name": n, "seconds": round(s, 4), "ratio": round(t / s, 3), "target": t}
                      for n, s, t in results]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
