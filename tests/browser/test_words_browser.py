"""In JupyterLab + chromium, as a person reads them (issue #16 item 7, issue #12 item 7): the stepper's counters
say what they count and explain themselves on hover, "Show key" narrows the stepper to one key, a step's reason
is the reader's with the rule's words beside it, the views of a log say which runtime wrote it and why, and
the key history says what removed an evicted record; the stepper's chart has a terms line with tooltips."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from agent_inspect.executor import Counters

pytestmark = pytest.mark.browser

KERNEL = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
CELLS = [
    "import agent_inspect as ai\n"
    "from agent_inspect.agents import AsRecordedAgent\n"
    "log = ai.load('sample_logs/production.jsonl')\n"
    "MARKERS = ai.samples.markers('production')\n"
    "ai.inspect(log)",
    "executor = ai.ReplayExecutor(log, agent=AsRecordedAgent(log), markers=MARKERS)\n"
    "executor.run()  # to the end in the kernel: drawing 3,000 steps one click at a time is issue #16's freeze\n"
    "stepper = ai.inspect(executor)\n"
    "stepper",
    "rerun = ai.ReplayExecutor(log, agent=AsRecordedAgent(log), markers=MARKERS)\n"
    "rerun.add_breakpoint(kind='lookup', outcome='RERUN')\n"
    "rerun.run()  # stops at the first re-run task\n"
    "ai.inspect(rerun)",
]


def _counter(stepper, name: str) -> int:
    return int(stepper.locator(f".ai-counter[data-name='{name}'] b").inner_text())


def test_stepper_words_and_key_filter_in_jupyterlab(lab_page, lab_root: Path, artifacts: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS], metadata=KERNEL)
    nbformat.write(nb, lab_root / "words.ipynb")
    lab_page.open("words.ipynb")
    lab_page.run_all()
    page = lab_page.page

    # the log browser says which runtime wrote the log, why, and what the lineage rule pinned
    runtime = page.locator(".ai-log-browser .ai-runtime").first
    runtime.wait_for()
    assert "runtime that wrote the log: 0.4 (inferred: all 1,045 records with output events carry lineage" \
        in runtime.inner_text()
    assert "0 records pinned by the 0.4 lineage rule" in runtime.inner_text()
    assert "none of which carries upstreamEventId" in runtime.locator(".ai-lineage-rule").get_attribute("title")

    stepper = page.locator(".ai-stepper").first
    stepper.scroll_into_view_if_needed()
    stepper.locator(".ai-stepper-status", has_text="finished").wait_for()

    # the terms line under the stepper's chart: each step kind in words on hover, from the one glossary
    terms = stepper.locator(".ai-terms .ai-term")
    shown = {terms.nth(i).inner_text(): terms.nth(i).get_attribute("title") for i in range(terms.count())}
    assert {"eviction", "persist", "round-complete", "reuse", "rerun", "step"} <= set(shown)
    assert all(len(title or "") > 20 for title in shown.values()), shown

    # every counter: a label in words and a tooltip (the title attribute the browser shows on hover)
    counters = stepper.locator(".ai-counter")
    # re-submitted sub-agent calls, sub-agent calls run, failed lookups, records no task looked up and restored
    # tasks the restore dropped have their own: the steps and one per counter of the executor
    assert counters.count() == 1 + len(Counters.__dataclass_fields__) == 20
    for i in range(counters.count()):
        title = counters.nth(i).get_attribute("title")
        assert title and len(title) > 20, counters.nth(i).inner_text()
    text = stepper.locator(".ai-counter-row").inner_text()
    assert "tasks re-run" in text and "lookups failed" in text and "durable calls answered from records" in text
    assert "records not dispatched" in text
    assert "shadow runs" not in text and "calls stubbed" not in text
    assert "runtime that wrote the log: 0.4" in stepper.locator(".ai-runtime").inner_text()
    total_steps, total_tasks = _counter(stepper, "steps"), _counter(stepper, "tasks")
    assert total_tasks > 600

    # "Show key": the counters, the step and the store narrow to one business key
    select = stepper.locator(".ai-stepper-key select")
    options = [o.replace("\xa0", " ") for o in select.locator("option").all_inner_texts()]  # ipywidgets: nbsp
    assert options[0] == "(all keys)" and "user-0001" in options and len(options) > 30  # keys the replay reached
    select.select_option("user-0001")
    page.wait_for_function(
        "(n) => +document.querySelector(\".ai-stepper .ai-counter[data-name='steps'] b\").textContent < n",
        arg=total_steps)
    assert 0 < _counter(stepper, "tasks") < total_tasks
    stepper.locator(".ai-store caption", has_text="key user-0001").wait_for()   # each widget syncs on its own
    stepper.screenshot(path=str(artifacts / "words-stepper-key.png"))
    select.select_option(index=0)                                       # back to all keys
    page.wait_for_function(
        "(n) => +document.querySelector(\".ai-stepper .ai-counter[data-name='steps'] b\").textContent === n",
        arg=total_steps)
    assert lab_page.dialogs == [] and lab_page.xss_hits() == []

    # a re-run lookup: the reason in a reader's words, the rule's own words beside it as rule_note
    detail = page.locator(".ai-stepper").nth(1).locator(".ai-step-detail")
    detail.scroll_into_view_if_needed()
    reason = detail.locator("tr", has=page.locator("th", has_text="reason")).first.locator("td")
    reason.wait_for()
    assert reason.inner_text().startswith("no cached record for this task: the lookup of ")
    note = detail.locator("tr", has=page.locator("th", has_text="rule_note")).locator("td")
    assert note.inner_text().startswith("original rule: miss at (")
    assert "> 1" not in reason.inner_text()
    assert lab_page.dialogs == [] and lab_page.xss_hits() == []


REMOVED_CELL = (
    "import agent_inspect as ai\n"
    "original = ai.reconstruct(ai.load('sample_logs/production.jsonl'), rule='original',\n"
    "                          markers=ai.samples.markers('production'))\n"
    "gone = original.records[original.records['status'] == 'evicted'].iloc[[-1]]\n"
    "ai.inspect(original, business_key=gone['business_key'].iloc[0], record=int(gone.index[0]))"
)


def test_an_evicted_records_reason_in_the_key_history(lab_page, lab_root: Path, artifacts: Path) -> None:
    """The key history opened on an evicted record shows what removed it in a reader's words; a search for the
    rule's own words (kept in ``status_rule_note``) still finds it."""
    import agent_inspect as ai

    original = ai.reconstruct(ai.load(ai.samples.path("production")), rule="original",
                              markers=ai.samples.markers("production"))
    gone = original.records[original.records["status"] == "evicted"].iloc[-1]
    pos = int(gone.name)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(REMOVED_CELL)], metadata=KERNEL)
    nbformat.write(nb, lab_root / "removed.ipynb")
    lab_page.open("removed.ipynb")
    lab_page.run_all()
    view = lab_page.page.locator(".ai-history").first
    record = view.locator(f".ai-h-focused-record[data-pos='{pos}']")
    record.wait_for()
    shown = record.locator(".ai-h-reason").inner_text()
    assert shown == gone["reason"] and shown.startswith("the lookup of ")
    assert shown.endswith("its task runs again if the replay reaches it") and "->" not in shown
    line = view.locator(".ai-h-item:has(.ai-h-focused) .ai-h-line")
    assert "->" not in (line.get_attribute("title") or "")
    search = view.locator(".ai-h-search")
    search.fill(gone["status_rule_note"])
    search.press("Enter")
    view.locator(".ai-h-search-info", has_text="contain").wait_for()
    assert view.locator(".ai-h-item .ai-h-line.ai-h-match").count() >= 1
    view.screenshot(path=str(artifacts / "words-evicted-record.png"))
    assert lab_page.dialogs == [] and lab_page.xss_hits() == []
