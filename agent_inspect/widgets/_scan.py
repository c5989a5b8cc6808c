"""Fleet scan view: an at-risk grid sorted in the kernel, histograms of history sizes and re-executed calls, one key on click."""

from __future__ import annotations

from typing import TYPE_CHECKING

import ipywidgets as w
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from agent_inspect._glossary import define, define_column, plural
from agent_inspect._html import escape, frame_html
from agent_inspect.widgets._common import integer_axis, message_html
from agent_inspect.widgets._grid import DataGrid
from agent_inspect.widgets._plot import Plot
from agent_inspect.widgets._style import View, close_view, colour

if TYPE_CHECKING:
    from agent_inspect.scan import ScanResult
    from agent_inspect.widgets._result import ResultInspector

__all__ = ["FleetScanView", "scan_histograms"]

_NUMERIC = ("stale_reuse_risk", "resumed", "rerun", "calls", "evictions")
# the scan's per-rule columns count tasks and calls run again (not the calls an action recorded)
_COLUMN_TERMS = {"rerun": "reruns", "calls": "calls run again", "records": "key records"}
#: the table's first column: the key's place in ``ScanResult.at_risk()`` under the chosen rule (1 = most at risk)
RISK_RANK = "risk_rank"


class FleetScanView(View):
    """Show a :class:`~agent_inspect.fleet.ScanResult`.

    - a summary line, one line per rule with its tasks by outcome (:func:`~agent_inspect.fleet.tasks_text`), and,
      when some windows failed, their reasons;
    - histograms of per-key history size and durable calls re-executed under the chosen rule;
    - the at-risk table in a grid whose rows stay in the kernel: click a column header to sort by it
      (again to reverse), type in a filter box to filter, scroll for more;
    - click a row to open its key's reconstruction below (from the scan's Parquet output when it has
      one, else from the source), in the usual inspector.

    For example::

        result = ai.scan("sample_logs/production.jsonl", markers=markers)
        ai.widgets.FleetScanView(result, rule="fixed")  # or ai.inspect(result)
    """

    def __init__(self, result: ScanResult, *, rule: str | None = None) -> None:
        super().__init__()
        self.add_class("ai-scan")
        self.result = result
        rules = list(result.rules)
        # each rule by its label (a what-if says so), its value the rule's name as the columns spell it
        self.rule = w.Dropdown(description="Rule", options=[(result.rule_label(r), r) for r in rules], value=rule or rules[0],
                               layout=w.Layout(width="260px"))
        self.rule.observe(lambda _: self._rule_changed(), names="value")
        # at_risk() order by default: one all-zero column (no stale reuse anywhere) must not decide the order
        self.sort_column = RISK_RANK
        self.descending = False
        self.summary = w.HTML(self._summary_html())
        self.summary.add_class("ai-scan-summary")
        self.figure = Plot(scan_histograms(result, self.rule.value))
        self.figure.add_class("ai-scan-histograms")
        self.table = DataGrid(self._ranked(), columns=self.columns, sort=(self.sort_column, False), height=380,
                              empty_text="the scan found no key", meanings=self.meanings())
        self.table.add_class("ai-scan-table")
        self.table.observe(self._sorted, names="sort")
        self.table.on_select(lambda _label, row: self.open_key(str(row["business_key"])))
        self.detail = w.VBox()
        self.detail.add_class("ai-scan-detail")
        self.selected: str | None = None
        self.children = [self.summary, self.rule, self.figure, self.table, self.detail]
        self._draw_histograms()

    # -- what is shown --------------------------------------------------------------------------------------

    @property
    def columns(self) -> list[str]:
        """The table's columns under the current rule."""
        r = self.rule.value
        return [RISK_RANK, "business_key", "partition", "records", "attempts", "history_bytes", "exposed_1301",
                "branch_change", "lint_flags", *[f"{r}_{c}" for c in _NUMERIC]]

    def meanings(self) -> dict[str, str]:
        """What each column of the table counts, under every rule of the scan (the headers' tooltips)."""
        columns = {c for r in self.result.rules for c in (f"{r}_{m}" for m in _NUMERIC)} | set(self.columns)
        said = {c: define_column(c, rules=self.result.rules, aliases=_COLUMN_TERMS) for c in sorted(columns)}
        return {c: line for c, line in said.items() if line}

    def _ranked(self) -> pd.DataFrame:
        """The scan's keys with their place in ``at_risk()`` under the current rule (1 = most at risk)."""
        k = self.result.keys
        if k.empty:
            return k.assign(**{RISK_RANK: pd.Series(dtype="int64")})
        order = self.result.at_risk(None, self.rule.value)[["business_key", "partition"]]
        rank = pd.Series(range(1, len(order) + 1), index=pd.MultiIndex.from_frame(order))
        where = pd.MultiIndex.from_frame(k[["business_key", "partition"]])
        return k.assign(**{RISK_RANK: rank.reindex(where).to_numpy()})

    def rows(self) -> pd.DataFrame:
        """The whole table in its current order, filtered by the grid's column filters (the grid shows a window of it)."""
        k = self.result.keys
        if k.empty:
            return k.assign(**{RISK_RANK: pd.Series(dtype="int64")}).reindex(columns=self.columns)
        return self.table.shown[self.columns].reset_index(drop=True)

    def sort_by(self, column: str, descending: bool | None = None) -> None:
        """Sort the table by ``column``; without ``descending`` a second sort on the same column reverses it."""
        if column not in self.columns:
            raise ValueError(f"no column {column!r} in the scan table; columns: {', '.join(self.columns)}")
        if descending is None:
            descending = not self.descending if column == self.sort_column else True
        self.table.sort_by(column, descending)

    def open_key(self, business_key: str) -> ResultInspector | None:
        """Open ``business_key``'s reconstruction under the current rule below the table; returns its inspector
        (None when the key cannot be opened; the reason is shown instead)."""
        from agent_inspect.widgets._result import ResultInspector

        self.selected = business_key
        where = "the scan's Parquet output" if self.result.output else "the source"
        self._show_detail(w.HTML(message_html(f"Loading {business_key} from {where}…")))
        try:
            recon = self.result.reconstruct(business_key, rule=self.rule.value)
        except Exception as exc:  # noqa: BLE001 - shown to the user, the table stays usable
            self._show_detail(w.HTML(message_html(f"Could not open {business_key}: {exc}", level="error")))
            return None
        title = w.HTML(f"<h4 class='ai-scan-key'>{escape(business_key)} under <code>{escape(self.result.rule_label(self.rule.value))}</code>"
                       f" <small>(from {escape(where)})</small></h4>")
        inspector = ResultInspector(recon, key=business_key)
        self._show_detail(title, inspector)
        return inspector

    def _show_detail(self, *parts: w.Widget) -> None:
        """Show ``parts`` below the table, closing the key opened before (its inspector holds that key's log)."""
        old, self.detail.children = self.detail.children, parts
        for part in old:
            close_view(part)

    # -- drawing ---------------------------------------------------------------------------------------------

    def _summary_html(self) -> str:
        from agent_inspect.fleet import tasks_text

        s = self.result.summary()
        def term(n: int, noun: str, key: str, rest: str = "") -> str:
            return (f"<span class='ai-term' title='{escape(define(key))}'>{escape(plural(n, noun))}{escape(rest)}"
                    "</span>")

        flavour = self.result.store_flavour_text
        read_as = escape(s["runtime"]) + (f", store flavour {escape(flavour)}" if flavour else "")
        text = (f"<b>Fleet scan</b> of <code>{escape(s['source'])}</code> (runtime {read_as}): "
                + ", ".join([term(s["windows"], "window", "windows"), escape(plural(s["records"], "record")),
                             escape(plural(s["keys"], "key")), term(s["errors"], "bad record", "error"),
                             term(s["exposed_1301"], "key", "exposed to #1301", " exposed to #1301")]))
        # each rule's tasks by outcome, in the CLI's and the report's words (a what-if labelled as one)
        per_rule = "".join(f"<li><code>{escape(self.result.rule_label(r))}</code>: {escape(tasks_text(s[r]))}</li>"
                           for r in self.result.rules)
        html = f"<p>{text}.</p><ul class='ai-scan-rules'>{per_rule}</ul>"
        if s["failed"]:
            html += (f"<p class='ai-scan-failed' title='{escape(define('failed windows'))}'>"
                     f"<b>{escape(plural(s['failed'], 'window'))} failed</b></p>"
                     + frame_html(self.result.failures[["window", "reason"]], caption="failed windows"))
        return html

    def _rule_changed(self) -> None:
        old = [r for r in self.result.rules if self.sort_column.startswith(f"{r}_")]
        if old:  # the same measure under the newly chosen rule
            self.sort_column = f"{self.rule.value}_{self.sort_column[len(old[0]) + 1:]}"
        self._draw_histograms()
        self.table.set_frame(self._ranked(), columns=self.columns)
        self.table.sort_by(self.sort_column, self.descending)

    def _sorted(self, change: dict) -> None:
        if change["new"]:
            self.sort_column, self.descending = str(change["new"][0]), bool(change["new"][1])

    def _draw_histograms(self) -> None:
        figure = scan_histograms(self.result, self.rule.value)
        with self.figure.batch_update():
            self.figure.data = figure.data
            self.figure.layout = figure.layout


def scan_histograms(result: ScanResult, rule: str) -> go.Figure:
    """History size and re-executed calls per key under ``rule``, as a plain figure (the report's; no widget).

    For example::

        result = ai.scan("sample_logs/production.jsonl", markers=markers)
        ai.widgets.scan_histograms(result, "original").to_html(include_plotlyjs=False)[:40]
    """
    figure = make_subplots(rows=1, cols=2, subplot_titles=(
        "history size per key (bytes)", "durable calls re-executed per key"))
    figure.update_layout(height=280, margin=dict(l=50, r=10, t=40, b=45), showlegend=False, bargap=0.05)
    k = result.keys
    calls = k[f"{rule}_calls"] if len(k) else pd.Series(dtype="int64")
    figure.add_trace(go.Histogram(x=k["history_bytes"].to_numpy() if len(k) else [], nbinsx=30,
                                  name="history bytes", hovertemplate="%{x} bytes: %{y} keys<extra></extra>",
                                  marker_color=colour("info")),
                     row=1, col=1)
    # one bar per whole number of calls while that stays readable (a count has no 1.2)
    values = pd.to_numeric(calls, errors="coerce").dropna()
    low, high = (int(values.min()), int(values.max())) if len(values) else (0, 0)
    bins = dict(start=low - 0.5, end=high + 0.5, size=1) if high - low <= 60 else None
    figure.add_trace(go.Histogram(x=calls.to_numpy(), xbins=bins, nbinsx=None if bins else 30,
                                  name="calls re-executed", hovertemplate="%{x} calls: %{y} keys<extra></extra>",
                                  marker_color=colour("warn")),
                     row=1, col=2)
    keys = dict(title_text="keys", tickformat="d", rangemode="tozero", **({"dtick": 1} if len(k) <= 10 else {}))
    figure.update_yaxes(**keys)
    figure.update_xaxes(title_text="bytes of history", row=1, col=1)
    figure.update_xaxes(title_text="durable calls re-executed", row=1, col=2, **integer_axis([low, high]))
    return figure
