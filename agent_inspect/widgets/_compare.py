"""Rule comparison: a rules × cases (or keys) heatmap of one metric, plus the full table."""

from __future__ import annotations

from html import escape
from typing import Any

import ipywidgets as w
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from agent_inspect._html import frame_html, labelled, plotly_text
from agent_inspect.cases import COLUMN_MEANINGS
from agent_inspect.widgets._common import first_column, hover, message_html
from agent_inspect.widgets._plot import Plot
from agent_inspect.widgets._style import View, colour, view_style

__all__ = ["RuleComparison"]

_PREFERRED = ("reruns", "re_runs", "stale_reuses", "evictions", "passed", "pass")
# Beyond this many cases (or keys) the heatmap turns: cases down the page, rules across.
_WIDE_CASES = 12


# paper to a half-strength red: the cell values, written in the text colour, read on every cell in both themes
_HEAT = [[0.0, colour("paper")], [1.0, colour("heat")]]

class RuleComparison(View):
    """Show the frame of ``ai.cases.compare(...)``: pick a metric, see it as a heatmap and a table.

    Accepts the long form (one row per rule and case or key, one column per metric) or an already
    pivoted matrix (rules as index, cases as columns).

    For example::

        ai.widgets.RuleComparison(ai.cases.compare("cases/G01.toml", rules=["original", "fixed"]), metric="reruns")
    """

    def __init__(self, frame: pd.DataFrame, *, metric: str | None = None, height: int = 360) -> None:
        super().__init__()
        self.add_class("ai-rule-compare")
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"expected the DataFrame of ai.cases.compare(...), got {type(frame).__name__}")
        self.frame = frame
        self._rule_col = first_column(frame, "rule", "rule_name")
        self._case_col = first_column(frame, "case", "case_id", "key", "business_key")
        metrics = self._metrics()
        if metric is None:
            metric = next((m for m in _PREFERRED if m in metrics), metrics[0] if metrics else None)
        self.metric = w.Dropdown(description="Metric", options=metrics, value=metric)
        self.metric.observe(lambda _: self._draw(), names="value")
        self.meaning = w.HTML()             # what the chosen metric counts
        self.meaning.add_class("ai-rule-compare-meaning")
        # what passed / expected (and every other column) mean, beside the metric and above the table
        self.legend = w.HTML(_legend(frame.columns))
        self.legend.add_class("ai-rule-compare-legend")
        self.table = w.HTML(f'<div class="ai-scroll-tall">'
                            f"{frame_html(frame, max_rows=1000, meanings=COLUMN_MEANINGS)}</div>")
        self.table.add_class("ai-table")
        self._height = int(height)
        self.figure = Plot(layout=go.Layout(height=height, margin=dict(l=160, r=10, t=60, b=60)))
        self.figure.add_class("ai-rule-heatmap")
        self.children = [w.HBox([self.metric, self.meaning]), self.figure, self.legend, self.table, view_style()]
        self._draw()

    @property
    def matrix(self) -> pd.DataFrame:
        """The heatmap's numbers: rules as rows, cases or keys as columns, for the chosen metric."""
        if self._rule_col and self._case_col and self.metric.value is not None:
            return self.frame.pivot_table(index=self._rule_col, columns=self._case_col, values=self.metric.value,
                                          aggfunc="sum", observed=True, sort=False)
        return self.frame.select_dtypes(include=["number", "bool"])

    def _metrics(self) -> list[str]:
        if self._rule_col and self._case_col:
            skip = {self._rule_col, self._case_col}
            return [c for c in self.frame.columns if c not in skip
                    and (pd.api.types.is_numeric_dtype(self.frame[c]) or pd.api.types.is_bool_dtype(self.frame[c]))]
        return []

    def _draw(self) -> None:
        meaning = COLUMN_MEANINGS.get(self.metric.value or "")
        self.meaning.value = f"<span class=\"ai-muted\">{escape(meaning)}</span>" if meaning else ""
        matrix = self.matrix
        if matrix.empty:
            self.figure.data = []
            self.table.value = message_html("nothing to compare") + self.table.value
            return
        z = matrix.astype(float).to_numpy()
        rules = [plotly_text(r) for r in matrix.index]
        cases = [plotly_text(c) for c in matrix.columns]
        name = self.metric.value or "value"
        text = [[hover([("rule", r), ("case", c), (name, _fmt(v))]) for c, v in zip(matrix.columns, row)]
                for r, row in zip(matrix.index, z)]
        # A long case list reads better down the page: cases as rows, rules as columns.
        tall = len(cases) > _WIDE_CASES
        if tall:
            z, text, x, y = z.T, [list(col) for col in zip(*text)], rules, cases
        else:
            x, y = cases, rules
        heat = go.Heatmap(z=z, x=x, y=y, colorscale=_HEAT, hoverinfo="text", hovertext=text,
                          texttemplate="%{z}", textfont=dict(color=colour("ink")),
                          colorbar=dict(title=dict(text=plotly_text(name))))
        with self.figure.batch_update():
            self.figure.data = []
            self.figure.add_trace(heat)
            self.figure.layout.title = dict(text=f"{plotly_text(name)} per rule", font=dict(size=13))
            self.figure.layout.height = max(self._height, 120 + 20 * len(cases)) if tall else self._height
            self.figure.layout.xaxis.update(dtick=1, side="top" if tall else "bottom")
            self.figure.layout.yaxis.update(dtick=1, autorange="reversed" if tall else True)


def _legend(columns: Any) -> str:
    items = "".join(f"<li>{labelled('code', c, meaning=COLUMN_MEANINGS[c])}: {escape(COLUMN_MEANINGS[c])}</li>"
                    for c in columns if c in COLUMN_MEANINGS)
    return f'<details class="ai-legend"><summary>What the columns mean</summary><ul>{items}</ul></details>' \
        if items else ""


def _fmt(value: float) -> Any:
    if np.isnan(value):
        return "–"
    return int(value) if float(value).is_integer() else round(float(value), 3)
