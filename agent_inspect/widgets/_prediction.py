"""Prediction view: what a recovery would reuse / resume / re-run, and the re-execution ledger."""

from __future__ import annotations

from typing import Any

import ipywidgets as w
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from agent_inspect._html import escape, labelled, plotly_text
from agent_inspect._types import PredictionLike
from agent_inspect.log import rule_label
from agent_inspect.recovery import tasks_by_impact
from agent_inspect.store import Outcome
from agent_inspect.widgets._common import KIND_COLOURS, colour_for, hover, runtime_html
from agent_inspect.widgets._grid import DataGrid
from agent_inspect.widgets._plot import Plot
from agent_inspect.widgets._style import View, choices, colour, view_style

__all__ = ["PredictionView"]

_OUTCOME_ORDER = tuple(o.value for o in Outcome)
_LEDGER_COLOURS = {"body": colour("bad"), "call": colour("warn"), "subagent": colour("violet"), "replayed": colour("good"),
                   "reconciler": colour("violet")}
_TASK_COLUMNS = ("key", "seq", "input", "action", "outcome", "reason")


class PredictionView(View):
    """A prediction (``result.predict(...)`` / ``ai.recovery.predict(...)``): outcomes, ledger, tasks.

    Top: task outcomes per key. Middle: the re-execution ledger (bodies that run again, durable
    calls executed for real or served from the journal, by function id) and its rows in a grid.
    Bottom: the tasks in a grid (sorted and filtered in the kernel), re-runs and evictions first (dispatch
    order within each), filterable by key.

    For example::

        ai.widgets.PredictionView(ai.predict(log, markers=markers))   # or ai.inspect(prediction)
    """

    def __init__(self, prediction: PredictionLike) -> None:
        super().__init__()
        self.add_class("ai-prediction")
        self.prediction = prediction
        self.tasks = prediction.tasks
        # the grid shows the tasks by impact; the order comes from the two columns it needs, not a copy of the frame
        slim = self.tasks[[c for c in ("outcome", "removed") if c in self.tasks.columns]].reset_index(drop=True)
        self._by_impact = tasks_by_impact(slim).index.to_numpy(dtype=np.int64)
        self.ledger = prediction.ledger
        self.summary = w.HTML(self._summary_html(prediction.rule, bool(prediction.crashed)))
        self.summary.add_class("ai-prediction-summary")
        self.outcomes = Plot(layout=go.Layout(
            height=260, barmode="stack", margin=dict(l=50, r=10, t=30, b=60),
            yaxis=dict(tickformat="d"), showlegend=True,
            title=dict(text="task outcomes per key", font=dict(size=13))))
        self.outcomes.add_class("ai-outcomes")
        self.ledger_figure = Plot(layout=go.Layout(
            height=260, barmode="group", margin=dict(l=160, r=10, t=30, b=40), showlegend=True,
            xaxis=dict(tickformat="d"), title=dict(text="re-execution ledger", font=dict(size=13))))
        self.ledger_figure.add_class("ai-ledger")
        keys = sorted(map(str, self.tasks["key"].dropna().unique())) if "key" in self.tasks.columns else []
        self.key_filter = w.Dropdown(description="Key", options=choices(["(any)", *keys]), layout=w.Layout(width="360px"))
        self.key_filter.observe(lambda _: self._show_tasks(), names="value")
        self.table = DataGrid(self.tasks, columns=[c for c in _TASK_COLUMNS if c in self.tasks.columns] or None,
                              height=360, empty_text="no task")
        self.table.add_class("ai-prediction-tasks")
        self.ledger_table = DataGrid(self.ledger, height=240,
                                     empty_text="the ledger is empty: nothing runs again")
        self.ledger_table.add_class("ai-ledger-table")
        self._draw_outcomes()
        self._draw_ledger()
        self._show_tasks()
        self.children = [self.summary, self.outcomes, self.ledger_figure, self.ledger_table,
                         w.HTML("<b>tasks, re-runs and evictions first</b>"), self.key_filter, self.table, view_style()]

    def _summary_html(self, rule: Any, crashed: bool) -> str:
        counts = self.tasks["outcome"].value_counts() if "outcome" in self.tasks.columns else pd.Series(dtype=int)
        parts = ", ".join(f"{labelled('span', k)} {int(v)}" for k, v in counts.items())
        crash = " — <b>the job crashes on this recovery (restart loop)</b>" if crashed else ""
        # the prediction's own label: its settings know a given store flavour (a bare rule name has none)
        own = getattr(self.prediction, "rule_label", None)
        rule = own if isinstance(own, str) else rule_label(str(rule), getattr(self.prediction, "runtime", None))
        return (f'<div class="ai-title">prediction under rule <code>{escape(rule)}</code>: {parts}{crash}</div>'
                + runtime_html(self.prediction))

    def _draw_outcomes(self) -> None:
        if not {"key", "outcome"} <= set(self.tasks.columns) or self.tasks.empty:
            return
        counts = self.tasks.groupby(["outcome", "key"], observed=True, sort=True).size()
        names = [o for o in _OUTCOME_ORDER if o in counts.index.get_level_values(0)]
        names += sorted(set(map(str, counts.index.get_level_values(0))) - set(names))
        with self.outcomes.batch_update():
            for outcome in names:
                part = counts.xs(outcome, level=0)
                keys = [str(k) for k in part.index]
                self.outcomes.add_trace(go.Bar(
                    x=[plotly_text(k) for k in keys], y=part.to_numpy(), name=plotly_text(outcome),
                    marker_color=colour_for(outcome, KIND_COLOURS), hoverinfo="text",
                    hovertext=[hover([("key", k), ("outcome", outcome), ("tasks", int(n))])
                               for k, n in zip(keys, part.to_numpy())]))

    def _draw_ledger(self) -> None:
        if not {"kind", "name", "count"} <= set(self.ledger.columns) or self.ledger.empty:
            self.ledger_figure.layout.title.text = "re-execution ledger: nothing runs again"
            return
        by = "label" if "label" in self.ledger.columns else "name"   # a sub-agent call by sub-agent and caller
        totals = self.ledger.groupby(["kind", by], observed=True, sort=True)["count"].sum()
        with self.ledger_figure.batch_update():
            for kind in dict.fromkeys(map(str, totals.index.get_level_values(0))):
                part = totals.xs(kind, level=0)
                names = [str(n) for n in part.index]
                self.ledger_figure.add_trace(go.Bar(
                    y=[plotly_text(n) for n in names], x=part.to_numpy(), orientation="h", name=plotly_text(kind),
                    marker_color=_LEDGER_COLOURS.get(kind, colour_for(kind)), hoverinfo="text",
                    hovertext=[hover([("kind", kind), ("name", n), ("count", int(c))])
                               for n, c in zip(names, part.to_numpy())]))

    def _show_tasks(self) -> None:
        if self.key_filter.value != "(any)" and "key" in self.tasks.columns:
            keep = (self.tasks["key"].astype(str) == self.key_filter.value).to_numpy(dtype=bool)
            self.table.empty_text = f"no task of key {self.key_filter.value}"
            self.table.set_rows(self._by_impact[keep[self._by_impact]])
        else:
            self.table.empty_text = "no task"
            self.table.set_rows(self._by_impact)
