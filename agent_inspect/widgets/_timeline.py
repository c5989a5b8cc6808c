"""Key timeline: log position against seq for one business key, coloured by status."""

from __future__ import annotations

from typing import Any

import ipywidgets as w
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from agent_inspect._errors import InspectError
from agent_inspect._html import escape, plotly_text
from agent_inspect._types import ReconstructionLike
from agent_inspect.widgets._common import (
    colour_for,
    decoded_value,
    first_column,
    frame_hover,
    hover,
    integer_axis,
    message_html,
    records_of,
    value_html,
)
from agent_inspect.widgets._plot import Plot

__all__ = ["KeyTimeline", "most_affected_key"]

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
        if removed.any():
            return keys[removed].value_counts(sort=True).index[0]
    return keys.value_counts(sort=True).index[0]


class KeyTimeline(w.VBox):
    """Every record of one business key: x = log position, y = seq, colour = status.

    Attempts are separated by dashed lines, the records a recovery evicted or invalidated are drawn
    inside a shaded band per divergence, and divergence points are ringed with an open ◇. Click a point
    to see the record's decoded value below the chart.
    """

    def __init__(self, source: Any, key: Any = None, *, height: int = 380) -> None:
        super().__init__()
        self.add_class("ai-timeline")
        self._source = source
        frame = records_of(source)
        if key is None:
            key = most_affected_key(source)
        if "business_key" in frame.columns:
            selected = frame[(frame["business_key"] == key).fillna(False).to_numpy(dtype=bool)]
        else:
            selected = frame.iloc[0:0]
        if selected.empty:
            raise InspectError(f"business key {key!r} has no records here; pick one of log.keys()")
        self.key = key
        self.records = selected
        self.selected_pos: int | None = None

        self.title = w.HTML(f'<div class="ai-title">timeline of key <code>{escape(key)}</code> · '
                            f"{len(selected):,} records</div>")
        self.detail = w.HTML(message_html("click a point to see its decoded value"))
        self.detail.add_class("ai-detail")
        self.figure = Plot(layout=go.Layout(
            height=height, margin=dict(l=50, r=10, t=30, b=40), hovermode="closest",
            xaxis=dict(title="log position"), yaxis=dict(title="seq"),
            legend=dict(orientation="h", y=1.02, yanchor="bottom")))
        self.figure.add_class("ai-timeline-figure")
        self._draw()
        self.children = [self.title, self.figure, self.detail]

    def select(self, pos: int) -> None:
        """Show the decoded value of the record at log position ``pos`` (as a click would)."""
        pos = int(pos)
        self.selected_pos = pos
        row = self.records.loc[pos] if pos in self.records.index else None
        state_key = "" if row is None else row.get("state_key", "")
        self.detail.value = value_html(f"record {pos}: {state_key}", decoded_value(self._source, pos))

    # -- drawing ----------------------------------------------------------------------------------

    def _draw(self) -> None:
        frame = self.records
        status_col = first_column(frame, "status")
        statuses = frame[status_col].astype("string").fillna("unknown") if status_col else \
            pd.Series("record", index=frame.index, dtype="string")
        text = _hover_texts(frame)
        # K0 keys and undecodable records carry no seq: they sit on the line y = -1.
        seq = frame["seq"].astype("Float64").to_numpy(dtype=float, na_value=-1.0) if "seq" in frame.columns \
            else np.full(len(frame), -1.0)
        if (seq < 0).any():
            self.figure.layout.yaxis.title.text = "seq (−1: none)"
        pos = frame.index.to_numpy()
        names = [s for s in _STATUS_ORDER if (statuses == s).any()]
        names += sorted(set(statuses.unique()) - set(names))
        traces = []
        for name in names:
            sel = (statuses == name).to_numpy(dtype=bool)
            traces.append(go.Scattergl(
                x=pos[sel], y=seq[sel], mode="markers", name=plotly_text(name), customdata=pos[sel],
                marker=dict(color=colour_for(name), size=7, line=dict(width=0)),
                hovertext=text[sel], hoverinfo="text"))
        traces.extend(self._divergence_traces(frame))
        with self.figure.batch_update():
            for trace in traces:
                self.figure.add_trace(trace)
            self.figure.layout.shapes = self._attempt_shapes(frame) + self._band_shapes(frame, statuses, seq)
            self.figure.layout.xaxis.update(integer_axis(pos))
            self.figure.layout.yaxis.update(integer_axis(seq))
            self.figure.layout.annotations = self._attempt_labels(frame)
        for trace in self.figure.data:
            trace.on_click(self._on_click)

    def _on_click(self, trace: Any, points: Any, _state: Any = None) -> None:
        indices = list(getattr(points, "point_inds", []) or [])
        if indices and trace.customdata is not None:
            self.select(int(np.asarray(trace.customdata)[indices[0]]))

    @staticmethod
    def _attempt_starts(frame: pd.DataFrame) -> list[tuple[int, Any]]:
        if "attempt" not in frame.columns or frame.empty:
            return []
        attempt = frame["attempt"]
        changed = (attempt != attempt.shift()).fillna(True).to_numpy(dtype=bool, copy=True)
        changed[0] = False
        return [(int(p), a) for p, a in zip(frame.index[changed], attempt[changed])]

    def _attempt_shapes(self, frame: pd.DataFrame) -> list[dict]:
        return [dict(type="line", xref="x", yref="paper", x0=p - 0.5, x1=p - 0.5, y0=0, y1=1,
                     line=dict(color="#555", width=1, dash="dash"), layer="below")
                for p, _ in self._attempt_starts(frame)]

    def _attempt_labels(self, frame: pd.DataFrame) -> list[dict]:
        # inside the plot's top edge, so the labels never collide with the legend above it
        return [dict(x=p - 0.5, y=1, xref="x", yref="paper", yanchor="top", xanchor="left", showarrow=False,
                     text=f"attempt {escape(a)}", font=dict(size=10, color="#555"),
                     bgcolor="rgba(255,255,255,0.7)")
                for p, a in self._attempt_starts(frame)]

    @staticmethod
    def _band_shapes(frame: pd.DataFrame, statuses: pd.Series, seq: np.ndarray) -> list[dict]:
        removed = statuses.isin(_REMOVED).to_numpy(dtype=bool)
        if not removed.any():
            return []
        group = frame["divergence_id"].astype("string").fillna("") if "divergence_id" in frame.columns \
            else pd.Series("", index=frame.index, dtype="string")
        shapes = []
        part = pd.DataFrame({"pos": frame.index[removed], "seq": seq[removed],
                             "group": group.to_numpy()[removed], "status": statuses.to_numpy()[removed]})
        for (_, status), rows in part.groupby(["group", "status"], sort=True):
            shapes.append(dict(
                type="rect", xref="x", yref="y", layer="below", line=dict(width=0),
                x0=float(rows["pos"].min()) - 0.5, x1=float(rows["pos"].max()) + 0.5,
                y0=float(rows["seq"].min()) - 0.4, y1=float(rows["seq"].max()) + 0.4,
                fillcolor=colour_for(status), opacity=0.13, name=f"{status} suffix"))
        return shapes

    def _divergence_traces(self, frame: pd.DataFrame) -> list[go.Scattergl]:
        if not isinstance(self._source, ReconstructionLike) or self._source.divergences.empty:
            return []
        divergences = self._source.divergences
        key_col = first_column(divergences, "business_key", "key")
        if key_col is None:
            return []
        mine = divergences[(divergences[key_col] == self.key).fillna(False).to_numpy(dtype=bool)]
        xs: list[int] = []
        ys: list[float] = []
        texts: list[str] = []
        pos_col = first_column(mine, "positions", "pos", "position")
        for _, row in mine.iterrows():
            positions = _positions(row.get(pos_col)) if pos_col else []
            seq = row.get("seq")
            explanation = row.get("explanation", "")
            for p in positions or []:
                if p not in frame.index:
                    continue
                xs.append(int(p))
                s = frame.at[p, "seq"] if "seq" in frame.columns else seq
                ys.append(-1.0 if pd.isna(s) else float(s))
                texts.append(hover([("divergence", row.get("divergence_id", row.get("id", row.name))),
                                    ("kind", row.get("kind")), ("seq", seq), ("record", p),
                                    ("explanation", explanation)]))
        if not xs:
            return []
        return [go.Scattergl(x=xs, y=ys, mode="markers", name="divergence", customdata=xs,
                             marker=dict(symbol="diamond-open", size=15, color="#000", line=dict(width=2)),
                             hovertext=texts, hoverinfo="text")]


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
    return first + frame_hover(frame, list(_HOVER_COLUMNS))
