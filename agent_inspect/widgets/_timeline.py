"""Key timeline: log position against seq for one business key, coloured by status."""

from __future__ import annotations

from typing import Any

import ipywidgets as w
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from agent_inspect._errors import InspectError
from agent_inspect._glossary import count_words
from agent_inspect._html import escape, plotly_text
from agent_inspect._types import ReconstructionLike, RecordSource
from agent_inspect.log import rule_mark
from agent_inspect.widgets._common import (
    colour_for,
    decoded_value,
    first_column,
    frame_hover,
    hover,
    integer_axis,
    message_html,
    records_of,
    terms_html,
    value_html,
)
from agent_inspect.widgets._plot import Plot
from agent_inspect.widgets._style import View, colour

__all__ = ["KeyTimeline", "LOD_POINTS", "most_affected_key", "timeline_figure"]

_STATUS_ORDER = ("live", "superseded", "pruned", "evicted", "invalidated")
_REMOVED = ("evicted", "invalidated")
_HOVER_COLUMNS = (
    ("state key", "state_key"), ("event", "task_event_type"), ("upstream action", "upstream_action"),
    ("completed", "completed"), ("calls", "call_count"), ("status", "status"), ("reason", "reason"),
    ("attempt", "attempt"), ("divergence", "divergence_id"), ("error", "error"),
)


def most_affected_key(source: Any) -> Any:
    """The business key with the most evicted or invalidated records (else the one with most records)."""
    frame = records_of(source)
    if "business_key" not in frame.columns or frame.empty:
        return None
    keys = frame["business_key"]
    if "status" in frame.columns:
        removed = frame["status"].isin(_REMOVED).to_numpy(dtype=bool)
        counts = keys[removed].value_counts(sort=True)
        if len(counts):
            return counts.index[0]
    counts = keys.value_counts(sort=True)
    return counts.index[0] if len(counts) else None      # a log of only bad records has no key at all


# Above this many records in view the kernel draws counts per status per bin; zooming in fetches the records.
LOD_POINTS = 4000
_X_BINS = 300
_Y_BINS = 80
DIVERGENCE_MARK = "divergence"
# Drawing order: later traces sit on top, so live records cover superseded ones and divergences cover both.
_DRAW_ORDER = ("superseded", "pruned", "evicted", "invalidated")
_LAYOUT = dict(margin=dict(l=50, r=10, t=64, b=40), hovermode="closest", uirevision="timeline",
               xaxis=dict(title="log position"), yaxis=dict(title="seq"),
               # top left, clear of plotly's toolbar (top right)
               legend=dict(orientation="h", x=0, xanchor="left", y=1.02, yanchor="bottom"))


class KeyTimeline(View):
    """Every record of one business key: x = log position, y = seq, colour = status.

    Attempts are separated by dashed lines, the records a recovery evicted or invalidated are drawn
    inside a shaded band per divergence ("evicted suffix" in the legend), and each divergence point (the
    record whose lookup triggered the rule) is marked with a ✕ drawn on top; hovering or clicking a ✕ gives
    the divergence: the rule, its cause and what it removed. Click a point to see the record's status,
    reason and decoded value below the chart. Above :data:`LOD_POINTS` records in view the chart shows counts
    per status per bin; zoom in and the kernel sends the records of the zoomed range.

    For example::

        ai.widgets.KeyTimeline(ai.reconstruct(log, markers=markers), "user-0011")
    """

    def __init__(self, source: RecordSource, key: str | None = None, *, height: int = 380) -> None:
        super().__init__()
        self.add_class("ai-timeline")
        self._source = source
        self._data = _TimelineData(source, key)
        self.key = self._data.key
        self.records = self._data.frame
        self.selected_pos: int | None = None
        self.title = w.HTML(f'<div class="ai-title">timeline of key <code>{escape(self.key)}</code> · '
                            f"{len(self.records):,} {count_words(len(self.records), 'record')}</div>")
        self.detail = w.HTML(message_html("click a point to see its decoded value"))
        self.detail.add_class("ai-detail")
        self.figure = Plot(self._data.figure(height=height, hover=False))
        self.figure.add_class("ai-timeline-figure")
        self._bins: dict[int, list[str]] = {}
        self._x_range: tuple[float, float] | None = None
        self._y_range: tuple[float, float] | None = None
        self._show()
        self.figure.on_hover(self._hover)
        self.figure.on_relayout(self._zoom)
        statuses = self.records["status"].dropna().astype(str).unique() if "status" in self.records else ()
        self.terms = w.HTML(terms_html([*sorted(statuses), "round", "attempt",
                                        *(["divergence"] if self._data.divergences else [])]))
        self.children = [self.title, self.figure, self.terms, self.detail]

    @property
    def binned(self) -> bool:
        """Whether the chart shows counts per bin (too many records in view) rather than the records."""
        return bool(self._bins)

    def select(self, pos: int) -> None:
        """Show the status, reason and decoded value of the record at log position ``pos`` (as a click would)."""
        pos = int(pos)
        self.selected_pos = pos
        row = self.records.loc[pos] if pos in self.records.index else None
        state_key = "" if row is None else row.get("state_key", "")
        facts = [] if row is None else [f"{label}: {row.get(col)}" for label, col in
                                        (("status", "status"), ("reason", "reason"), ("divergence", "divergence_id"))
                                        if col in self.records.columns and not _missing(row.get(col))]
        title = " · ".join([f"record {pos}: {state_key}", *facts])
        self.detail.value = value_html(title, decoded_value(self._source, pos))

    def select_divergence(self, pos: int) -> None:
        """Show the divergences whose ✕ sits at log position ``pos`` (as a click on the ✕ would; often one)."""
        marks = [d for p, _, _, d in self._data.divergences if p == int(pos)]
        self.selected_pos = int(pos)
        self.detail.value = "".join(
            f'<div class="ai-divergence-detail"><b>{escape(d["title"])}</b>'
            f'<div>cause: {escape(d["cause"])}</div><div>removed: {escape(d["removed"] or "nothing")}</div></div>'
            for d in marks) or message_html(f"no divergence at record {pos}")

    def show_range(self, x_range: tuple[float, float] | None, y_range: tuple[float, float] | None = None) -> None:
        """Draw the records in this range of log positions (and seqs); None: all of them."""
        self._x_range, self._y_range = x_range, y_range
        self._show()

    # -- drawing ----------------------------------------------------------------------------------

    def _show(self) -> None:
        traces, self._bins = self._data.traces(self._x_range, self._y_range, hover=False)
        self.figure.items = self._data.count(self._x_range, self._y_range)  # records, even when binned
        with self.figure.batch_update():
            self.figure.data = traces
        for n, trace in enumerate(self.figure.data):
            trace.on_click(lambda t, p, _s=None, n=n: self._on_click(n, t, p))

    def _on_click(self, index: int, trace: Any, points: Any) -> None:
        indices = list(getattr(points, "point_inds", []) or [])
        if not indices:
            return
        if trace.customdata is None:
            return
        if trace.name == DIVERGENCE_MARK:
            self.select_divergence(int(np.asarray(trace.customdata)[indices[0]]))
            return
        self.select(int(np.asarray(trace.customdata)[indices[0]]))  # a bin: its first record
        if index in self._bins:
            self.detail.value = (message_html(self._bins[index][indices[0]].replace("<br>", " · ") +
                                              " — its first record below; zoom in to see each")
                                 + self.detail.value)

    def _hover(self, index: int, point: Any) -> str | None:
        if not 0 <= index < len(self.figure.data) or not isinstance(point, int):
            return None
        if index in self._bins:
            return self._bins[index][point]
        trace = self.figure.data[index]
        if trace.customdata is None or point >= len(trace.customdata):
            return None
        pos = int(trace.customdata[point])
        if trace.name == DIVERGENCE_MARK:
            return "<br>".join(t for p, _, t, _ in self._data.divergences if p == pos)
        return self._data.hover(pos)

    def _zoom(self, event: dict[str, Any]) -> None:
        x_range = _range(event, "xaxis", self._x_range)
        y_range = _range(event, "yaxis", self._y_range)
        if (x_range, y_range) != (self._x_range, self._y_range):
            self.show_range(x_range, y_range)


def timeline_figure(source: RecordSource, key: str | None = None, *, height: int = 380) -> go.Figure:
    """The key timeline as a plain figure with its hover text inside (the static report's; no widget).

    For example::

        figure = ai.widgets.timeline_figure(ai.reconstruct(log, markers=markers), "user-0011")   # a plotly figure
        [trace.name for trace in figure.data], figure.layout.xaxis.title.text
    """
    data = _TimelineData(source, key)
    figure = data.figure(height=height, hover=True)
    figure.add_traces(data.traces(None, None, hover=True)[0])
    return figure


def _range(event: dict[str, Any], axis: str, current: tuple[float, float] | None) -> tuple[float, float] | None:
    if event.get(f"{axis}.autorange"):
        return None
    low, high = event.get(f"{axis}.range[0]"), event.get(f"{axis}.range[1]")
    if low is None and isinstance(event.get(f"{axis}.range"), list) and len(event[f"{axis}.range"]) == 2:
        low, high = event[f"{axis}.range"]
    if isinstance(low, (int, float)) and isinstance(high, (int, float)):
        return (float(min(low, high)), float(max(low, high)))
    return current


class _TimelineData:
    """One key's records as arrays, and the traces of any range of them (records, or counts per bin)."""

    def __init__(self, source: RecordSource, key: str | None) -> None:
        frame = records_of(source)
        if key is None:
            key = most_affected_key(source)
        if "business_key" in frame.columns:
            selected = frame[(frame["business_key"] == key).fillna(False).to_numpy(dtype=bool)]
        else:
            selected = frame.iloc[0:0]
        if selected.empty:
            raise InspectError(f"business key {key!r} has no records here; pick one of log.keys()")
        self.source = source
        self.key = key
        self.frame = selected
        status_col = first_column(selected, "status")
        statuses = selected[status_col].astype("string").fillna("unknown") if status_col else \
            pd.Series("record", index=selected.index, dtype="string")
        self.statuses = statuses.to_numpy(dtype=object)
        # K0 keys and undecodable records carry no seq: they sit on the line y = -1.
        self.seq = selected["seq"].astype("Float64").to_numpy(dtype=float, na_value=-1.0) \
            if "seq" in selected.columns else np.full(len(selected), -1.0)
        self.pos = selected.index.to_numpy(dtype=np.int64)
        present = set(statuses.unique())
        names = [s for s in _STATUS_ORDER if s in present] + sorted(present - set(_STATUS_ORDER))
        self.legend = {name: n for n, name in enumerate(names)}
        self.names = sorted(names, key=lambda s: (s == "live", s not in _DRAW_ORDER,
                                                  _DRAW_ORDER.index(s) if s in _DRAW_ORDER else 0))
        self.divergences = _divergences_of(source, key, selected)

    def figure(self, *, height: int, hover: bool) -> go.Figure:
        figure = go.Figure(layout=go.Layout(height=height, **_LAYOUT))
        if (self.seq < 0).any():
            figure.layout.yaxis.title.text = "seq (−1: none)"
        figure.layout.shapes = _attempt_shapes(self.frame) + _band_shapes(self.frame, self.statuses, self.seq)
        figure.layout.annotations = _attempt_labels(self.frame)
        figure.layout.xaxis.update(integer_axis(self.pos))
        figure.layout.yaxis.update(integer_axis(self.seq))
        return figure

    def hover(self, pos: int) -> str:
        """Escaped hover text of one record, led by the explanation of a divergence at that position."""
        text = str(_hover_texts(self.frame.loc[[pos]])[0])
        marks = [t for p, _, t, _ in self.divergences if p == pos]
        return "<br>".join([*marks, text])

    def count(self, x_range: tuple[float, float] | None, y_range: tuple[float, float] | None) -> int:
        """How many records lie in the range."""
        return int(self._keep(x_range, y_range).sum())

    def _keep(self, x_range: tuple[float, float] | None, y_range: tuple[float, float] | None) -> np.ndarray:
        keep = np.ones(len(self.pos), dtype=bool)
        if x_range is not None:
            keep &= (self.pos >= x_range[0]) & (self.pos <= x_range[1])
        if y_range is not None:
            keep &= (self.seq >= y_range[0]) & (self.seq <= y_range[1])
        return keep

    def traces(self, x_range: tuple[float, float] | None, y_range: tuple[float, float] | None,
               *, hover: bool) -> tuple[list[Any], dict[int, list[str]]]:
        """The traces for a range (records, or counts per status per bin) and each binned trace's hover."""
        keep = self._keep(x_range, y_range)
        binned = int(keep.sum()) > LOD_POINTS
        traces: list[Any] = []
        bins: dict[int, list[str]] = {}
        for name in self.names:
            sel = keep & (self.statuses == name)
            if not sel.any():
                continue
            style = dict(name=plotly_text(name), legendrank=100 + self.legend[name], mode="markers")
            if binned:
                x, y, size, texts, first = _bin(self.pos[sel], self.seq[sel], name, x_range, y_range)
                bins[len(traces)] = texts
                traces.append(go.Scattergl(x=x, y=y, customdata=first, **style,
                                           marker=dict(color=colour_for(name), size=size, line=dict(width=0)),
                                           hovertext=texts if hover else None, hoverinfo="text"))
            else:
                pos = self.pos[sel]
                record_texts = _hover_texts(self.frame.loc[pos]) if hover else None
                traces.append(go.Scattergl(x=pos, y=self.seq[sel], customdata=pos, **style,
                                           marker=dict(color=colour_for(name), size=7, line=dict(width=0)),
                                           hovertext=record_texts, hoverinfo="text"))
        marks = [(p, s, t) for p, s, t, _ in self.divergences
                 if (x_range is None or x_range[0] <= p <= x_range[1])]
        if marks:
            # SVG, so drawn over the WebGL records; a record beneath a ✕ leads its hover with the divergence
            traces.append(go.Scatter(
                x=[p for p, _, _ in marks], y=[s for _, s, _ in marks], mode="markers", name=DIVERGENCE_MARK,
                customdata=[p for p, _, _ in marks], legendrank=200, cliponaxis=False,
                marker=dict(symbol="x", size=14, color=colour("ink"), line=dict(width=1, color=colour("paper"))),
                hovertext=[t for _, _, t in marks] if hover else None, hoverinfo="text"))
        return traces, bins


def _bin(pos: np.ndarray, seq: np.ndarray, name: str, x_range: tuple[float, float] | None,
         y_range: tuple[float, float] | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str], np.ndarray]:
    """One marker per non-empty (position bin, seq bin): at the records' mean, sized by their count.

    Also each bin's hover text and its first record's log position (what a click on the bin shows).
    """
    x0, x1 = x_range if x_range is not None else (float(pos.min()), float(pos.max()))
    y0, y1 = y_range if y_range is not None else (float(seq.min()), float(seq.max()))
    xb = np.clip(((pos - x0) / max(x1 - x0, 1.0) * _X_BINS).astype(np.int64), 0, _X_BINS)
    yb = np.clip(((seq - y0) / max(y1 - y0, 1.0) * _Y_BINS).astype(np.int64), 0, _Y_BINS) \
        if y1 - y0 > _Y_BINS else (seq - y0).astype(np.int64)
    code = xb * (_Y_BINS + 2 + int(max(y1 - y0, 0))) + yb
    order = np.argsort(code, kind="stable")
    code, p, s = code[order], pos[order], seq[order]
    starts = np.flatnonzero(np.r_[True, code[1:] != code[:-1]])
    count = np.diff(np.r_[starts, len(code)])
    x = np.add.reduceat(p.astype(float), starts) / count
    y = np.add.reduceat(s, starts) / count
    p_lo, p_hi = np.minimum.reduceat(p, starts), np.maximum.reduceat(p, starts)
    s_lo, s_hi = np.minimum.reduceat(s, starts), np.maximum.reduceat(s, starts)
    size = np.minimum(4.0 + 2.0 * np.log2(count), 16.0)
    label = plotly_text(name)
    texts = [f"{c:,} {label} {count_words(c, 'record')}<br>pos {a}–{b} · seq {int(c0)}–{int(c1)}"
             for c, a, b, c0, c1 in zip(count.tolist(), p_lo.tolist(), p_hi.tolist(), s_lo.tolist(), s_hi.tolist())]
    return x, y, size, texts, p_lo


def _attempt_starts(frame: pd.DataFrame) -> list[tuple[int, Any]]:
    if "attempt" not in frame.columns or frame.empty:
        return []
    attempt = frame["attempt"]
    changed = (attempt != attempt.shift()).fillna(True).to_numpy(dtype=bool, copy=True)
    changed[0] = False
    return [(int(p), a) for p, a in zip(frame.index[changed], attempt[changed])]


def _attempt_shapes(frame: pd.DataFrame) -> list[dict]:
    return [dict(type="line", xref="x", yref="paper", x0=p - 0.5, x1=p - 0.5, y0=0, y1=1,
                 line=dict(color=colour("muted"), width=1, dash="dash"), layer="below")
            for p, _ in _attempt_starts(frame)]


def _attempt_labels(frame: pd.DataFrame) -> list[dict]:
    # inside the plot's top edge, so the labels never collide with the legend above it
    return [dict(x=p - 0.5, y=1, xref="x", yref="paper", yanchor="top", xanchor="left", showarrow=False,
                 text=f"attempt {escape(a)}", font=dict(size=10, color=colour("muted")),
                 bgcolor=colour("paper"))
            for p, a in _attempt_starts(frame)]


def _band_shapes(frame: pd.DataFrame, statuses: np.ndarray, seq: np.ndarray) -> list[dict]:
    removed = np.isin(statuses, _REMOVED)
    if not removed.any():
        return []
    group = frame["divergence_id"].astype("string").fillna("") if "divergence_id" in frame.columns \
        else pd.Series("", index=frame.index, dtype="string")
    shapes: list[dict] = []
    legend: set[str] = set()
    part = pd.DataFrame({"pos": frame.index[removed], "seq": seq[removed],
                         "group": group.to_numpy()[removed], "status": statuses[removed]})
    for (_, status), rows in part.groupby(["group", "status"], sort=True):
        shapes.append(dict(
            type="rect", xref="x", yref="y", layer="below", line=dict(width=0),
            x0=float(rows["pos"].min()) - 0.5, x1=float(rows["pos"].max()) + 0.5,
            y0=float(rows["seq"].min()) - 0.4, y1=float(rows["seq"].max()) + 0.4,
            fillcolor=colour_for(status), opacity=0.13, name=f"{status} suffix",
            showlegend=status not in legend, legendrank=150))
        legend.add(status)
    return shapes


def _divergences_of(source: Any, key: Any, frame: pd.DataFrame) -> list[tuple[int, float, str, dict[str, str]]]:
    """(position, seq, escaped hover, plain facts) of every divergence point of this key: the record whose
    lookup triggered the rule (each record in conflict when the divergence names no trigger)."""
    if not isinstance(source, ReconstructionLike) or source.divergences.empty:
        return []
    divergences = source.divergences
    key_col = first_column(divergences, "business_key", "key")
    if key_col is None:
        return []
    mine = divergences[(divergences[key_col] == key).fillna(False).to_numpy(dtype=bool)]
    pos_col = first_column(mine, "positions", "pos", "position")
    rule = getattr(source, "rule", None)
    rule_name = None if rule is None else rule_mark(rule, None).name   # with its store flavour, as every verb
    removed = removed_by(source)
    out: list[tuple[int, float, str, dict[str, str]]] = []
    for index, row in mine.iterrows():
        seq = row.get("seq")
        ident = row.get("divergence_id", row.get("id", index))
        trigger = row.get("trigger_pos")
        points = [int(trigger)] if not _missing(trigger) else (_positions(row.get(pos_col)) if pos_col else [])
        title = " · ".join(str(p) for p in (f"divergence #{ident}", row.get("kind"),
                                            f"rule {rule_name}" if rule_name else None, f"seq {seq}") if p)
        facts = {"title": title, "cause": str(row.get("explanation", "") or ""),
                 "removed": removed.get(ident, "" if _missing(row.get("removed")) else
                                        f"{int(row.get('removed'))} cached records")}
        for p in points:
            if p not in frame.index:
                continue
            s = frame.at[p, "seq"] if "seq" in frame.columns else seq
            out.append((int(p), -1.0 if pd.isna(s) else float(s),
                        hover([("✕", title), ("cause", facts["cause"]), ("removed", facts["removed"] or None),
                               ("record", p)]), facts))
    return out


def removed_by(source: Any) -> dict[Any, str]:
    """Divergence id → what its removals took, grouped by round: "seq 1 ×5, seq 2 ×6 (11 records)"."""
    evictions = getattr(source, "evictions", None)
    records = records_of(source)
    if not isinstance(evictions, pd.DataFrame) or evictions.empty or "divergence_id" not in evictions.columns \
            or "positions" not in evictions.columns or "seq" not in records.columns:
        return {}
    out: dict[Any, str] = {}
    for ident, rows in evictions.groupby("divergence_id", sort=False):
        positions = [p for ps in rows["positions"] for p in _positions(ps)]
        counts = records["seq"].reindex(positions).dropna().astype(int).value_counts().sort_index()
        out[ident] = _seq_runs(counts) + f" ({len(positions):,} {count_words(len(positions), 'record')})"
    return out


def _seq_runs(counts: pd.Series, *, limit: int = 8) -> str:
    """Records per round in words, three or more consecutive rounds with the same count as one run ("seq 3–9 ×2
    each"), at most ``limit`` items: a removal of thousands of rounds stays one line (a hover that listed each
    froze the page)."""
    runs: list[list[int]] = []      # [first seq, last seq, records per seq]
    for seq, n in counts.items():
        if runs and runs[-1][1] == seq - 1 and runs[-1][2] == n:
            runs[-1][1] = int(seq)
        else:
            runs.append([int(seq), int(seq), int(n)])
    runs = [r for a, b, n in runs for r in ([[a, b, n]] if b - a >= 2 else [[s, s, n] for s in range(a, b + 1)])]
    words = [f"seq {a} ×{n}" if a == b else f"seq {a}–{b} ×{n} each" for a, b, n in runs[:limit]]
    if len(runs) > limit:
        words.append(f"… {len(runs) - limit:,} more")
    return ", ".join(words)


def _missing(value: Any) -> bool:
    try:
        return value is None or bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _positions(value: Any) -> list[int]:
    if value is None:
        return []
    if isinstance(value, (int, np.integer)):
        return [int(value)]
    try:
        return [int(v) for v in value if v is not None and not pd.isna(v)]
    except TypeError:
        return []


def _hover_texts(frame: pd.DataFrame) -> np.ndarray:
    """Escaped hover text per record: position and seq on the first line, then the record's fields."""
    first = np.array([f"pos {p}" for p in frame.index], dtype=object)
    if "seq" in frame.columns:
        first = first + frame_hover(frame, [("seq", "seq")], sep=" · ")
    texts: np.ndarray = first + frame_hover(frame, list(_HOVER_COLUMNS))
    return texts
