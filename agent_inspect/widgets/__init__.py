"""Jupyter views over logs, reconstructions, predictions, replay executors and rule comparisons.

``inspect(obj)`` picks the right one and returns it (the last expression of a cell displays it).
Every view is an ``ipywidgets.VBox`` with a stable CSS class: ``ai-log-browser``, ``ai-timeline``,
``ai-divergence``, ``ai-graph``, ``ai-subagent-tree``, ``ai-stepper``, ``ai-rule-compare``,
``ai-prediction``, ``ai-verification``, ``ai-inspector``, ``ai-diff``, ``ai-explain``, ``ai-scan``,
``ai-result-view`` (any other result's display), ``ai-history`` (an anywidget: the compact per-key history),
``ai-live-tail`` (``tail(source)`` follows a Kafka topic live). Views only display results computed elsewhere; every
record-derived string is HTML-escaped, plotly hover text, labels and legends included. Their CSS is
``static/views.css``, brought into the page by one hidden anywidget (``_style.ViewStyle``). Every chart is
one ``_plot.Plot`` (plotly.js sent once per kernel, one shared model); ``timeline_figure`` and ``scan_histograms`` build the
same charts as plain figures, without a widget (the static report). Tables are
``DataGrid`` (``ai-grid``): rows, sort and filter stay in the kernel, the browser draws the window in view.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_inspect.widgets._browser import LogBrowser
    from agent_inspect.widgets._compare import RuleComparison
    from agent_inspect.widgets._diff import DiffView
    from agent_inspect.widgets._display import ResultView
    from agent_inspect.widgets._divergence import DivergenceView
    from agent_inspect.widgets._explain import ExplainView
    from agent_inspect.widgets._graph import GraphView, SubagentTreeView
    from agent_inspect.widgets._grid import DataGrid
    from agent_inspect.widgets._history import KeyHistory
    from agent_inspect.widgets._inspect import inspect
    from agent_inspect.widgets._prediction import PredictionView
    from agent_inspect.widgets._result import ResultInspector
    from agent_inspect.widgets._scan import FleetScanView, scan_histograms
    from agent_inspect.widgets._stepper import ReplayStepper
    from agent_inspect.widgets._style import PALETTE, palette_css
    from agent_inspect.widgets._tail import LiveDivergences, LiveKeyHistory, LiveKeyTimeline, LiveTail, tail
    from agent_inspect.widgets._timeline import KeyTimeline, timeline_figure
    from agent_inspect.widgets._verification import VerificationView

# Each view is imported on first use (PEP 562): a log browser does not pay for networkx, dask or the
# other views' imports.
_LAZY: dict[str, str] = {
    "inspect": "_inspect", "LogBrowser": "_browser", "KeyTimeline": "_timeline", "DivergenceView": "_divergence",
    "GraphView": "_graph", "SubagentTreeView": "_graph", "ReplayStepper": "_stepper", "RuleComparison": "_compare",
    "ResultInspector": "_result", "PredictionView": "_prediction", "VerificationView": "_verification",
    "DiffView": "_diff", "ExplainView": "_explain", "FleetScanView": "_scan", "ResultView": "_display",
    "timeline_figure": "_timeline", "scan_histograms": "_scan", "DataGrid": "_grid", "KeyHistory": "_history",
    "tail": "_tail", "LiveTail": "_tail", "LiveKeyTimeline": "_tail", "LiveKeyHistory": "_tail", "LiveDivergences": "_tail",
    "PALETTE": "_style", "palette_css": "_style",
}

__all__ = [
    "inspect",
    "LogBrowser",
    "KeyTimeline",
    "KeyHistory",
    "DivergenceView",
    "GraphView",
    "SubagentTreeView",
    "ReplayStepper",
    "RuleComparison",
    "ResultInspector",
    "PredictionView",
    "VerificationView",
    "DiffView",
    "ExplainView",
    "FleetScanView",
    "ResultView",
    "timeline_figure",
    "scan_histograms",
    "DataGrid",
    "tail",
    "LiveTail",
    "LiveKeyTimeline",
    "LiveKeyHistory",
    "LiveDivergences",
    "PALETTE",
    "palette_css",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(__all__) | set(globals()))
