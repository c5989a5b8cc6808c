"""Every label a user sees that is a glossary term says what it means on hover (issue 26 item 6).

The views, the result objects' notebook HTML and the static report are rendered on the production sample; in
their HTML a *label* is a text node that, once the counts and punctuation around it are stripped, is exactly one
of the glossary's terms ("RERUN 464", "evicted", "step 12", "37 divergences"); a text node is split at ", " and
"; " first, so a headline listing counts is checked term by term. Each such label needs a ``title`` on itself or
an element around it. Sentences that merely use a word ("the lookup of triage …") are plain English and are not
labels. Views drawn in the browser (the key history, ``DataGrid`` tables) are not HTML here: the key history's
badges take their titles from the ``terms`` the kernel sends (``define``); the browser tests cover them.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import agent_inspect as ai
from agent_inspect._glossary import GLOSSARY, define
from agent_inspect.report import render_report

_VOID = {"br", "img", "input", "meta", "hr", "col", "wbr"}
_AROUND = re.compile(r"^[\s\d,.:·×✕◇()#-]+|[\s\d,.:·×✕◇()#-]+$")


class _Labels(HTMLParser):
    """Text nodes of an HTML string, each with whether an element around it has a title."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[tuple[str, bool]] = []
        self.texts: list[tuple[str, bool]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _VOID:
            self.open.append((tag, any(name == "title" and value for name, value in attrs)))

    def handle_endtag(self, tag: str) -> None:
        while self.open and self.open.pop()[0] != tag:
            pass

    def handle_data(self, data: str) -> None:
        if data.strip() and not any(tag in ("script", "style") for tag, _ in self.open):
            self.texts.append((data.strip(), any(titled for _, titled in self.open)))


def label_terms(text: str) -> list[str]:
    """The glossary terms ``text`` is a label of (see the module)."""
    return [core for piece in re.split(r"[,;]\s", text) if (core := _AROUND.sub("", piece)) in GLOSSARY]


def untitled_labels(page: str) -> set[str]:
    parser = _Labels()
    parser.feed(page)
    return {text for text, titled in parser.texts if not titled and label_terms(text)}


def _html_of(widget: Any, seen: set[int] | None = None) -> Iterator[str]:
    """The HTML strings of a widget tree (each ``HTML`` widget's value)."""
    seen = set() if seen is None else seen
    if id(widget) in seen:
        return
    seen.add(id(widget))
    value = getattr(widget, "value", None)
    if isinstance(value, str) and "<" in value:
        yield value
    for child in getattr(widget, "children", ()) or ():
        yield from _html_of(child, seen)


def test_the_label_rule() -> None:
    assert label_terms("RERUN 464, REUSE 169, NOT-DISPATCHED 10") == ["RERUN", "REUSE"]   # spelled as printed
    assert label_terms("step 12") == ["step"] and label_terms("37 divergences") == ["divergences"]
    assert label_terms("the lookup of triage (user-0019, seq 1) evicted it") == []
    page = '<p>record: <span title="x">evicted</span>, <b>outside</b></p><table><th>step</th></table>'
    assert untitled_labels(page) == {"outside", "step"}
    assert define("NOT-DISPATCHED")      # the hyphenated spelling is defined too, through define()


@pytest.fixture(scope="module")
def production() -> dict[str, Any]:
    log = ai.load(ai.samples.path("production"))
    markers = ai.samples.markers("production")
    trace = ai.load_trace("sample_logs/production.trace.log")
    return {"log": log, "markers": markers, "trace": trace,
            "reconstruction": ai.reconstruct(log, markers=markers, rule="original"),
            "prediction": ai.predict(log, markers=markers),
            "verification": ai.verify(log, trace, markers=markers),
            "explanation": ai.explain(log, "user-0019", 2, "chat", markers=markers)}


_VIEWS = {
    "LogBrowser": lambda p: ai.widgets.LogBrowser(p["log"]),
    "KeyTimeline": lambda p: ai.widgets.KeyTimeline(p["reconstruction"], "user-0019"),
    "ResultInspector": lambda p: ai.widgets.ResultInspector(p["reconstruction"]),
    "PredictionView": lambda p: ai.widgets.PredictionView(p["prediction"]),
    "VerificationView": lambda p: ai.widgets.VerificationView(p["verification"]),
    "ExplainView": lambda p: ai.widgets.ExplainView(p["explanation"]),
    "DivergenceView": lambda p: ai.widgets.DivergenceView(p["reconstruction"]),
    "GraphView": lambda p: ai.widgets.GraphView(p["reconstruction"], "user-0019", seq=1),
}


@pytest.mark.parametrize("view", sorted(_VIEWS))
def test_every_term_label_of_a_view_has_a_tooltip(view: str, production: dict[str, Any]) -> None:
    widget = _VIEWS[view](production)
    pages = list(_html_of(widget))
    assert pages
    assert set().union(*map(untitled_labels, pages)) == set()


def test_every_term_label_of_the_stepper_has_a_tooltip(production: dict[str, Any]) -> None:
    stepper = ai.widgets.ReplayStepper(ai.ReplayExecutor(production["log"], markers=production["markers"]))
    stepper.run()
    assert set().union(*map(untitled_labels, _html_of(stepper))) == set()


def test_every_term_label_of_the_results_and_the_report_has_a_tooltip(production: dict[str, Any]) -> None:
    for name in ("reconstruction", "prediction", "verification", "explanation", "log"):
        assert untitled_labels(production[name]._repr_html_()) == set(), name
    page = render_report(production["log"], markers=production["markers"], max_keys=2)
    assert untitled_labels(page) == set()


def test_the_scan_results_counts_say_what_they_count() -> None:
    """A fleet scan's headline: windows, keys exposed to #1301 and failed windows carry the glossary's line."""
    import pandas as pd

    cols = ai.fleet.KEY_COLUMNS + [f"fixed_{c}" for c in ai.fleet.RULE_COLUMNS]
    row = {c: 0 for c in cols} | {"business_key": "k", "exposed_1301": True, "fixed_crashed": False}
    failures = pd.DataFrame([{"window": "p1", "partition": 1, "path": None, "start": 0, "end": 9, "reason": "gone"}])
    result = ai.ScanResult(keys=pd.DataFrame([row], columns=cols), errors=pd.DataFrame(), failures=failures,
                           partitions=pd.DataFrame([{"window": "p0", "partition": 0, "records": 1, "errors": 0}]),
                           source="s.jsonl", rules=("fixed",))
    page = result._repr_html_()
    for words, term in ((r"2 windows", "windows"), (r"1 key exposed to #1301", "exposed to #1301"),
                        (r"1 window failed", "failed windows")):   # windows: the one read and the one failed
        assert re.search(rf'title="{re.escape(html.escape(define(term)))}">{words}<', page), words


# -- views drawn in the browser get their words as data: the grid's header tips, the key history's header ----


def test_a_grids_column_headers_say_what_they_count(production: dict[str, Any]) -> None:
    """The data grid sends each column's line (from the glossary) to the browser, which puts it in the header's
    title; a meaning the caller gives wins over the glossary's."""
    grid = ai.widgets.LogBrowser(production["log"]).grid
    assert grid.tips["partition"] == define("partition") and grid.tips["seq"] == define("round")
    assert grid.tips["position"] == define("pos") and "task_event_type" in grid.tips
    assert set(grid.tips) <= set(grid.columns)
    mine = ai.widgets.DataGrid(production["log"].records.head(3), columns=["seq", "offset"],
                               meanings={"seq": "my words"})
    assert mine.tips == {"seq": "my words", "offset": define("offset")}
    mine.set_frame(production["log"].records.head(3), columns=["partition"])   # new columns, new tips
    assert mine.tips == {"partition": define("partition")}


def test_a_predictions_call_counts_say_which_calls_run_again(production: dict[str, Any]) -> None:
    """A prediction's task table tells executed, replayed and re-submitted calls apart in its headers."""
    tasks = ai.predict(production["log"], markers=ai.samples.markers("production")).tasks
    grid = ai.widgets.DataGrid(tasks.head(3), columns=["calls_executed", "calls_replayed", "calls_resubmitted",
                                                        "body_ran"])
    assert grid.tips == {"calls_executed": define("calls executed"), "calls_replayed": define("calls replayed"),
                         "calls_resubmitted": define("calls re-submitted"), "body_ran": define("body ran")}
    assert len(set(grid.tips.values())) == 4 and all(grid.tips.values())


def test_the_key_historys_column_headers_and_counts_carry_the_glossarys_words(production: dict[str, Any]) -> None:
    history = ai.widgets.KeyHistory(production["reconstruction"], "user-0019")
    header = history.header
    columns = dict(header["columns"])
    assert columns["attempt"] == define("attempt") and columns["status"] == define("status")
    assert columns["outcome"] == define("outcome") and columns["seq"] == define("round")
    assert header["terms"]["rule"] == define("rule") and header["terms"]["RERUN"] == define("RERUN")
    js = (Path(ai.widgets.__file__).parent / "static" / "history.js").read_text(encoding="utf-8")
    assert "h.columns" in js and '"time (UTC)"' not in js    # the headers are drawn from what the kernel sends


def test_the_rule_comparison_says_what_each_column_counts() -> None:
    frame = ai.cases.compare("cases/G01.toml", rules=["original", "fixed"])
    view = ai.widgets.RuleComparison(frame, metric="reruns")
    pages = list(_html_of(view))
    assert set().union(*map(untitled_labels, pages)) == set()
    table = view.table.value
    for column in ("reruns", "evictions", "stale_reuses", "calls", "passed", "expected", "broken"):
        assert f'title="{html.escape(ai.cases.COLUMN_MEANINGS[column])}">{column}</th>' in table, column
    # one glossary: the comparison's words are the glossary's ("calls" there are the calls run again)
    assert ai.cases.COLUMN_MEANINGS["calls"] == define("calls run again") != define("calls")
    assert all(meaning in GLOSSARY.values() for meaning in ai.cases.COLUMN_MEANINGS.values())


def test_the_fleet_scans_table_headers_say_what_they_count_under_each_rule() -> None:
    import pandas as pd

    cols = ai.fleet.KEY_COLUMNS + [f"{r}_{c}" for r in ("fixed", "original") for c in ai.fleet.RULE_COLUMNS]
    row = {c: 0 for c in cols} | {"business_key": "k", "exposed_1301": True}
    result = ai.ScanResult(keys=pd.DataFrame([row], columns=cols), errors=pd.DataFrame(),
                           failures=pd.DataFrame(columns=["window", "partition", "path", "start", "end", "reason"]),
                           partitions=pd.DataFrame([{"window": "p0", "partition": 0, "records": 1, "errors": 0}]),
                           source="s.jsonl", rules=("fixed", "original"))
    view = ai.widgets.FleetScanView(result)
    assert set(view.table.columns) == set(view.table.tips)            # every header has its line
    assert view.table.tips["fixed_calls"] == "under rule fixed: " + define("calls run again")
    assert view.table.tips["exposed_1301"] == define("exposed_1301")
    view.rule.value = "original"
    assert view.table.tips["original_rerun"] == "under rule original: " + define("reruns")
    assert set(view.table.columns) == set(view.table.tips)
