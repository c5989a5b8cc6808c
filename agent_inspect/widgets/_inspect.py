"""``inspect(obj)``: the right widget for a log, a reconstruction, an executor or a rule comparison."""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

import ipywidgets as w

# imported here, not by the first view: plotly.js starts compressing while ``inspect``'s argument loads
import agent_inspect.widgets._plot  # noqa: F401
from agent_inspect._errors import InspectError
from agent_inspect._html import HtmlRepr
from agent_inspect._types import (
    ExecutorLike,
    LogLike,
    PredictionLike,
    ReconstructionLike,
    RecoveryOverrides,
    VerificationLike,
    is_rule_comparison,
)

if TYPE_CHECKING:
    from agent_inspect.recovery import Recovery
    from agent_inspect.widgets._graph import GraphView
    from agent_inspect.widgets._history import KeyHistory

__all__ = ["inspect", "view_for"]


def _loaded(module: str, name: str) -> type | None:
    """``module.name`` if ``module`` is imported already: an object of that class cannot exist otherwise."""
    found = sys.modules.get(module)
    return getattr(found, name, None) if found is not None else None


def _view(module: str, name: str) -> type[w.Widget]:
    view: type[w.Widget] = getattr(importlib.import_module(f"agent_inspect.widgets.{module}"), name)
    return view


# (module of the result type, its class) → view; checked before the protocols, which these also match
_BY_CLASS = (
    (("agent_inspect.diffing", "Diff"), ("_diff", "DiffView")),
    (("agent_inspect.diffing", "Explanation"), ("_explain", "ExplainView")),
    (("agent_inspect.fleet", "ScanResult"), ("_scan", "FleetScanView")),
    (("agent_inspect.log", "LiveLog"), ("_tail", "LiveTail")),
)


def view_for(obj: Any) -> type[w.Widget] | None:
    """The view class :func:`inspect` shows ``obj`` in, or None (first matching protocol wins).

    Only the chosen view is imported (start-up: a log browser does not import networkx or plotly's
    subplots).
    """
    for (module, name), (view_module, view) in _BY_CLASS:
        cls = _loaded(module, name)
        if cls is not None and isinstance(obj, cls):
            return _view(view_module, view)
    if isinstance(obj, ExecutorLike):
        return _view("_stepper", "ReplayStepper")
    if isinstance(obj, VerificationLike):
        return _view("_verification", "VerificationView")
    if isinstance(obj, ReconstructionLike):
        return _view("_result", "ResultInspector")
    if isinstance(obj, PredictionLike):
        return _view("_prediction", "PredictionView")
    if isinstance(obj, LogLike):
        return _view("_browser", "LogBrowser")
    graph = _loaded("networkx", "Graph")
    if graph is not None and isinstance(obj, graph):
        return _graph_view()
    if is_rule_comparison(obj):
        return _view("_compare", "RuleComparison")
    if isinstance(obj, HtmlRepr):        # any other result with a notebook display (ex.report(), a trace log …)
        return _view("_display", "ResultView")
    return None


def _graph_view() -> type[GraphView]:
    from agent_inspect.widgets._graph import GraphView

    return GraphView


def inspect(subject: Any, *, recovery: Recovery | None = None, business_key: Any = None,
            record: int | tuple[int, int] | None = None, **options: Any) -> w.Widget:
    """Show ``subject`` in the widget that fits it and return that widget.

    - an ``ActionStateLog`` → :class:`LogBrowser`;
    - a reconstruction result → :class:`ResultInspector` (records, timeline, divergences, graph);
    - a replay executor → :class:`ReplayStepper`;
    - a prediction (``result.predict(...)``) → :class:`PredictionView`;
    - a verification (``ai.verify(...)``) → :class:`VerificationView`;
    - the DataFrame of ``ai.cases.compare(...)`` → :class:`RuleComparison`;
    - a ``networkx`` graph from ``result.graph(...)`` → :class:`GraphView`;
    - a fleet scan (``ai.scan(...)``) → :class:`FleetScanView`;
    - a live log (``ai.log.follow(...)``) → :class:`LiveTail`;
    - an ``ai.diff(a, b)`` result → :class:`DiffView`; an ``ai.explain(...)`` result → :class:`ExplainView`;
    - any other result with a notebook display (the replay-safety report ``ex.report()``, a trace log, a token
      ledger, a rule-check report) → :class:`ResultView` (its sentences, each table in a grid).

    ``recovery`` and the settings every verb takes (``rule``, ``markers``, ``runtime``, … among the keyword
    options) reconstruct a log first and show the result (a rule other than the runtime's is labelled a
    what-if); a live log's tail reconstructs each window under them. With ``business_key=`` the view is that key's compact history (:class:`KeyHistory`),
    reconstructed under those settings from a log, a reconstruction or a source (a path or ``kafka://…``
    URL, loaded whole), opened on ``record`` (a log position or a ``(partition, offset)`` pair) when given.
    This is what a record's "copy link" snippet runs. Other keyword options go to the widget's constructor.

    For example::

        result = ai.reconstruct(log, markers=markers)
        ai.inspect(result)                               # the view for a log, result, prediction, executor…
        ai.inspect(result, business_key="user-0011", record=1388)
    """
    settings = {name: options.pop(name) for name in RecoveryOverrides.__optional_keys__ & set(options)}
    settings = {name: value for name, value in settings.items() if value is not None}
    if business_key is not None:
        return _key_history(subject, business_key, record=record, recovery=recovery, settings=settings, **options)
    obj = subject
    if (recovery is not None or settings) and isinstance(obj, LogLike) and not isinstance(obj, ReconstructionLike):
        obj = _reconstructed(obj, recovery, settings)
    view = view_for(obj)
    if view is not None and view is _loaded("agent_inspect.widgets._tail", "LiveTail"):
        return view(obj, recovery=recovery, **settings, **options)  # each window, under these settings
    if view is not None and view is _loaded("agent_inspect.widgets._graph", "GraphView"):
        return view(None, graph=obj, **options)
    if view is not None:
        return view(obj, **options)
    raise InspectError(f"ai.inspect cannot show a {type(obj).__name__}; pass an ActionStateLog, a reconstruction, "
                    "a prediction, a ReplayExecutor or its report(), a fleet scan, the frame of ai.cases.compare(...) "
                    "or another agent_inspect result")


def _reconstructed(log: LogLike, recovery: Recovery | None, settings: dict[str, Any]) -> Any:
    from agent_inspect.recovery import Recovery, reconstruct
    return reconstruct(log, recovery=Recovery.resolve(log, recovery, **settings))


def _key_history(obj: Any, key: Any, *, record: int | tuple[int, int] | None, recovery: Recovery | None,
                 settings: dict[str, Any], **options: Any) -> KeyHistory:
    from agent_inspect.log import load

    if isinstance(obj, (str, os.PathLike)):
        obj = load(obj)
    if isinstance(obj, ReconstructionLike):
        rule = settings.get("rule")
        changed = recovery is not None or set(settings) - {"rule"} or (
            rule is not None and getattr(obj.rule, "name", None) != rule)
        if changed and isinstance(obj.log, LogLike):
            obj = _reconstructed(obj.log, recovery, settings)
    elif isinstance(obj, LogLike):
        obj = _reconstructed(obj, recovery, settings)
    else:
        raise InspectError(f"ai.inspect(business_key=...) needs a log, a reconstruction or a source, "
                        f"not a {type(obj).__name__}")
    history: KeyHistory = _view("_history", "KeyHistory")(obj, key, record=record, **options)
    return history
