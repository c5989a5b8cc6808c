"""Verification view: per key, each task's prediction beside what the Trace Log shows; click for the joined records."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ipywidgets as w
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from agent_inspect._controls import show_controls
from agent_inspect._glossary import count_words, define, plural
from agent_inspect._html import escape, frame_html, plotly_text
from agent_inspect._types import VerificationLike
from agent_inspect.store import Outcome
from agent_inspect.widgets._common import hover, integer_axis, message_html
from agent_inspect.widgets._plot import Plot
from agent_inspect.widgets._style import View, colour, view_style

__all__ = ["VerificationView"]

_AGREE, _DISAGREE, _UNDETERMINED = colour("good"), colour("bad"), colour("warn")
_SHAPE, _EDGE = colour("muted"), colour("ink")
# a key row wider than this many tasks gets no "observed" labels (they would overlap): hover shows them
_LABELLED_TASKS = 12
_SYMBOLS: dict[str, str] = {Outcome.REUSE: "circle", Outcome.RESUME: "diamond", Outcome.RERUN: "square", Outcome.FAIL: "x",
            Outcome.NOT_DISPATCHED: "circle-open"}
_TRACE_COLUMNS = ["line", "timestamp", "entity_type", "entity_name", "status", "execution_id", "parent_execution_id",
                  "event_id", "trigger_event_id", "producer_execution_id", "error_message"]
_RECORD_COLUMNS = ["partition", "offset", "business_key", "seq", "task_event_type", "task_event_id", "completed",
                   "call_count", "output_event_ids", "state_key"]


def _ranking_html(ranking: Any) -> str:
    """The best-explaining configuration, or every configuration tied for best (a tie is not a winner)."""
    if not isinstance(ranking, pd.DataFrame) or ranking.empty:
        return ""
    top = ranking.iloc[0]
    tied = ranking[(ranking["disagree"] == top["disagree"]) & (ranking["agree"] == top["agree"])]
    names = ", ".join(f"<code>{escape(n)}</code>" for n in tied["name"])
    agree, unsure = int(top["agree"]), int(top.get("undetermined", 0))
    score = f"{agree} of {plural(int(top['tasks']), 'task')} {'agrees' if agree == 1 else 'agree'}" + \
        (f", {unsure} undetermined" if unsure else "")
    if len(tied) > 1:
        return (f' <span class="ai-ranking-tie" title="{escape(define("tied"))}">{len(tied)} configurations tie '
                f"as the best explanation ({score}): {names}.</span>")
    return f' <span class="ai-ranking-best">Best explained by {names} ({score}).</span>'


class VerificationView(View):
    """A :class:`~agent_inspect.trace.Verification`: agree / disagree per key in dispatch order.

    Top: the summary (and the best-explaining rule when something disagrees). Middle: one row per key,
    one marker per task — its shape is the predicted outcome, its colour whether the trace agrees;
    a lane above each key shows the outcome the trace observed. Click a marker (or pick a task from
    the list) to see the task, the trace records of its execution and the action-state records it is
    joined to.

    For example::

        v = ai.verify(log, ai.load_trace("sample_logs/production.trace.log"), markers=markers)
        ai.widgets.VerificationView(v)                  # or ai.inspect(v)
    """

    def __init__(self, verification: VerificationLike, *, max_rows: int = 400) -> None:
        super().__init__()
        self.add_class("ai-verification")
        self.verification = verification
        self.tasks = verification.tasks.reset_index(drop=True)
        self.max_rows = int(max_rows)
        self.summary = w.HTML(self._summary_html())
        self.summary.add_class("ai-verification-summary")
        self.figure = Plot(layout=go.Layout(
            height=max(220, 60 + 46 * max(1, self.tasks["key"].nunique() if len(self.tasks) else 1)),
            margin=dict(l=110, r=10, t=30, b=40), showlegend=True, hovermode="closest",
            xaxis=dict(title="task (dispatch order within the key)", tickformat="d"),
            yaxis=dict(title="key", automargin=True),
            legend=dict(groupclick="toggleitem"),
            title=dict(text="shape: predicted outcome · colour: does the trace agree", font=dict(size=13))))
        self.figure.add_class("ai-verification-timeline")
        self.only_disagree = w.Checkbox(description="disagreements only", value=False, indent=False,
                                        tooltip="list only the tasks whose observed outcome is not the predicted one")
        self.only_disagree.add_class("ai-verification-filter")
        self.rows = w.Select(options=[], rows=8, layout=w.Layout(width="100%"))
        self.rows.add_class("ai-verification-rows")
        self.empty = w.HTML()
        self.empty.add_class("ai-verification-empty")
        self.detail = w.HTML(message_html("click a task on the chart, or pick one from the list"))
        self.detail.add_class("ai-verification-detail")
        self.selected: int | None = None
        self._draw()
        self._fill_rows()
        self.only_disagree.observe(lambda _: self._fill_rows(), names="value")
        self.rows.observe(self._on_pick, names="value")
        self.children = [self.summary, self.figure, self.only_disagree, self.empty, self.rows, self.detail,
                         view_style()]

    # -- drawing ----------------------------------------------------------------------------------
    def _summary_html(self) -> str:
        v = self.verification
        if self.tasks.empty:
            return message_html("nothing to check: no predicted task and no traced action execution")
        agree = bool(v.agree)
        text = v.summary_text()
        verdict = str(getattr(v, "verdict", "agree" if agree else "disagree"))
        mark = {"agree": '<b class="ai-agree">agrees</b>',
                "undetermined": '<b class="ai-undetermined">cannot tell (undetermined)</b>'}.get(
                    verdict, '<b class="ai-disagree">disagrees</b>')
        headline = getattr(v, "headline", None)
        if verdict == "agree" and callable(headline) and headline() != "agrees":
            mark = f'<b class="ai-agree-partly">{escape(headline())}</b>'   # tasks agree, other checks do not
        notes = "".join(f"<li>{escape(n)}</li>" for n in v.notes)
        rank = "" if agree else _ranking_html(getattr(v, "ranking", None))
        tokens = getattr(v, "tokens", None)
        spent = (f'<div class="ai-verification-tokens">tokens: {escape(tokens.headline())}</div>'
                 if tokens is not None else "")
        return (f'<div class="ai-title">checked against the trace — {mark}: {escape(text)}.{rank}</div>'
                + spent + (f"<ul>{notes}</ul>" if notes else ""))

    def _positions(self) -> np.ndarray:
        """Each task's place within its key (dispatch order; traced-only executions after the key's tasks)."""
        positions: np.ndarray = self.tasks.groupby("key", sort=False).cumcount().to_numpy()
        return positions

    def _draw(self) -> None:
        if self.tasks.empty:
            return
        t = self.tasks
        x = self._positions()
        keys = [str(k) for k in t["key"]]
        agree = t["agree"].to_numpy(dtype=bool)
        unsure = (t["verdict"] == "undetermined").to_numpy(dtype=bool) if "verdict" in t else np.zeros(len(t), bool)
        predicted = t["predicted"].astype(object).where(t["predicted"].notna(), "—")
        text = np.array([hover([("key", k), ("seq", s), ("action", a), ("predicted", p), ("observed", o),
                                ("joined by", j), ("cause", c)])
                         for k, s, a, p, o, j, c in zip(keys, t["seq"], t["action"], predicted, t["observed"],
                                                        t["join"], t["cause"])], dtype=object)
        symbols = np.array([_SYMBOLS.get(str(p), "star") for p in predicted], dtype=object)
        with self.figure.batch_update():
            for name, mask, colour in (("agree", agree, _AGREE), ("disagree", ~agree & ~unsure, _DISAGREE),
                                       ("undetermined", ~agree & unsure, _UNDETERMINED)):
                if not mask.any():
                    continue
                self.figure.add_trace(go.Scatter(
                    x=x[mask], y=[plotly_text(k) for k, m in zip(keys, mask) if m], mode="markers", name=name,
                    marker=dict(color=colour, size=14, symbol=list(symbols[mask]), line=dict(width=1, color=_EDGE)),
                    customdata=np.flatnonzero(mask), hoverinfo="text", hovertext=list(text[mask]),
                    legendgroup="verdict", legendgrouptitle_text="colour"))
            # what the trace observed, under each disagreeing task (every task's is on hover); only while the
            # tasks are far enough apart for a label each: otherwise the labels overlap into a smear
            if (~agree).any() and int(x.max()) < _LABELLED_TASKS:
                self.figure.layout.annotations = [
                    dict(x=int(p), y=plotly_text(k), text=f"observed {plotly_text(o)}", showarrow=False, yshift=-17,
                         font=dict(size=10))
                    for p, k, o in zip(x[~agree], np.array(keys, dtype=object)[~agree], t["observed"][~agree])][:60]
            # what each shape means: legend entries without points
            for outcome in dict.fromkeys(str(p) for p in predicted):
                self.figure.add_trace(go.Scatter(
                    x=[None], y=[None], mode="markers", name=f"predicted {outcome}", hoverinfo="skip",
                    marker=dict(symbol=_SYMBOLS.get(outcome, "star"), size=11, color=_SHAPE, line=dict(width=1, color=_EDGE)),
                    legendgroup="shape", legendgrouptitle_text="shape", customdata=[-1]))
            self.figure.layout.yaxis.type = "category"
            self.figure.layout.xaxis.update(integer_axis(x))
            self.figure.layout.xaxis.update(range=[-0.6, float(x.max()) + 0.6], autorange=False)
        for trace in self.figure.data:
            trace.on_click(self._on_click)

    def _label(self, i: int) -> str:
        r = self.tasks.iloc[i]
        seq = "" if pd.isna(r["seq"]) else f", seq {int(r['seq'])}"
        pred = r["predicted"] if isinstance(r["predicted"], str) else "—"
        tick = "✓" if bool(r["agree"]) else "✗"
        return show_controls(f"{tick} {r['action']} ({r['key']}{seq}): predicted {pred}, observed {r['observed']}")

    def _fill_rows(self) -> None:
        idx: Sequence[int] = range(len(self.tasks))
        if self.only_disagree.value:
            idx = [i for i in idx if not bool(self.tasks.iloc[i]["agree"])]
        self.rows.options = [(self._label(i), i) for i in list(idx)[: self.max_rows]]
        if self.only_disagree.value and not idx:
            self.empty.value = message_html(f"no disagreement: all {len(self.tasks):,} {count_words(len(self.tasks), 'task')} "
                                            "agree with the trace")
        elif not len(self.tasks):
            self.empty.value = message_html("no task to list")
        else:
            self.empty.value = ""
        self.rows.layout.display = "none" if not idx else None

    # -- selection -------------------------------------------------------------------------------
    def _on_click(self, trace: Any, points: Any, _state: Any = None) -> None:
        indices = list(getattr(points, "point_inds", []) or [])
        if indices and trace.customdata is not None:
            self.select(int(np.asarray(trace.customdata)[indices[0]]))

    def _on_pick(self, change: Any) -> None:
        if change.get("new") is not None and change["new"] != self.selected:
            self.select(int(change["new"]))

    def select(self, i: int) -> None:
        """Show task row ``i`` (position in ``verification.tasks``): the row, its trace records, its records."""
        if not 0 <= i < len(self.tasks):
            return
        self.selected = i
        if self.rows.value != i and any(v == i for _, v in self.rows.options):
            self.rows.value = i
        self.detail.value = self._detail_html(i)

    def _detail_html(self, i: int) -> str:
        v = self.verification
        r = self.tasks.iloc[i]
        verdict = "agrees" if bool(r["agree"]) else f"disagrees — {r['cause']}"
        if r.get("verdict") == "undetermined":
            verdict = f"cannot tell (undetermined) — {r['cause']}"
        parts = [f'<div class="ai-verification-verdict"><b>{escape(r["key"])} {escape(r["action"])}</b>: '
                 f"predicted <b>{escape(r['predicted'] if isinstance(r['predicted'], str) else '—')}</b>, "
                 f"observed <b>{escape(r['observed'])}</b> ({escape(verdict)})</div>"]
        if isinstance(r["explanation"], str):
            parts.append(f'<p class="ai-verification-explanation">{escape(r["explanation"])}</p>')
        parts.append(f"<p>joined by {escape(r['join'])}"
                     + (f" (confidence {escape(r['confidence'])})" if isinstance(r["confidence"], str) else "")
                     + "</p>")
        row_cols = [c for c in ("key", "seq", "input", "action", "predicted", "observed", "execution_id",
                                "trigger_event_id", "event_id", "entry_pos", "calls_executed_predicted",
                                "calls_executed_observed", "calls_replayed_observed") if c in self.tasks.columns]
        parts.append(frame_html(self.tasks.iloc[[i]][row_cols], caption="the task"))
        tokens = getattr(v, "tokens", None)
        cost = tokens.for_task(r["key"], r["seq"], r["action"]) if tokens is not None and pd.notna(r["seq"]) else None
        if cost is not None:
            parts.append('<p class="ai-verification-cost">LLM tokens run again: predicted '
                         f"{escape(cost.get('input_tokens_predicted'))} in / {escape(cost.get('output_tokens_predicted'))} "
                         f"out, observed {escape(cost.get('input_tokens_observed'))} in / "
                         f"{escape(cost.get('output_tokens_observed'))} out</p>")
        trace = getattr(v, "trace", None)
        eid = r["execution_id"]
        if trace is not None and isinstance(eid, str):
            recs = trace.records
            mine = recs[(recs["execution_id"] == eid) | (recs["parent_execution_id"] == eid)
                        | (recs["producer_execution_id"] == eid)]
            cols = [c for c in _TRACE_COLUMNS if c in recs.columns]
            parts.append(f'<div class="ai-verification-trace">{frame_html(mine[cols], max_rows=40, caption="trace records of this execution")}</div>')
        else:
            parts.append(message_html("the trace has no execution for this task"))
        parts.append(self._records_html(r))
        return "".join(parts)

    def _records_html(self, r: Any) -> str:
        v = self.verification
        log = getattr(v, "log", None)
        joined = getattr(v, "joined", None)
        positions: list[int] = []
        if joined is not None and isinstance(r["execution_id"], str):
            hit = joined[(joined["execution_id"] == r["execution_id"]) & (joined["entity_type"] == "action")]
            for ps in hit["positions"]:
                positions += [int(p) for p in ps]
        if not positions and not pd.isna(r["entry_pos"]):
            positions = [int(r["entry_pos"])]
        if log is None or not positions:
            return message_html("no action-state record is joined to this task")
        recs = log.records.loc[[p for p in positions if p in log.records.index]]
        cols = [c for c in _RECORD_COLUMNS if c in recs.columns]
        return (f'<div class="ai-verification-records">'
                f'{frame_html(recs[cols], max_rows=20, caption="action-state records joined to it")}</div>')
