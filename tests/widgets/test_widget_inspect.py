from __future__ import annotations

import networkx as nx
import pytest

import agent_inspect as ai
import agent_inspect.widgets as widgets
from agent_inspect.widgets import GraphView, KeyTimeline, LogBrowser, ResultInspector, SubagentTreeView


def test_public_names():
    assert sorted(widgets.__all__) == sorted([
        "inspect", "LogBrowser", "KeyTimeline", "DivergenceView", "GraphView", "SubagentTreeView",
        "ReplayStepper", "RuleComparison", "ResultInspector", "PredictionView", "VerificationView", "DiffView",
        "ExplainView", "FleetScanView", "ResultView", "timeline_figure", "scan_histograms", "DataGrid", "KeyHistory",
        "tail", "LiveTail", "LiveKeyTimeline", "LiveKeyHistory", "LiveDivergences", "PALETTE", "palette_css"])
    assert ai.inspect is widgets.inspect
    assert ai.tail is widgets.tail


def test_a_log_gets_the_browser(probe_log):
    view = ai.inspect(probe_log)
    assert isinstance(view, LogBrowser)
    assert "ai-log-browser" in view._dom_classes


def test_a_reconstruction_gets_the_tabs(probe_result):
    view = ai.inspect(probe_result)
    assert isinstance(view, ResultInspector)
    assert view.key_picker.value == "user-<img src=x onerror=alert(1)>"
    assert isinstance(view.view("Timeline"), KeyTimeline)
    graph = view.view("Graph")
    assert isinstance(graph, GraphView) and graph.seq == 0  # the key's first divergent round
    assert isinstance(view.view("Sub-agents"), SubagentTreeView)
    other = [k for k in view.key_picker.options if k != view.key_picker.value][0]
    view.key_picker.value = other
    assert view.view("Timeline").key == other


def test_a_graph_gets_the_graph_view(probe_result):
    graph = probe_result.graph("user-<img src=x onerror=alert(1)>")
    view = ai.inspect(graph)
    assert isinstance(view, GraphView) and view.graph is graph


def test_anything_else_is_an_inspect_error_naming_what_inspect_takes():
    # a plain TypeError: the short error display (ai.configure(errors="short")) showed its traceback
    with pytest.raises(ai.InspectError, match="ai.inspect cannot show a int; pass an ActionStateLog") as info:
        ai.inspect(42)
    assert "\n" not in str(info.value)
    with pytest.raises(ai.InspectError):
        ai.inspect(nx)
    with pytest.raises(ai.InspectError, match=r"ai.inspect\(business_key=...\) needs a log"):
        ai.inspect(42, business_key="k")


def test_lints_tab_lists_the_hazards():
    from _widget_logs import IMG, Journal, round_

    journal = Journal(key_format="K1")
    round_(journal, f"user_{IMG}", 0, {"input": "a"})  # '_' in K1 key text crashes upstream Kafka lookups
    result = ai.reconstruct(journal.log(), rule="fixed")
    assert len(result.lints) > 0
    lints = ai.inspect(result).view("Lints")
    assert "ai-lints" in lints._dom_classes
    assert f"{len(result.lints):,} lint{'' if len(result.lints) == 1 else 's'}" in lints.value and "&lt;img" in lints.value and "<img" not in lints.value
    clean = ai.inspect(ai.reconstruct(_clean_log(), rule="fixed")).view("Lints")
    assert "no lint" in clean.value


def _clean_log():
    from _widget_logs import Journal, round_

    journal = Journal()
    round_(journal, "user-1", 0, {"input": "a"})
    return journal.log()


def test_a_replay_safety_report_gets_its_display_with_every_task_in_a_grid():
    from agent_inspect.widgets import ResultView

    log = ai.load(ai.samples.path("production"))
    ex = ai.ReplayExecutor(log, markers=ai.samples.markers("production"), seed=1)
    ex.run()
    report = ex.report()
    view = ai.inspect(report)                   # was a TypeError
    assert isinstance(view, ResultView) and "ai-result-view" in view._dom_classes
    assert view.tables[0].total == len(report.frame) > 50   # the HTML display shows the first 50 only
    head = view.children[0].value
    assert "Replay safety" in head and f"{len(report.unsafe)} not replay-safe" in head


def test_a_result_view_escapes_what_the_result_says():
    import pandas as pd

    from agent_inspect.executor import Counters, ReplaySafetyReport

    img = "<img src=x onerror=alert(1)>"
    frame = pd.DataFrame({"key": [img], "safe": [False], "risks": ["x"], "calls_resubmitted": [0]})
    view = ai.inspect(ReplaySafetyReport(frame=frame, counters=Counters(), failure=img, rule_label=img))
    head = view.children[0].value
    assert "&lt;img" in head and "<img" not in head


def test_a_reconstruction_of_only_bad_records_gets_the_tabs_with_no_key(tmp_path):
    lines = ai.samples.path("G01").read_bytes().splitlines()
    path = tmp_path / "cut.jsonl"
    path.write_bytes(b"\n".join(line[: len(line) // 2] for line in lines) + b"\n")   # every line cut in half
    log = ai.load(path)
    assert len(log.errors) == len(log.records) == len(lines)
    view = ai.inspect(ai.reconstruct(log))      # was an IndexError: no record has a business key
    assert isinstance(view, ResultInspector) and view.key_picker.options == ()
    for tab in view.TABS:
        view.view(tab)
