"""``inspect(obj)``: the right widget for a log, a reconstruction, an executor or a rule comparison."""

from __future__ import annotations

import os
from typing import Any

import ipywidgets as w
import networkx as nx

from agent_inspect._types import (
    ExecutorLike,
    LogLike,
    PredictionLike,
    ReconstructionLike,
    VerificationLike,
    is_rule_comparison,
)
from agent_inspect.diff import Diff, Explanation
from agent_inspect.scan import ScanResult
from agent_inspect.widgets._browser import LogBrowser
from agent_inspect.widgets._compare import RuleComparison
from agent_inspect.widgets._diff import DiffView
from agent_inspect.widgets._explain import ExplainView
from agent_inspect.widgets._graph import GraphView
from agent_inspect.widgets._history import KeyHistory
from agent_inspect.widgets._prediction import PredictionView
from agent_inspect.widgets._result import ResultInspector
from agent_inspect.widgets._scan import FleetScanView
from agent_inspect.widgets._stepper import ReplayStepper
from agent_inspect.widgets._verification import VerificationView

__all__ = ["inspect", "view_for", "ResultInspector"]


def view_for(obj: Any) -> type[w.Widget] | None:
    """The view class :func:`inspect` shows ``obj`` in, or None (first matching protocol wins)."""
    if isinstance(obj, Diff):
        return DiffView
    if isinstance(obj, Explanation):
        return ExplainView
    if isinstance(obj, ScanResult):
        return FleetScanView
    if isinstance(obj, ExecutorLike):
        return ReplayStepper
    if isinstance(obj, VerificationLike):
        return VerificationView
    if isinstance(obj, ReconstructionLike):
        return ResultInspector
    if isinstance(obj, PredictionLike):
        return PredictionView
    if isinstance(obj, LogLike):
        return LogBrowser
    if isinstance(obj, nx.Graph):
        return GraphView
    if is_rule_comparison(obj):
        return RuleComparison
    return None


def inspect(obj: Any, *, business_key: Any = None, record: int | tuple[int, int] | None = None,
            rule: Any = None, **options: Any) -> w.Widget:
    """Show ``obj`` in the widget that fits it and return that widget.

    - an ``ActionStateLog`` → :class:`LogBrowser`;
    - a reconstruction result → :class:`ResultInspector` (records, timeline, divergences, graph);
    - a replay executor → :class:`ReplayStepper`;
    - a prediction (``result.predict(...)``) → :class:`PredictionView`;
    - a verification (``ai.verify(...)``) → :class:`VerificationView`;
    - the DataFrame of ``ai.cases.compare(...)`` → :class:`RuleComparison`;
    - a ``networkx`` graph from ``result.graph(...)`` → :class:`GraphView`;
    - a fleet scan (``ai.scan(...)``) → :class:`FleetScanView`;
    - an ``ai.diff(a, b)`` result → :class:`DiffView`; an ``ai.explain(...)`` result → :class:`ExplainView`.

    With ``business_key=`` the view is that key's compact history (:class:`KeyHistory`), reconstructed
    under ``rule`` from a log, a reconstruction or a source (a path or ``kafka://…`` URL, loaded whole),
    opened on ``record`` (a log position or a ``(partition, offset)`` pair) when given. This is what a
    record's "copy link" snippet runs. Other keyword options go to the widget's constructor.
    """
    if business_key is not None:
        return _key_history(obj, business_key, record=record, rule=rule, **options)
    view = view_for(obj)
    if view is GraphView:
        return GraphView(None, graph=obj, **options)
    if view is not None:
        return view(obj, **options)
    raise TypeError(f"inspect() cannot show a {type(obj).__name__}; pass an ActionStateLog, a "
                    "reconstruction, a prediction, a ReplayExecutor, a fleet scan or the frame of ai.cases.compare(...)")


def _key_history(obj: Any, key: Any, *, record: int | tuple[int, int] | None, rule: Any,
                 **options: Any) -> KeyHistory:
    from agent_inspect.log import load
    from agent_inspect.recovery import reconstruct

    if isinstance(obj, (str, os.PathLike)):
        obj = load(obj)
    if isinstance(obj, ReconstructionLike):
        if rule is not None and getattr(obj.rule, "name", None) != rule and isinstance(obj.log, LogLike):
            obj = reconstruct(obj.log, rule=rule)
    elif isinstance(obj, LogLike):
        obj = reconstruct(obj) if rule is None else reconstruct(obj, rule=rule)
    else:
        raise TypeError(f"inspect(business_key=...) needs a log, a reconstruction or a source, "
                        f"not a {type(obj).__name__}")
    return KeyHistory(obj, key, record=record, **options)
