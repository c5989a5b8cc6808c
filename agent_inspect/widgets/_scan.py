"""Fleet scan view: a sortable at-risk table, histograms of history sizes and re-executed calls, one key on click."""

from __future__ import annotations

from typing import Any

import ipywidgets as w
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from agent_inspect._html import escape, frame_html
from agent_inspect.widgets._common import message_html

__all__ = ["FleetScanView"]

_NUMERIC = ("stale_reuse_risk", "rerun", "calls", "evictions")


class FleetScanView(w.VBox):
    """Show a :class:`~agent_inspect.scan.ScanResult`.

    - a summary line and, when some windows failed, their reasons;
    - histograms of per-key history size and durable calls re-executed under the chosen rule;
    - the at-risk table: click a column header to sort by it (again to reverse), page with the arrows;
    - click a key to open its reconstruction below (from the scan's Parquet output when it has one,
      else from the source), in the usual inspector.
    """

    def __init__(self, result: Any, *, rule: str | None = None, page_size: int = 15) -> None:
        super().__init__()
        self.add_class("ai-scan")
        self.result = result
        self.page_size = int(page_size)
        rules = list(result.rules)
        self.rule = w.Dropdown(description="Rule", options=rules, value=rule or rules[0],
                               layout=w.Layout(width="260px"))
        self.rule.observe(lambda _: self._rule_changed(), names="value")
        self.sort_column = f"{self.rule.value}_stale_reuse_risk"
        self.descending = True
        self._page = 0
        self.summary = w.HTML(self._summary_html())
        self.summary.add_class("ai-scan-summary")
        self.figure = go.FigureWidget(make_subplots(rows=1, cols=2, subplot_titles=(
            "history size per key (bytes)", "durable calls re-executed per key")))
        self.figure.update_layout(height=260, margin=dict(l=40, r=10, t=40, b=30), showlegend=False)
        self.figure.add_class("ai-scan-histograms")
        self.table = w.GridBox(layout=w.Layout(grid_gap="2px 10px", overflow="auto", max_width="100%"))
        self.table.add_class("ai-scan-table")
        self.prev = w.Button(description="◀", layout=w.Layout(width="44px"))
        self.next = w.Button(description="▶", layout=w.Layout(width="44px"))
        self.page_label = w.HTML()
        self.prev.on_click(lambda _: self._turn(-1))
        self.next.on_click(lambda _: self._turn(1))
        self.detail = w.VBox()
        self.detail.add_class("ai-scan-detail")
        self.selected: str | None = None
        self.children = [self.summary, self.rule, self.figure, self.table,
                         w.HBox([self.prev, self.page_label, self.next]), self.detail]
        self._draw_histograms()
        self._draw_table()

    # -- what is shown --------------------------------------------------------------------------------------

    @property
    def columns(self) -> list[str]:
        """The table's columns under the current rule."""
        r = self.rule.value
        return ["business_key", "partition", "records", "attempts", "history_bytes", "exposed_1301", "lint_flags",
                *[f"{r}_{c}" for c in _NUMERIC]]

    def rows(self) -> pd.DataFrame:
        """The whole table in its current order (the page shows a slice of it)."""
        k = self.result.keys
        if k.empty:
            return k.reindex(columns=self.columns)
        order = k[self.sort_column].to_numpy()
        idx = np.argsort(-order if self.descending and np.issubdtype(order.dtype, np.number) else order,
                         kind="stable")
        if self.descending and not np.issubdtype(order.dtype, np.number):
            idx = idx[::-1]
        return k.iloc[idx][self.columns].reset_index(drop=True)

    def sort_by(self, column: str, descending: bool | None = None) -> None:
        """Sort the table by ``column``; without ``descending`` a second sort on the same column reverses it."""
        if column not in self.columns:
            raise ValueError(f"no column {column!r} in the scan table; columns: {', '.join(self.columns)}")
        if descending is None:
            descending = not self.descending if column == self.sort_column else True
        self.sort_column, self.descending, self._page = column, descending, 0
        self._draw_table()

    def open_key(self, business_key: str) -> Any:
        """Open ``business_key``'s reconstruction under the current rule below the table; returns its inspector."""
        from agent_inspect.widgets._result import ResultInspector

        self.selected = business_key
        where = "the scan's Parquet output" if self.result.output else "the source"
        self.detail.children = [w.HTML(message_html(f"Loading {business_key} from {where}…"))]
        try:
            recon = self.result.reconstruct(business_key, rule=self.rule.value)
        except Exception as exc:  # noqa: BLE001 - shown to the user, the table stays usable
            self.detail.children = [w.HTML(message_html(f"Could not open {business_key}: {exc}", level="error"))]
            return None
        title = w.HTML(f"<h4 class='ai-scan-key'>{escape(business_key)} under <code>{escape(self.rule.value)}</code>"
                       f" <small>(from {escape(where)})</small></h4>")
        inspector = ResultInspector(recon, key=business_key)
        self.detail.children = [title, inspector]
        return inspector

    # -- drawing ---------------------------------------------------------------------------------------------

    def _summary_html(self) -> str:
        s = self.result.summary()
        text = (f"<b>Fleet scan</b> of <code>{escape(s['source'])}</code>: {s['windows']} windows, {s['records']} "
                f"records, {s['keys']} keys, {s['errors']} bad records, {s['exposed_1301']} keys exposed to #1301")
        html = f"<p>{text}.</p>"
        if s["failed"]:
            html += (f"<p class='ai-scan-failed'><b>{s['failed']} window(s) failed</b></p>"
                     + frame_html(self.result.failures[["window", "reason"]], caption="failed windows"))
        return html

    def _rule_changed(self) -> None:
        old = [r for r in self.result.rules if self.sort_column.startswith(f"{r}_")]
        if old:  # the same measure under the newly chosen rule
            self.sort_column = f"{self.rule.value}_{self.sort_column[len(old[0]) + 1:]}"
        self._page = 0
        self._draw_histograms()
        self._draw_table()

    def _draw_histograms(self) -> None:
        k = self.result.keys
        calls = k[f"{self.rule.value}_calls"] if len(k) else pd.Series(dtype="int64")
        with self.figure.batch_update():
            self.figure.data = ()
            self.figure.add_trace(go.Histogram(x=k["history_bytes"].to_numpy() if len(k) else [], nbinsx=30,
                                               name="history bytes", hovertemplate="%{x}: %{y} keys<extra></extra>"),
                                  row=1, col=1)
            self.figure.add_trace(go.Histogram(x=calls.to_numpy(), nbinsx=30, name="calls re-executed",
                                               hovertemplate="%{x}: %{y} keys<extra></extra>"), row=1, col=2)

    def _draw_table(self) -> None:
        rows = self.rows()
        pages = max(1, -(-len(rows) // self.page_size))
        self._page = min(self._page, pages - 1)
        page = rows.iloc[self._page * self.page_size:(self._page + 1) * self.page_size]
        cells: list[w.Widget] = []
        for col in self.columns:
            arrow = (" ▼" if self.descending else " ▲") if col == self.sort_column else ""
            b = w.Button(description=col + arrow, tooltip=f"sort by {col}", layout=w.Layout(width="max-content"))
            b.add_class("ai-scan-sort")
            b.on_click(lambda _, c=col: self.sort_by(c))
            cells.append(b)
        for row in page.itertuples(index=False):
            for col, value in zip(self.columns, row):
                if col == "business_key":
                    b = w.Button(description=str(value), tooltip=f"open {value}",
                                 layout=w.Layout(width="max-content"))
                    b.add_class("ai-scan-key-button")
                    b.on_click(lambda _, k=str(value): self.open_key(k))
                    cells.append(b)
                else:
                    cells.append(w.HTML(f"<span class='ai-scan-cell'>{escape(_cell(value))}</span>"))
        self.table.layout.grid_template_columns = f"repeat({len(self.columns)}, auto)"
        self.table.children = cells
        self.page_label.value = f"page {self._page + 1} of {pages} · {len(rows)} keys"

    def _turn(self, step: int) -> None:
        self._page = max(0, self._page + step)
        self._draw_table()


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else ""
    return str(value)
