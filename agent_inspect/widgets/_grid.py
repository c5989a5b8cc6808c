"""A virtualized data grid whose rows stay in the kernel: sort, filter and the visible window run in Python.

The browser (``static/grid.js``) draws only the rows in view and asks for another window as it
scrolls; a header click asks for a sort, the filter boxes for a filter, a row click reports the
row. Only the visible window (about 60 rows of text) ever crosses the websocket, so a 1M-row
frame costs what a 60-row one does in the browser. Cell text is set with ``textContent`` in the
browser, never as HTML. Why not perspective, ipydatagrid or itables: ``docs/architecture.md`` §8.7.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anywidget
import numpy as np
import numpy.typing as npt
import pandas as pd
import traitlets as t

from agent_inspect._controls import show_controls
from agent_inspect._glossary import define_column
from agent_inspect.widgets._style import palette_css, static_text

if TYPE_CHECKING:
    pass

__all__ = ["DataGrid", "filter_mask", "sort_order", "window_cells", "describe_filters"]

# Rows shipped for the first draw (before the browser has measured its viewport).
_FIRST_WINDOW = 60
_MAX_WINDOW = 400
_RANGE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(?:-|\.\.)\s*(-?\d+(?:\.\d+)?)\s*$")
_COMPARE = re.compile(r"^\s*(<=|>=|<|>|=|!=)\s*(-?\d+(?:\.\d+)?)\s*$")


def _series(frame: pd.DataFrame, column: str, index: str | None) -> pd.Series | None:
    """A column of ``frame``, or its index when ``column`` is the index's display name."""
    if index is not None and column == index:
        return frame.index.to_series(index=frame.index)
    return frame[column] if column in frame.columns else None


def filter_mask(frame: pd.DataFrame, filters: Mapping[str, str], *, index: str | None = None) -> np.ndarray | None:
    """Rows of ``frame`` that pass every column filter (None when no filter is set).

    Numeric columns take ``5``, ``3-7`` (inclusive range), ``>5``, ``<=5`` or ``!=5``; any other
    column matches when its text contains the filter text (case-insensitive). Text is matched once
    per distinct value, so a million rows with a few thousand distinct values cost milliseconds.
    """
    mask: np.ndarray | None = None
    for column, text in filters.items():
        text = str(text).strip()
        series = _series(frame, column, index)
        if not text or series is None:
            continue
        hit = _column_hits(series, text)
        mask = hit if mask is None else mask & hit
    return mask


def _column_hits(series: pd.Series, text: str) -> np.ndarray:
    if pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype):
        values: npt.NDArray[np.float64] = series.to_numpy(dtype="float64", na_value=np.nan)
        ranged = _RANGE.match(text)
        if ranged:
            low, high = sorted((float(ranged.group(1)), float(ranged.group(2))))
            return (values >= low) & (values <= high)
        compared = _COMPARE.match(text)
        if compared:
            op, number = compared.group(1), float(compared.group(2))
            return {"<": values < number, ">": values > number, "<=": values <= number, ">=": values >= number,
                    "=": np.equal(values, number), "!=": np.not_equal(values, number)}[op]
        try:
            return np.equal(values, float(text))
        except ValueError:
            pass
    codes: npt.NDArray[np.intp]
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    needle = text.casefold()
    table = np.array([needle in cell_text(u).casefold() for u in uniques] + [False], dtype=bool)
    return table[codes]


def sort_order(frame: pd.DataFrame, column: str, *, descending: bool = False,
               rows: np.ndarray | None = None, index: str | None = None) -> np.ndarray:
    """Positions (``iloc``) of ``rows`` (default: all) sorted by ``column``, stable, missing values last."""
    rows = np.arange(len(frame)) if rows is None else np.asarray(rows, dtype=np.int64)
    series = _series(frame, column, index)
    if series is None:
        raise ValueError(f"no column {column!r}")
    if len(rows) != len(frame):
        series = series.iloc[rows]
    if pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype):
        values = series.to_numpy(dtype="float64", na_value=np.nan)
        key = -values if descending else values
        return rows[np.argsort(key, kind="stable")]  # NaN sorts last either way
    if isinstance(series.dtype, pd.CategoricalDtype):
        series = series.astype(object)
    try:
        codes, _ = pd.factorize(series, sort=True, use_na_sentinel=True)
    except TypeError:  # unhashable or mutually unorderable values (lists, mixed types): sort by their text
        codes, _ = pd.factorize(series.map(cell_text, na_action="ignore"), sort=True, use_na_sentinel=True)
    codes = codes.astype(np.int64)
    missing = codes < 0
    key = -codes if descending else codes
    key[missing] = np.iinfo(np.int64).max  # last either way
    return rows[np.argsort(key, kind="stable")]


def cell_text(value: Any) -> str:
    """The text a cell shows: empty for missing values, lists joined by commas, control characters written out
    (:func:`show_controls`: the browser shows a key's bidi override as text, as the HTML views do, never obeys it)."""
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple, np.ndarray)):
        return ", ".join(cell_text(v) for v in value)
    if isinstance(value, (bytes, bytearray)):
        return show_controls(bytes(value).decode("utf-8", "replace"))
    return show_controls(str(value))


def window_cells(frame: pd.DataFrame, columns: Sequence[str], rows: np.ndarray, *,
                 index: str | None = None) -> list[list[str]]:
    """Cell texts of ``frame.iloc[rows]`` for ``columns`` (``index``: the index's display name), row by row."""
    part = frame.iloc[np.asarray(rows, dtype=np.int64)]
    cols = [[cell_text(v) for v in (part.index if c == index else part[c]).tolist()] for c in columns]
    return [list(r) for r in zip(*cols)] if cols else [[] for _ in range(len(part))]


def describe_filters(filters: Mapping[str, str]) -> str:
    """``column ~ text`` for every set filter, joined by commas (empty when none is set)."""
    return ", ".join(f"{c} ~ {str(v).strip()}" for c, v in filters.items() if str(v).strip())


class DataGrid(anywidget.AnyWidget):
    """A virtualized table of a DataFrame; the frame stays in the kernel.

    A column header says on hover what its column counts: ``meanings`` (column → line) where given, else the
    glossary's line for the column's name. ``on_select(callback)`` calls ``callback(label, row)`` with the index
    label and row of a clicked row. ``set_rows(positions)`` restricts the grid to some rows of the frame (a view's
    own filters); the grid's column filters and sort apply on top. ``sort_by``, ``set_filter``
    and ``scroll_to`` do from Python what the header, the filter boxes and the scrollbar do.

    For example::

        grid = ai.widgets.DataGrid(log.records, columns=["business_key", "seq", "completed"], sort=("seq", False))
        grid.set_filter("business_key", "user-0011")
        grid.on_select(lambda label, row: print(label, row["seq"]))
        grid                                           # the rows in view travel to the browser, the frame stays here
    """

    _esm = static_text("grid.js")
    _css = palette_css() + static_text("grid.css")
    columns = t.List(t.Unicode()).tag(sync=True)
    tips = t.Dict(default_value={}).tag(sync=True)          # column -> what it counts (the header's title)
    total = t.Int(0).tag(sync=True)
    sort: t.List[Any] = t.List(default_value=[]).tag(sync=True)   # [column, descending] or []
    filters = t.Dict(default_value={}).tag(sync=True)       # column -> text
    viewport = t.List(t.Int(), default_value=[0, _FIRST_WINDOW]).tag(sync=True)   # [start, count]
    window = t.Dict(default_value={}).tag(sync=True)        # {"start", "cells", "ids"}
    selected = t.Int(-1).tag(sync=True)                     # position (iloc) in the frame, -1 for none
    empty_text = t.Unicode("no row")                        # shown when there is no row and no column filter
    message = t.Unicode("").tag(sync=True)                  # shown instead of rows when none is left
    height = t.Int(360).tag(sync=True)                      # the most pixels the rows take; fewer rows take less
    error = t.Unicode("").tag(sync=True)

    def __init__(self, frame: pd.DataFrame, *, columns: Sequence[str] | None = None, height: int = 360,
                 empty_text: str = "no row", sort: tuple[str, bool] | None = None, index: str | None = None,
                 meanings: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self._index = index
        self._meanings = dict(meanings or {})
        self._frame = frame
        self._base: np.ndarray | None = None
        self._order: np.ndarray = np.arange(len(frame))
        self._callbacks: list[Callable[[Any, pd.Series], object]] = []
        self._muted = True
        self.columns = self._shown_columns(columns)
        self.tips = self._tips()
        self.height = int(height)
        self.empty_text = empty_text
        if sort is not None:
            self.sort = [sort[0], bool(sort[1])]
        self._muted = False
        self.add_class("ai-grid")
        self.observe(self._on_query, names=["sort", "filters"])
        self.observe(self._on_viewport, names="viewport")
        self.on_msg(self._on_message)
        self.refresh()

    # -- public ---------------------------------------------------------------------------------------

    @property
    def frame(self) -> pd.DataFrame:
        return self._frame

    @property
    def order(self) -> np.ndarray:
        """Positions (``iloc``) of the shown rows, filtered and sorted."""
        return self._order

    @property
    def shown(self) -> pd.DataFrame:
        """The shown rows in their order (all of them, not just the window)."""
        return self._frame.iloc[self._order]

    def window_frame(self) -> pd.DataFrame:
        """The rows of the current window."""
        start, count = self._window_span()
        return self._frame.iloc[self._order[start:start + count]]

    def set_frame(self, frame: pd.DataFrame, *, columns: Sequence[str] | None = None) -> None:
        """Show another frame (sort and filters are kept where their columns still exist)."""
        self._frame, self._base = frame, None
        self._muted = True
        try:
            self.columns = self._shown_columns(columns)
            self.tips = self._tips()
            self.filters = {c: v for c, v in self.filters.items() if c in self.columns}
            if self.sort and self.sort[0] not in self.columns:
                self.sort = []
        finally:
            self._muted = False
        self.refresh()

    def set_rows(self, rows: np.ndarray | None) -> None:
        """Restrict the grid to these frame positions (None: every row)."""
        self._base = None if rows is None else np.asarray(rows, dtype=np.int64)
        self.refresh()

    def sort_by(self, column: str, descending: bool = False) -> None:
        """Sort by ``column`` (what a header click does)."""
        if column not in self.columns:
            raise ValueError(f"no column {column!r}; columns: {', '.join(self.columns)}")
        self.sort = [column, bool(descending)]

    def set_filter(self, column: str, text: str) -> None:
        """Filter ``column`` by ``text`` (see :func:`filter_mask`; empty text clears it)."""
        self.filters = {**self.filters, column: str(text)}

    def scroll_to(self, start: int) -> None:
        """Make the window start at row ``start`` of the shown rows."""
        self.viewport = [max(0, int(start)), self.viewport[1]]

    def select(self, position: int) -> None:
        """Select the row at frame position ``position`` as a click would, and tell ``on_select`` callbacks."""
        pos = int(position)
        if not 0 <= pos < len(self._frame):
            raise IndexError(f"no row at position {pos} (the frame has {len(self._frame)} rows)")
        self.selected = pos
        label, row = self._frame.index[pos], self._frame.iloc[pos]
        for callback in self._callbacks:
            callback(label, row)

    def on_select(self, callback: Callable[[Any, pd.Series], object]) -> None:
        """Call ``callback(label, row)`` when a row is clicked."""
        self._callbacks.append(callback)

    def refresh(self) -> None:
        """Recompute the filtered, sorted order and the window."""
        try:
            mask = filter_mask(self._frame, self.filters, index=self._index)
            self.error = ""
        except (TypeError, ValueError) as exc:
            self.error = str(exc)
            mask = None
        rows = self._base
        if mask is not None:
            rows = np.flatnonzero(mask) if rows is None else rows[mask[rows]]
        if self.sort and self.sort[0] in self.columns:
            self._order = sort_order(self._frame, self.sort[0], descending=bool(self.sort[1]), rows=rows,
                                     index=self._index)
        else:
            self._order = np.arange(len(self._frame)) if rows is None else rows
        self.total = len(self._order)
        column_filters = describe_filters(self.filters)
        self.message = "" if self.total else (
            f"no row matches the column filters: {column_filters}" if column_filters else self.empty_text)
        self._send_window()

    # -- internals ------------------------------------------------------------------------------------

    def _shown_columns(self, columns: Sequence[str] | None) -> list[str]:
        names = [str(c) for c in (columns or self._frame.columns) if c in self._frame.columns]
        return [self._index, *names] if self._index is not None else names

    def _tips(self) -> dict[str, str]:
        """Each shown column's line for its header's title (columns without one are left out)."""
        said = {c: self._meanings.get(c) or define_column(c) for c in self.columns}
        return {c: line for c, line in said.items() if line}

    def _window_span(self) -> tuple[int, int]:
        start, count = (list(self.viewport) + [0, _FIRST_WINDOW])[:2]
        count = min(max(1, int(count)), _MAX_WINDOW)
        start = min(max(0, int(start)), max(0, len(self._order) - 1))
        return start, count

    def _send_window(self) -> None:
        start, count = self._window_span()
        rows = self._order[start:start + count]
        self.window = {"start": start, "total": len(self._order), "ids": [int(r) for r in rows],
                       "cells": window_cells(self._frame, self.columns, rows, index=self._index)}

    def _on_query(self, _change: dict) -> None:
        if not self._muted:
            self._muted = True
            try:
                self.viewport = [0, self.viewport[1]]
            finally:
                self._muted = False
            self.refresh()

    def _on_viewport(self, _change: dict) -> None:
        if not self._muted:
            self._send_window()

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, Mapping) and content.get("type") == "select":
            pos = content.get("row")
            if isinstance(pos, int) and 0 <= pos < len(self._frame):
                self.select(pos)
