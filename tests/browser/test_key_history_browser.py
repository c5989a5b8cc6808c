"""The compact key history in JupyterLab + chromium: expand a line, jump, search a value, copy, reopen."""

from __future__ import annotations

import re
import time
from pathlib import Path

import nbformat
import pytest

import agent_inspect as ai
from agent_inspect._glossary import define
from agent_inspect.history import compact_history
from tests.report.probe_log import write_probe_log

pytestmark = pytest.mark.browser

KERNEL = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
SAMPLE = Path(__file__).resolve().parents[2] / "sample_logs" / "production.jsonl"
CELLS = [
    "import agent_inspect as ai\n"
    "log = ai.load('sample_logs/production.jsonl')\n"
    "fixed = ai.reconstruct(log, rule='fixed')\n"
    "key = fixed.records.loc[fixed.records['outcome'] == 'RERUN', 'business_key'].iloc[0]\n"
    "ai.inspect(fixed, business_key=key)",
    # payload text with script probes, expanded: it must show as text and never run
    "probe = ai.reconstruct(ai.load('probe.jsonl'), rule='fixed')\n"
    "pv = ai.inspect(probe, business_key=probe.log.keys()[0])\npv.expand(0)\npv.expand(1)\npv",
]
_RUN_NEW_CELL = """
async (src) => {
  const panel = window.jupyterapp.shell.currentWidget, nb = panel.content;
  nb.activeCellIndex = nb.widgets.length - 1;
  await window.jupyterapp.commands.execute('notebook:insert-cell-below');
  nb.activeCell.model.sharedModel.setSource(src);
  await window.jupyterapp.commands.execute('notebook:run-cell');
}
"""


def _expected():
    log = ai.load(SAMPLE)
    fixed = ai.reconstruct(log, rule="fixed")
    key = fixed.records.loc[fixed.records["outcome"] == "RERUN", "business_key"].iloc[0]
    mine = fixed.records[fixed.records["business_key"] == key]
    lines = compact_history(mine, fixed.divergences)
    counts: dict[bytes, list[int]] = {}
    for p in mine.index:
        for token in set(re.findall(rb"answer-\d+", bytes(log.raw.value[p]))):
            counts.setdefault(token, []).append(int(p))
    token, (pos,) = next((t, ps) for t, ps in sorted(counts.items()) if len(ps) == 1)
    first_divergence = int(lines.loc[lines["diverged"], "line"].min())
    return key, token.decode(), pos, first_divergence, lines


def test_key_history_in_jupyterlab(lab_page, lab_root: Path, artifacts: Path) -> None:
    write_probe_log(lab_root / "probe.jsonl")
    key, token, pos, first_divergence, lines = _expected()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS], metadata=KERNEL)
    nbformat.write(nb, lab_root / "history.ipynb")
    page = lab_page.page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=lab_page.lab.base_url.rstrip("/"))
    lab_page.open("history.ipynb")
    t0 = time.monotonic()
    lab_page.run_all()
    view = page.locator(".ai-history").first
    view.locator(".ai-h-item").first.wait_for()
    print(f"history of {len(lines)} lines drawn {time.monotonic() - t0:.2f} s after run-all")
    assert key in view.locator(".ai-h-head").inner_text()
    assert view.locator(".ai-h-item").count() == len(lines)
    # the column headers say on hover what they show, in the glossary's words the kernel sent
    header = view.locator(".ai-h-cols span", has_text="attempt").first
    assert header.get_attribute("title") == define("attempt")


    # expand a line: its records and decoded values come from the kernel
    first = view.locator(".ai-h-item").first
    assert first.locator(".ai-h-record").count() == 0
    first.locator(".ai-h-line").click()
    first.locator(".ai-h-record").first.wait_for()
    assert first.locator(".ai-h-record").count() == lines.at[0, "records"]
    assert '"taskEvent"' in first.locator("pre.ai-value").first.inner_text()

    # jump to the first divergence: that line is focused
    view.locator(".ai-h-first-divergence").click()
    focused = view.locator(".ai-h-item:has(.ai-h-focused)")
    focused.wait_for()
    assert focused.get_attribute("data-line") == str(first_divergence)
    assert focused.locator(".ai-h-diverged").count() == 1

    # search a value inside one record's payload: one line stays, its record marked once expanded
    search = view.locator(".ai-h-search")
    search.fill(token)
    search.press("Enter")
    page.wait_for_function("(el) => el.querySelectorAll('.ai-h-item').length === 1", arg=view.element_handle())
    assert f"contain '{token}'" in view.locator(".ai-h-search-info").inner_text()
    item = view.locator(".ai-h-item")
    item.locator(".ai-h-line").click()
    record = item.locator(f".ai-h-record[data-pos='{pos}']")
    record.wait_for()
    assert "ai-h-match" in (record.get_attribute("class") or "")

    # copy the record's JSON: the clipboard holds the decoded value
    record.locator(".ai-h-copy-json").click()
    record.locator(".ai-h-copied").filter(has_text="copied").wait_for()
    copied = page.evaluate("() => navigator.clipboard.readText()")
    assert token in copied and copied == record.locator("pre.ai-value").inner_text()

    # copy the link and run it in a new cell: the same key opens on the same record
    record.locator(".ai-h-copy-link").click()
    record.locator(".ai-h-copied").filter(has_text="link copied").wait_for()
    snippet = page.evaluate("() => navigator.clipboard.readText()")
    assert snippet == record.locator(".ai-h-snippet").inner_text() and f"business_key={key!r}" in snippet
    count = page.locator(".ai-history").count()
    page.evaluate(_RUN_NEW_CELL, snippet)
    page.wait_for_function("(n) => document.querySelectorAll('.ai-history').length > n", arg=count,
                           timeout=60_000)
    reopened = page.locator(".ai-history").last
    target = reopened.locator(f".ai-h-focused-record[data-pos='{pos}']")
    target.wait_for()
    assert token in target.locator("pre.ai-value").inner_text()
    assert reopened.locator(".ai-h-focused").count() == 1

    page.screenshot(path=str(artifacts / "key-history.png"))
    # the probe history: payload text shown, escaped, never run
    probe_view = page.locator(".ai-history").nth(1)
    assert probe_view.locator(".ai-h-record").count() > 0
    assert "onerror" in probe_view.inner_text()
    assert lab_page.xss_hits() == [] and lab_page.dialogs == []
    assert not lab_page.errors_in_outputs()
