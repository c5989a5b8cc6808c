"""``ai.inspect`` dispatches on the protocols of ``agent_inspect._types``, not on concrete classes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import networkx as nx
import pandas as pd
import pytest
from _widget_agents import recovery_executor

import agent_inspect as ai
from agent_inspect import samples
from agent_inspect._types import (
    ExecutorLike,
    LogLike,
    PredictionLike,
    ReconstructionLike,
    VerificationLike,
    is_rule_comparison,
)
from agent_inspect.widgets import (
    GraphView,
    LogBrowser,
    PredictionView,
    ReplayStepper,
    ResultInspector,
    RuleComparison,
    VerificationView,
)
from agent_inspect.widgets._inspect import view_for


def test_each_result_satisfies_exactly_its_protocol(probe_log, probe_result):
    prediction = ai.recovery.predict(probe_log, rule="fixed")
    executor = recovery_executor()
    protocols = (LogLike, ReconstructionLike, PredictionLike, ExecutorLike, VerificationLike)
    found = {name: [p.__name__ for p in protocols if isinstance(obj, p)]
             for name, obj in {"log": probe_log, "reconstruction": probe_result, "prediction": prediction,
                               "executor": executor, "verification": _verification()}.items()}
    assert found == {"log": ["LogLike"], "reconstruction": ["ReconstructionLike"],
                     "prediction": ["PredictionLike"], "executor": ["ExecutorLike"],
                     "verification": ["VerificationLike"]}


def test_the_executor_check_does_not_start_the_replay():
    executor = recovery_executor()
    assert isinstance(executor, ExecutorLike)
    assert executor.steps.empty  # reading .cache or .memory would have run the first step


def test_every_result_gets_the_view_it_got_before(probe_log, probe_result):
    compare = ai.cases.compare(probe_log, ["fixed", "original"])
    cases = {
        "log": (probe_log, LogBrowser),
        "reconstruction": (probe_result, ResultInspector),
        "prediction": (ai.recovery.predict(probe_log, rule="fixed"), PredictionView),
        "executor": (recovery_executor(), ReplayStepper),
        "graph": (probe_result.graph(probe_log.keys()[0]), GraphView),
        "compare": (compare, RuleComparison),
        "verification": (_verification(), VerificationView),
    }
    for name, (obj, view) in cases.items():
        assert view_for(obj) is view, name
        assert type(ai.inspect(obj)) is view, name
    assert view_for(42) is None and view_for(pd.DataFrame({"x": [1]})) is None


def _verification() -> Any:
    logs = Path(__file__).resolve().parents[2] / "sample_logs"
    restore = json.loads((logs / "N04.markers.json").read_text(encoding="utf-8"))["restore"]
    return ai.verify(ai.load(logs / "N04.jsonl"), logs / "N04.fixed-rule.trace.log", markers=samples.markers("N04"),
                     restore=restore)


def test_a_frame_is_a_rule_comparison_only_with_a_rule_column():
    assert is_rule_comparison(pd.DataFrame({"rule": ["fixed"], "reruns": [1]}))
    assert not is_rule_comparison(pd.DataFrame({"reruns": [1]}))
    assert not is_rule_comparison({"rule": "fixed"})


class _DuckLog:
    """Not an ActionStateLog: only the members the views read."""

    def __init__(self, log: Any) -> None:
        self.records, self.raw, self.source = log.records, log.raw, log.source
        self._log = log

    def value(self, pos: int) -> Any:
        return self._log.value(pos)


def test_any_object_with_the_log_members_is_browsed_as_a_log(probe_log):
    duck = _DuckLog(probe_log)
    view = ai.inspect(duck)
    assert isinstance(view, LogBrowser)
    pos = int(probe_log.records.index[0])
    view.show_record(pos)
    assert "&lt;img" in view.detail.value and "<img" not in view.detail.value


def test_a_records_frame_without_value_is_not_a_log(probe_log):
    class RecordsOnly:
        records = probe_log.records

    assert not isinstance(RecordsOnly(), LogLike)
    with pytest.raises(ai.InspectError, match="cannot show a RecordsOnly"):
        ai.inspect(RecordsOnly())


def test_a_graph_is_shown_as_given():
    graph = nx.DiGraph()
    graph.add_node("a", kind="action")
    assert ai.inspect(graph).graph is graph
