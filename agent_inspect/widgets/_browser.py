"""Log browser: filter the record table, scroll it in a kernel-side grid, see aggregated counts and one decoded record."""

from __future__ import annotations

from typing import Any

import ipywidgets as w
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from agent_inspect._controls import show_controls
from agent_inspect._html import plotly_text
from agent_inspect._types import RecordSource
from agent_inspect.widgets._common import (
    colour_for,
    decoded_value,
    first_column,
    hover,
    log_of,
    message_html,
    records_of,
    runtime_html,
    value_html,
)
from agent_inspect.widgets._grid import DataGrid
from agent_inspect.widgets._plot import Plot
from agent_inspect.widgets._style import View, choices, view_style

__all__ = ["LogBrowser"]

ANY = "(any)"
ERRORS_ONLY = "errors only"
NO_ERRORS = "no errors"
_TABLE_COLUMNS = (
    "partition", "offset", "business_key", "seq", "task_event_type", "upstream_action", "completed",
    "call_count", "output_event_count", "tombstone", "status", "reason", "attempt", "divergence_id", "error",
)
# Beyond this many distinct values a dropdown would ship a huge option list to the browser.
_MAX_OPTIONS = 500


class LogBrowser(View):
    """Filterable view of a log's (or a reconstruction's) records in a virtualized grid, with a counts chart.

    The records stay in the kernel: the grid (:class:`~agent_inspect.widgets._grid.DataGrid`) ships
    only the rows in view, sorts and filters in Python, and the chart shows aggregated counts, so a
    log of a million records stays responsive. Filters: business key, seq (``5`` or ``3-7``),
    status, event type and decode errors, plus the grid's own column filters; clicking a bar of the
    chart filters by its event type. Click a row (or enter a log position under "Record") to see
    that record's decoded value.

    For example::

        browser = ai.widgets.LogBrowser(log)            # or ai.inspect(log)
        browser.set_filters(key="user-0011", seq="1-2")
        browser.show_record(1388)
    """

    def __init__(self, source: RecordSource, *, height: int = 360, columns: tuple[str, ...] | None = None) -> None:
        super().__init__()
        self.add_class("ai-log-browser")
        self._source = source
        self._frame = records_of(source)
        self._columns = [c for c in (columns or _TABLE_COLUMNS) if c in self._frame.columns]
        self._mask: np.ndarray | None = None
        self._rows: np.ndarray | None = None
        self._muted = False

        # a key is offered and shown with its control characters written out; that text finds the key itself
        # (_keys_shown_as), and a key given to set_filters is remembered exactly while its label is in the box
        self._exact_key: tuple[str, str] | None = None       # (the label shown, the exact key)
        self._labelled_keys: dict[str, list[str]] | None = None
        labels = dict.fromkeys(show_controls(k) for k in self._choices("business_key")[1:])
        self.key_filter = w.Combobox(description="Key", placeholder="business key (exact)",
                                     options=list(labels), ensure_option=False,
                                     continuous_update=False, layout=w.Layout(width="280px"))
        self.seq_filter = w.Text(description="Seq", placeholder="5 or 3-7", continuous_update=False,
                                 layout=w.Layout(width="180px"))
        self.status_filter = w.Dropdown(description="Status", options=choices(self._choices("status")),
                                        layout=w.Layout(width="220px"))
        self.event_filter = w.Dropdown(description="Event", options=choices(self._choices("task_event_type")),
                                       layout=w.Layout(width="300px"))
        self.error_filter = w.Dropdown(description="Errors", options=[ANY, ERRORS_ONLY, NO_ERRORS],
                                       layout=w.Layout(width="200px"))
        self.notice = w.HTML()
        self.grid = DataGrid(self._frame, columns=self._columns, index="position",
                             height=height, empty_text=self._empty_text())
        self.grid.add_class("ai-log-grid")
        self.grid.on_select(lambda label, _row: self.show_record(int(label)))
        self.record_pos = w.IntText(description="Record", value=0, layout=w.Layout(width="200px"))
        self.show_button = w.Button(description="Show")
        self.detail = w.HTML()
        self.detail.add_class("ai-detail")
        self.figure = Plot(layout=go.Layout(
            height=260, barmode="stack", margin=dict(l=40, r=10, t=30, b=80),
            title=dict(text="records by event type", font=dict(size=13)), showlegend=True))
        self.figure.add_class("ai-counts")
        self.runtime = w.HTML(runtime_html(source))   # which runtime wrote these records, and why we think so

        self.key_filter.observe(self._on_key_typed, names="value")
        for control in (self.key_filter, self.seq_filter, self.status_filter, self.event_filter,
                        self.error_filter):
            control.observe(self._on_filter, names="value")
        self.show_button.on_click(lambda _: self.show_record(self.record_pos.value))

        self.children = [
            self.runtime,
            w.HBox([self.key_filter, self.seq_filter, self.status_filter]),
            w.HBox([self.event_filter, self.error_filter]),
            self.notice,
            self.figure,
            self.grid,
            w.HBox([self.record_pos, self.show_button]),
            self.detail,
            view_style(),
        ]
        self.refresh()

    # -- public -----------------------------------------------------------------------------------

    @property
    def filtered(self) -> pd.DataFrame:
        """The records that pass the current filters (index = log position)."""
        return self._frame if self._mask is None else self._frame[self._mask]

    @property
    def window_rows(self) -> pd.DataFrame:
        """The rows the grid currently sends to the browser (its scroll window)."""
        return self.grid.window_frame()

    def active_filters(self) -> list[tuple[str, str]]:
        """The filters that are set, as (name, value) pairs in the order of the controls."""
        values = [("key", self.key_filter.value.strip()), ("seq", self.seq_filter.value.strip()),
                  ("status", self.status_filter.value), ("event type", self.event_filter.value),
                  ("errors", self.error_filter.value)]
        return [(name, value) for name, value in values if value and value != ANY]

    def set_filters(self, *, key: str | None = None, seq: str | int | None = None, status: str | None = None,
                    event_type: str | None = None, errors: str | None = None) -> None:
        """Set several filters at once (``None`` leaves a filter unchanged) and refresh once."""
        self._muted = True
        try:
            if key is not None:
                label = show_controls(str(key))
                self.key_filter.value = label
                self._exact_key = (label, str(key)) if str(key).strip() else None
            if seq is not None:
                self.seq_filter.value = str(seq)
            if status is not None:
                self.status_filter.value = status
            if event_type is not None:
                self.event_filter.value = event_type
            if errors is not None:
                self.error_filter.value = errors
        finally:
            self._muted = False
        self.refresh()

    def refresh(self) -> None:
        """Re-apply the filters, redraw the counts chart and scroll the grid back to the top."""
        try:
            self._mask = self._compute_mask()
            self._rows = None if self._mask is None else np.flatnonzero(self._mask)
        except ValueError as exc:
            self.notice.value = message_html(str(exc), level="warning")
            return
        self.grid.empty_text = self._empty_text()
        shown = len(self._frame) if self._rows is None else len(self._rows)  # not len(self.filtered): no copy
        self.notice.value = "" if shown else message_html(self.grid.empty_text)
        self._draw_counts()
        self.grid.scroll_to(0)
        self.grid.set_rows(self._rows)

    def show_record(self, pos: int) -> None:
        """Show the decoded value of the record at log position ``pos``."""
        pos = int(pos)
        if pos not in self._frame.index:
            self.detail.value = message_html(f"no record at position {pos}", level="warning")
            return
        self.record_pos.value = pos
        row = self._frame.loc[pos]
        title = f"record {pos}: {row.get('state_key', '')}"
        self.detail.value = value_html(title, decoded_value(self._source, pos))

    def open_record(self, pos: int, *, key: str | None = None) -> None:
        """Open on record ``pos``: filtered to its business key (or ``key``), scrolled to it, its value shown."""
        pos = int(pos)
        if pos not in self._frame.index:
            self.show_record(pos)
            return
        if key is None and "business_key" in self._frame.columns:
            key = self._frame.at[pos, "business_key"]
        if key is not None and not pd.isna(key):
            self.set_filters(key=str(key))
        iloc = int(self._frame.index.get_loc(pos))
        order = self.grid.order
        where = np.flatnonzero(order == iloc)
        if len(where):
            self.grid.selected = iloc      # first: the browser scrolls to it when the window below arrives
            self.grid.scroll_to(max(0, int(where[0]) - 2))
        self.show_record(pos)

    # -- internals --------------------------------------------------------------------------------

    def _empty_text(self) -> str:
        """Why the table is empty: the source holds no record, or which filters match none."""
        if not len(self._frame):
            log = log_of(self._source)
            where = getattr(getattr(log, "source", None), "location", None) if log is not None else None
            return f"{where} is empty: it holds no record" if where else "this log is empty: it holds no record"
        filters = self.active_filters()
        if not filters:
            return "no record"
        return "no record matches these filters: " + ", ".join(f"{name} = {value}" for name, value in filters)

    def _choices(self, column: str) -> list[str]:
        if column not in self._frame.columns:
            return [ANY]
        series = self._frame[column]
        if isinstance(series.dtype, pd.CategoricalDtype):
            values = [str(v) for v in series.cat.categories[:_MAX_OPTIONS]]
        else:
            values = sorted(map(str, pd.unique(series.dropna())[:_MAX_OPTIONS]))
        return [ANY, *values]

    def _on_bar_click(self, trace: Any, points: Any, _state: Any = None) -> None:
        indices = list(getattr(points, "point_inds", []) or [])
        if indices and trace.customdata is not None:
            label = self._bar_labels[int(trace.customdata[indices[0]])]
            if label in self._choices("task_event_type"):
                self.event_filter.value = label

    def _on_filter(self, _change: dict) -> None:
        if not self._muted:
            self.refresh()

    def _on_key_typed(self, change: dict) -> None:
        if self._exact_key is not None and change["new"] != self._exact_key[0]:
            self._exact_key = None       # other text typed or picked: the key set_filters gave is no longer shown

    def _key_hits(self, keys: list[str]) -> np.ndarray:
        frame = self._frame
        hit = np.zeros(len(frame), dtype=bool)
        for col in (c for c in ("business_key", "key_text", "key_digest") if c in frame.columns):
            hit |= frame[col].isin(keys).to_numpy(dtype=bool)
        return hit

    def _keys_shown_as(self, label: str) -> list[str]:
        """The log's keys (all of them, not only the offered ones) whose control characters written out read ``label``."""
        if self._labelled_keys is None:
            self._labelled_keys = {}
            for col in (c for c in ("business_key", "key_text") if c in self._frame.columns):
                series = self._frame[col]
                values = (series.cat.categories if isinstance(series.dtype, pd.CategoricalDtype)
                          else pd.unique(series.dropna()))
                for key in values:          # only a key with a control character has a label other than itself
                    if isinstance(key, str) and not key.isprintable():
                        self._labelled_keys.setdefault(show_controls(key), []).append(key)
        return self._labelled_keys.get(label, [])

    def _compute_mask(self) -> np.ndarray | None:
        frame = self._frame
        masks: list[np.ndarray] = []
        text = self.key_filter.value
        if self._exact_key is not None and text == self._exact_key[0]:
            masks.append(self._key_hits([self._exact_key[1]]))      # the key set_filters gave, exactly
        elif text.strip():
            hit = self._key_hits([text.strip()])                     # text that is a key finds that key literally
            if not hit.any():                                        # else: the keys it is the written-out label of
                hit = self._key_hits(self._keys_shown_as(text.strip()) or [text.strip()])
            masks.append(hit)
        seq = self.seq_filter.value.strip()
        if seq and "seq" in frame.columns:
            low, high = _parse_seq(seq)
            col = frame["seq"]
            masks.append(((col >= low) & (col <= high)).fillna(False).to_numpy(dtype=bool))
        if self.status_filter.value != ANY and "status" in frame.columns:
            masks.append(_equals(frame["status"], self.status_filter.value))
        if self.event_filter.value != ANY and "task_event_type" in frame.columns:
            masks.append(_equals(frame["task_event_type"], self.event_filter.value))
        if self.error_filter.value != ANY and "error" in frame.columns:
            has_error = frame["error"].notna().to_numpy(dtype=bool)
            masks.append(has_error if self.error_filter.value == ERRORS_ONLY else ~has_error)
        if not masks:
            return None
        mask = masks[0]
        for extra in masks[1:]:
            mask = mask & extra
        return mask

    def _draw_counts(self) -> None:
        by = first_column(self._frame, "task_event_type") or first_column(self._frame, "business_key")
        split = first_column(self._frame, "status")
        traces = []
        self._bar_labels: list[str] = []
        cols = [c for c in (by, split) if c is not None]
        # Only the counted columns of the filtered rows are copied, never the whole table.
        frame = self._frame[cols] if self._mask is None else self._frame[cols].iloc[self._rows]
        if by is not None and len(frame):
            counts = frame.groupby(cols, observed=True, dropna=False, sort=True).size()
            counts = counts[counts > 0]
            if split is None:
                counts = pd.concat({"records": counts}, names=["__split", by]).swaplevel()
            for name, part in counts.groupby(level=1, sort=True):
                labels = [("(none)" if pd.isna(v) else str(v)) for v in part.index.get_level_values(0)]
                # customdata holds indices, not text: record strings reach the figure only escaped
                first = len(self._bar_labels)
                self._bar_labels.extend(labels)
                traces.append(go.Bar(
                    x=[plotly_text(v) for v in labels], y=part.to_numpy(), name=plotly_text(name),
                    customdata=np.arange(first, first + len(labels)),
                    marker_color=colour_for(name), hoverinfo="text",
                    hovertext=[hover([(by, v), (split or "", name if split else None), ("records", int(n))])
                               for v, n in zip(labels, part.to_numpy())],
                ))
        with self.figure.batch_update():
            self.figure.data = []
            for trace in traces:
                self.figure.add_trace(trace)
        if by == "task_event_type":
            for trace in self.figure.data:
                trace.on_click(self._on_bar_click)
        self.figure.layout.title.text = f"records by {by or 'event type'}" + (f" and {split}" if split else "")


def _equals(series: pd.Series, value: str) -> np.ndarray:
    if isinstance(series.dtype, pd.CategoricalDtype):
        matches = [c for c in series.cat.categories if str(c) == value]
        result = series.isin(matches)
    elif pd.api.types.is_string_dtype(series.dtype):
        result = series == value
    else:
        result = series.astype("string") == value
    matched: np.ndarray = result.fillna(False).to_numpy(dtype=bool)
    return matched


def _parse_seq(text: str) -> tuple[int, int]:
    try:
        if "-" in text.strip("-"):
            low, high = text.split("-", 1)
            return int(low), int(high)
        value = int(text)
        return value, value
    except ValueError:
        raise ValueError(f"seq filter {text!r} is not a number or a range like 3-7") from None
