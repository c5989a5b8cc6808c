"""DiffView: two aligned timelines, a round-level graph diff and a field diff panel."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as w
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from agent_inspect._errors import InspectError
from agent_inspect._glossary import plural, split_spec
from agent_inspect._html import escape, plotly_text
from agent_inspect.history import action_label, layered_layout
from agent_inspect.widgets._common import hover, message_html
from agent_inspect.widgets._explain import ExplainView
from agent_inspect.widgets._plot import Plot
from agent_inspect.widgets._style import PALETTE, View, choices

if TYPE_CHECKING:
    from agent_inspect.diffing import Diff

__all__ = ["DiffView", "DIFF_COLOURS"]

#: Colours of the pair statuses (nodes and timeline marks).
DIFF_COLOURS = {"same": PALETTE["good"].light, "changed": PALETTE["warn"].light, "only in a": PALETTE["bad"].light,
                "only in b": PALETTE["info"].light}
_EDGE_LINE, _OUTLINE = PALETTE["muted"].light, PALETTE["ink"].light
_MAX_ROWS = 200


class DiffView(View):
    """A :class:`~agent_inspect.diffing.Diff`: per key, side a and side b as two aligned timelines with a
    changed/only-in band (``.ai-diff-timeline``), the selected round as one graph with nodes coloured
    same / changed / only in a / only in b (``.ai-diff-graph``), and the field diff of the pairs with the
    key's first divergence highlighted (``.ai-diff-fields``, row ``.ai-first-divergence``). Clicking a
    mark selects its pair; "Explain" (``.ai-diff-explain-button``) shows why side b reused or reran it.

    For example::

        d = ai.diff(ai.diffing.attempt(log, "user-0011", 1), ai.diffing.attempt(log, "user-0011", 2))
        ai.widgets.DiffView(d, key="user-0011")        # or ai.inspect(d)
    """

    def __init__(self, diff: Diff, *, key: str | None = None) -> None:
        super().__init__()
        self.add_class("ai-diff")
        self.diff = diff
        pairs = diff.pairs
        self.names = diff.action_names
        c = diff.counts()
        self.summary = w.HTML(
            f"<div class='ai-title ai-diff-summary'>a = <code>{escape(diff.a.label)}</code> · b = "
            f"<code>{escape(diff.b.label)}</code> — " + ", ".join(
                f"<span class='ai-diff-count' data-status='{escape(s)}'>{escape(s)} {int(n)}</span>"
                for s, n in c.items()) + "</div>")
        keys = list(diff.keys()) + sorted({str(k) for k in pairs["business_key"].dropna()} - set(diff.keys()))
        self.key_picker = w.Dropdown(description="Key", options=choices(keys), layout=w.Layout(width="420px"),
                                     value=str(key) if key is not None and str(key) in keys else (keys[0] if keys else None))
        self.seq_picker = w.Dropdown(description="Round", options=[], layout=w.Layout(width="200px"))
        self.timeline = Plot(layout=go.Layout(
            height=220, margin=dict(l=60, r=10, t=30, b=40), showlegend=True, hovermode="closest",
            yaxis=dict(tickvals=[2, 1, 0], ticktext=["a", "diff", "b"], range=[-0.6, 2.6]),
            xaxis=dict(title="action executions, in round order"), title=dict(text="aligned timelines",
                                                                                font=dict(size=13))))
        self.timeline_box = w.VBox([self.timeline])
        self.timeline_box.add_class("ai-diff-timeline")
        self.graph_figure = Plot(layout=go.Layout(
            height=320, margin=dict(l=10, r=10, t=30, b=10), showlegend=True, hovermode="closest",
            xaxis=dict(visible=False), yaxis=dict(visible=False), title=dict(text="round graph diff",
                                                                              font=dict(size=13))))
        self.graph_box = w.VBox([self.graph_figure])
        self.graph_box.add_class("ai-diff-graph")
        self.fields = w.HTML()
        self.fields.add_class("ai-diff-fields")
        self.explain_button = w.Button(description="Explain (side b)", tooltip="why side b reused or reran this")
        self.explain_button.add_class("ai-diff-explain-button")
        self.explain_button.on_click(lambda _: self.explain_selected())
        self.explain_box = w.VBox()
        self.explain_box.add_class("ai-diff-explain")
        self.selected: int | None = None
        self._changing_key = False
        self._rows = pairs.iloc[0:0]
        self.key_picker.observe(lambda _: self._key_changed(), names="value")
        self.seq_picker.observe(lambda _: self._round_changed(), names="value")
        self.children = [self.summary, w.HBox([self.key_picker, self.seq_picker]), self.timeline_box,
                         self.graph_box, w.HBox([self.explain_button]), self.fields, self.explain_box]
        self._key_changed()

    # -- key and round --------------------------------------------------------------------------------

    def _key_changed(self) -> None:
        key = self.key_picker.value
        self._rows = self.diff.for_key(key) if key is not None else self.diff.pairs.iloc[0:0]
        seqs = sorted({int(s) for s in self._rows["seq"].dropna()})
        first = self.diff.first_divergence(key) if key is not None else None
        self.selected = None
        if first is not None:
            hit = self._rows[(self._rows["status"] != "same")]
            self.selected = int(hit.index[0]) if len(hit) else None
        self._changing_key = True
        try:
            self.seq_picker.options = seqs
            if seqs:
                self.seq_picker.value = int(first["seq"]) if first is not None else seqs[0]
        finally:
            self._changing_key = False
        self._draw_timeline()
        self._draw_graph()
        self._show_fields()

    def _round_changed(self) -> None:
        if self._changing_key:
            return
        self._draw_graph()
        self._show_fields()

    def action_name(self, action: object) -> str:
        """The name shown for ``action`` (a name, or a UUID the sides' logs or the K2 name UUIDs name)."""
        return action_label(action, self.names)

    def select(self, pair: int) -> None:
        """Select pair ``pair`` (a row label of ``diff.pairs``): its round and its field diff."""
        if pair not in self.diff.pairs.index:
            raise InspectError(f"no pair {pair} in this diff")
        row = self.diff.pairs.loc[pair]
        if str(row["business_key"]) != str(self.key_picker.value):
            self.key_picker.value = str(row["business_key"])
        self.selected = int(pair)
        if not pd.isna(row["seq"]) and int(row["seq"]) != self.seq_picker.value:
            self.seq_picker.value = int(row["seq"])
        self._show_fields()

    def explain_selected(self) -> ExplainView | None:
        """Explain the selected pair on side b (when side b is a recovery that can say why)."""
        if self.selected is None:
            self.explain_box.children = [w.HTML(message_html("select a pair first"))]
            return None
        row = self.diff.pairs.loc[self.selected]
        action = row["action_b"] if row["action_b"] is not None else row["action_a"]
        name = self.names.get(str(action), str(action))   # explain names tasks by action name
        try:
            why = self.diff.explain(row["business_key"], int(row["seq"]), name)
        except InspectError as exc:
            self.explain_box.children = [w.HTML(message_html(str(exc), level="warning"))]
            return None
        view = ExplainView(why, log=self.diff.b.log)
        self.explain_box.children = [view]
        return view

    # -- drawing ----------------------------------------------------------------------------------------

    def _draw_timeline(self) -> None:
        rows = self._rows
        x = np.arange(len(rows))
        traces = []
        for status, colour in DIFF_COLOURS.items():
            sel = (rows["status"] == status).to_numpy(dtype=bool)
            if not sel.any():
                continue
            sub, xs = rows[sel], x[sel]
            tips = [hover([("key", r.business_key), ("round", r.seq),
                           ("action", self.action_name(r.action_a or r.action_b)),
                           ("action id", r.action_a or r.action_b),
                           ("event", r.event_type), ("status", status), ("changes", len(r.changes))])
                    for r in sub.itertuples()]
            ids = sub.index.to_numpy()
            has_a = sub["a"].notna().to_numpy(dtype=bool)
            has_b = sub["b"].notna().to_numpy(dtype=bool)
            band = status != "same"
            ys = np.concatenate([np.full(has_a.sum(), 2.0), np.full(has_b.sum(), 0.0),
                                 np.full(len(sub) if band else 0, 1.0)])
            xx = np.concatenate([xs[has_a], xs[has_b], xs if band else xs[:0]])
            cd = np.concatenate([ids[has_a], ids[has_b], ids if band else ids[:0]])
            tt = [tips[i] for i in np.flatnonzero(has_a)] + [tips[i] for i in np.flatnonzero(has_b)] + (
                tips if band else [])
            traces.append(go.Scatter(x=xx, y=ys, mode="markers", name=plotly_text(status), customdata=cd,
                                     marker=dict(color=colour, size=11, symbol="square"),
                                     hovertext=np.array(tt, dtype=object), hoverinfo="text"))
        with self.timeline.batch_update():
            self.timeline.data = []
            for t in traces:
                self.timeline.add_trace(t)
        for trace in self.timeline.data:
            trace.on_click(self._on_click)

    def _draw_graph(self) -> None:
        key, seq = self.key_picker.value, self.seq_picker.value
        with self.graph_figure.batch_update():
            self.graph_figure.data = []
            if key is None or seq is None:
                return
            g = self.diff.graph(key, int(seq))
            xy = layered_layout(g)
            ex, ey = [], []
            for u, v in g.edges:
                ex += [xy[u][0], xy[v][0], None]
                ey += [xy[u][1], xy[v][1], None]
            self.graph_figure.add_trace(go.Scatter(x=ex, y=ey, mode="lines", name="edges", hoverinfo="skip",
                                                   line=dict(color=_EDGE_LINE, width=1)))
            for status, colour in DIFF_COLOURS.items():
                nodes = [n for n in g if g.nodes[n]["status"] == status]
                if not nodes:
                    continue
                self.graph_figure.add_trace(go.Scatter(
                    x=[xy[n][0] for n in nodes], y=[xy[n][1] for n in nodes], mode="markers+text",
                    name=plotly_text(status), customdata=nodes, textposition="bottom center", textfont=dict(size=9),
                    text=[plotly_text(_short(self.action_name(g.nodes[n]["action"]))) for n in nodes],
                    marker=dict(color=colour, size=14, line=dict(color=_OUTLINE, width=0.5)),
                    hovertext=[hover([("action", self.action_name(g.nodes[n]["action"])),
                                      ("action id", g.nodes[n]["action"]), ("event", g.nodes[n]["event_type"]),
                                      ("status", status), ("record a", g.nodes[n]["pos_a"]),
                                      ("record b", g.nodes[n]["pos_b"]), ("changes", g.nodes[n]["changes"])])
                               for n in nodes], hoverinfo="text"))
        for trace in self.graph_figure.data[1:]:
            trace.on_click(self._on_click)

    def _on_click(self, trace: Any, points: Any, _state: Any = None) -> None:
        idx = getattr(points, "point_inds", [])
        if idx:
            self.select(int(trace.customdata[idx[0]]))

    def _show_fields(self) -> None:
        rows = self._rows
        if rows.empty:
            self.fields.value = message_html("no pairs")
            return
        seq = self.seq_picker.value
        first = self.diff.first_divergence(self.key_picker.value)
        first_idx = rows.index[rows["status"] != "same"][0] if first is not None else None
        head = ""
        if first is not None:
            why, refs = split_spec(str(first["why"]))
            action = first["action_uuid"] or first["action"]
            head = ("<div class='ai-first-divergence-summary'><b>first divergence</b> at round "
                    f"{escape(first['seq'])}, {_named(self.action_name(action), action)}, "
                    f"<code>{escape(first['where'])}</code>: expected (a) <code>{escape(first['expected'])}</code>, "
                    f"actual (b) <code>{escape(first['actual'])}</code> — {escape(why)}</div>"
                    + (f"<div class='ai-details'>details: {escape(refs)}</div>" if refs else ""))
        here = rows if seq is None else rows[(rows["seq"] == int(seq)).fillna(False).to_numpy(dtype=bool)]
        body = []
        shown = here[here["status"] != "same"].head(_MAX_ROWS)
        if self.selected is not None and self.selected in here.index and self.selected not in shown.index:
            shown = pd.concat([here.loc[[self.selected]], shown])
        for n, r in shown.iterrows():
            cls = []
            if n == first_idx:
                cls.append("ai-first-divergence")
            if n == self.selected:
                cls.append("ai-selected")
            changes = "".join(f"<tr><td><code>{escape(c.path)}</code></td><td>{escape(c.a)}</td>"
                              f"<td>{escape(c.b)}</td></tr>" for c in r["changes"])
            action = r["action_a"] or r["action_b"]
            body.append(
                f"<tr class='{' '.join(cls)}' data-pair='{int(n)}' data-status='{escape(r['status'])}'>"
                f"<td>{escape(r['seq'])}</td><td class='ai-diff-action'>{_named(self.action_name(action), action)}</td>"
                f"<td>{escape(r['event_type'])}</td><td>{escape(r['status'])}</td>"
                f"<td><table>{changes}</table></td></tr>")
        same = int((here["status"] == "same").sum())
        where = "this key" if seq is None else f"round {int(seq)}"
        empty = ("" if body else
                 f"<tr class='ai-empty'><td colspan='5'>no differences in {escape(where)}</td></tr>")
        self.fields.value = (head + f"<table class='ai-table' data-seq='{escape(seq)}'><tr>"
                             "<th title='the round (seq) of the key'>round</th><th>action</th><th>event</th>"
                             "<th>status</th><th>field: a → b</th></tr>" + "".join(body) + empty + "</table>"
                             + f"<div>{escape(plural(same, 'pair'))} of {escape(where)} "
                             f"{'is' if same == 1 else 'are'} the same</div>")


def _named(name: str, action: Any) -> str:
    """An action's name, with its UUID on hover when the name stands for one."""
    text = "" if action is None else str(action)
    if text and text != name:
        return f"<span title='{escape(text)}'>{escape(name)}</span>"
    return escape(name)


def _short(text: Any) -> str:
    s = str(text)
    return s if len(s) <= 14 else s[:8] + "…"
