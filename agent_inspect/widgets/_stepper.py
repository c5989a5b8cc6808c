"""Replay stepper: drive a replay executor like a debugger and watch its steps, counters and memory."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as w
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from agent_inspect._errors import InspectError
from agent_inspect._glossary import count_words, plural
from agent_inspect._html import escape, frame_html, labelled, plotly_text
from agent_inspect._types import ExecutorState
from agent_inspect.recovery import lookup_words
from agent_inspect.widgets._common import (
    KIND_COLOURS,
    colour_for,
    frame_hover,
    integer_axis,
    message_html,
    pretty_json,
    runtime_html,
    terms_html,
    to_builtins,
)
from agent_inspect.widgets._counters import COUNTER_WORDS as COUNTER_WORDS  # the table lived here: still importable
from agent_inspect.widgets._counters import counters_html
from agent_inspect.widgets._plot import Plot
from agent_inspect.widgets._style import View, choices, colour, view_style

__all__ = ["ReplayStepper"]

_DETAIL_SKIP = ("store_before", "memory_before")
_ANY = "(any step)"
_ALL_KEYS = "(all keys)"
_STORE_ROWS = 30
# Step kinds that come by the hundred: drawn small and translucent (their density), under the rare ones.
_DENSE_KINDS = ("persist", "lookup", "rerun", "reuse", "resume", "round-complete", "round_complete", "not-dispatched")
# The rare kinds that explain a recovery: drawn big, outlined and on top, each with its own symbol.
_MARKED_KINDS = {"eviction": "x", "invalidation": "diamond", "fail": "star", "prune": "triangle-down"}
# Above this many steps the frequent kinds are drawn as density.
_DENSE_FROM = 300
_MEMORY_VALUE_CHARS = 160
# Hover shows at most these step fields, in this order, when present.
_HOVER_FIELDS = ("kind", "key", "business_key", "seq", "action", "event_type", "event_id", "outcome", "reason",
                 "change", "call_index", "function_id", "scope")


class ReplayStepper(View):
    """Buttons Step / Back / Run to breakpoint / Reset over a replay executor.

    Beside the buttons, "Show key" narrows the counters, current step, timeline and store to one business key.
    Below the buttons: a breakpoint editor ("Add breakpoint": step kind, key, seq), the runtime the log is
    read as, the executor's counters (:data:`COUNTER_WORDS`: each named after what it counts, with a tooltip),
    the current step's detail, a live timeline of all steps so far (x = step, y = seq, colour = step kind), the
    simulated store entries of the current step's key and the simulated memory.

    For example::

        stepper = ai.widgets.ReplayStepper(ai.ReplayExecutor(log, markers=markers))
        stepper.step(); stepper.run()                   # what the buttons do
    """

    def __init__(self, executor: ExecutorState, *, height: int = 320) -> None:
        super().__init__()
        self.add_class("ai-stepper")
        self.executor = executor
        self._error: str | None = None
        self.step_button = w.Button(description="Step", icon="step-forward")
        self.back_button = w.Button(description="Back", icon="step-backward")
        self.run_button = w.Button(description="Run to breakpoint", icon="play", layout=w.Layout(width="180px"))
        self.reset_button = w.Button(description="Reset", icon="undo")
        for button in (self.step_button, self.back_button, self.run_button, self.reset_button):
            button.add_class("ai-stepper-button")
        self.step_button.on_click(lambda _: self.step())
        self.back_button.on_click(lambda _: self.back())
        self.run_button.on_click(lambda _: self.run())
        self.reset_button.on_click(lambda _: self.reset())
        self.status = w.HTML()
        self.status.add_class("ai-stepper-status")
        self.counters = w.HTML()
        self.counters.add_class("ai-counters")
        self.detail = w.HTML()
        self.detail.add_class("ai-step-detail")
        self.memory = w.HTML()
        self.memory.add_class("ai-memory")
        self.figure = Plot(layout=go.Layout(
            height=height, margin=dict(l=50, r=10, t=40, b=40), hovermode="closest",
            xaxis=dict(title="step"), yaxis=dict(title="seq"),
            legend=dict(orientation="h", x=0, xanchor="left", y=1.0, yanchor="bottom")))
        self.figure.add_class("ai-stepper-timeline")
        self._drawn: tuple[pd.DataFrame, np.ndarray] = (pd.DataFrame(), np.zeros(0))
        self.figure.on_hover(self._hover)
        self.store = w.HTML()
        self.store.add_class("ai-store")
        self.break_kind = w.Dropdown(description="Break at", options=_step_kinds(),
                                     layout=w.Layout(width="220px"))
        self.break_key = w.Text(placeholder="business key (any)", layout=w.Layout(width="200px"))
        self.break_seq = w.Text(placeholder="seq (any)", layout=w.Layout(width="100px"))
        self.break_button = w.Button(description="Add breakpoint", icon="circle")
        self.clear_button = w.Button(description="Clear breakpoints")
        self.break_button.on_click(lambda _: self.add_breakpoint())
        self.clear_button.on_click(lambda _: self.clear_breakpoints())
        self.breakpoints = w.HTML()
        self.breakpoints.add_class("ai-breakpoints")
        # per-key filter: counters, current step, timeline and store of one business key
        self.key_filter = w.Dropdown(description="Show key", options=[_ALL_KEYS], value=_ALL_KEYS,
                                     layout=w.Layout(width="280px"))
        self.key_filter.add_class("ai-stepper-key")
        self._syncing = False
        self.key_filter.observe(lambda _: None if self._syncing else self.refresh(), names="value")
        # the rule the replay runs under, labelled a what-if when the runtime ships another
        self.runtime = runtime_html(executor, rule=getattr(getattr(executor, "recovery", None), "rule", None))
        self.terms = w.HTML(terms_html(["step", "round", "task", *_step_kinds()]))
        self.children = [
            w.HBox([self.step_button, self.back_button, self.run_button, self.reset_button, self.key_filter]),
            w.HBox([self.break_kind, self.break_key, self.break_seq, self.break_button, self.clear_button]),
            self.breakpoints, self.status, self.counters, self.detail, self.figure,
            self.terms, self.store, self.memory,
            view_style(),
        ]
        self.refresh()

    def add_breakpoint(self) -> None:
        """Add the breakpoint described by the editor (kind, key, seq; empty = any) to the executor."""
        where: dict[str, Any] = {}
        if self.break_kind.value != _ANY:
            where["kind"] = self.break_kind.value
        if self.break_key.value.strip():
            where["key"] = self.break_key.value.strip()
        if self.break_seq.value.strip():
            try:
                where["seq"] = int(self.break_seq.value.strip())
            except ValueError:
                self._error = f"breakpoint seq {self.break_seq.value!r} is not a number"
                self.refresh()
                return
        self._call(lambda: self.executor.add_breakpoint(**where))    # a key of no step: said in the status

    def clear_breakpoints(self) -> None:
        """Remove every breakpoint of the executor."""
        self.executor.breakpoints.clear()
        self.refresh()

    # -- controls ---------------------------------------------------------------------------------

    def step(self) -> None:
        """One executor step, then refresh the view."""
        self._call(self.executor.step)

    def back(self) -> None:
        """Go back one step (the executor re-executes deterministically), then refresh."""
        self._call(self.executor.back)

    def run(self) -> None:
        """Run to the next breakpoint (or to the end), then refresh."""
        self._call(self.executor.run)

    def reset(self) -> None:
        """Back to before the first step, then refresh."""
        self._call(self.executor.reset)

    def refresh(self) -> None:
        """Redraw counters, current step, timeline and memory from the executor's current state."""
        all_steps = self._steps()
        key = self._key_options(all_steps)
        steps = all_steps if key is None or "key" not in all_steps.columns else \
            all_steps[(all_steps["key"] == key).fillna(False).to_numpy(dtype=bool)]
        counters = self.executor.counters if key is None else self.executor.counters_for(key)
        self.counters.value = self.runtime + counters_html(counters, len(steps), key=key)
        if steps.empty:
            self.detail.value = message_html("no step yet: press Step" if all_steps.empty
                                             else f"no step at key {key} yet")
        else:
            last = steps.iloc[-1]
            self.detail.value = _step_html(last.get("index", len(steps)), last, step_cause(all_steps, last))
        self._draw(steps)
        current = key if key is not None else (None if steps.empty else steps.iloc[-1].get("key"))
        self.memory.value = _memory_html(self.executor.memory, current)
        # Reading the executor's store before its first step would start the replay.
        self.store.value = "" if steps.empty else _store_html(self.executor.cache, key or steps.iloc[-1].get("key"))
        self.breakpoints.value = _breakpoints_html(self.executor.breakpoints)
        finished = bool(self.executor.done)
        failure = self.executor.failure
        if self._error:
            self.status.value = message_html(self._error, level="warning")
        elif failure:
            self.status.value = message_html(f"the simulated job stopped: {failure}", level="error")
        elif finished:
            self.status.value = message_html("the replay has finished")
        else:
            self.status.value = ""
        self.step_button.disabled = self.run_button.disabled = finished
        self.back_button.disabled = all_steps.empty

    # -- internals --------------------------------------------------------------------------------

    def _call(self, action: Any) -> None:
        self._error = None
        try:
            action()
        except InspectError as exc:
            self._error = str(exc)
        self.refresh()

    def _key_options(self, steps: pd.DataFrame) -> str | None:
        """Offer the business keys the replay has reached; the chosen one (None: all keys)."""
        keys = sorted(map(str, steps["key"].dropna().unique())) if "key" in steps.columns and len(steps) else []
        chosen = self.key_filter.value
        options = choices([_ALL_KEYS, *keys, *([chosen] if chosen not in (_ALL_KEYS, *keys) else [])])
        if list(self.key_filter.options) != options:
            self._syncing = True
            try:
                self.key_filter.options = options
                self.key_filter.value = chosen
            finally:
                self._syncing = False
        return None if chosen == _ALL_KEYS else str(chosen)

    def _steps(self) -> pd.DataFrame:
        steps = self.executor.steps
        return steps if isinstance(steps, pd.DataFrame) else pd.DataFrame()

    def _draw(self, steps: pd.DataFrame) -> None:
        kind_col = next((c for c in ("kind", "step_kind", "outcome") if c in steps.columns), None)
        # steps outside a round (rebuild, prune) sit on the line y = -1
        seq = steps["seq"].astype("Float64").to_numpy(dtype=float, na_value=-1.0) if "seq" in steps.columns \
            else np.zeros(len(steps))
        x = steps["index"].to_numpy() if "index" in steps.columns else np.arange(1, len(steps) + 1)
        kinds = steps[kind_col].astype("string").fillna("?") if kind_col else pd.Series("step", index=steps.index)
        # hover text is built for the one step under the mouse (_hover); WebGL once there are many steps
        self._drawn = (steps, x)
        rows = np.arange(len(steps))
        scatter = go.Scattergl if len(steps) > 1000 else go.Scatter
        dense = len(steps) > _DENSE_FROM
        traces, on_top = [], []
        for kind in dict.fromkeys(kinds.tolist()):
            sel = (kinds == kind).to_numpy(dtype=bool)
            shade = colour_for(kind, KIND_COLOURS)
            if kind in _MARKED_KINDS:
                # rare and telling: big, outlined, on top
                on_top.append(go.Scatter(
                    x=x[sel], y=seq[sel], mode="markers", name=plotly_text(kind), customdata=rows[sel],
                    legendrank=10, hoverinfo="text", cliponaxis=False,
                    marker=dict(size=13, color=shade, symbol=_MARKED_KINDS[kind],
                                line=dict(width=1.5, color=colour("ink")))))
                continue
            faint = dense and kind in _DENSE_KINDS
            traces.append(scatter(x=x[sel], y=seq[sel], mode="markers", name=plotly_text(kind), customdata=rows[sel],
                                  legendrank=100, hoverinfo="text",
                                  marker=dict(size=5 if faint else 9, color=shade, opacity=0.35 if faint else 1.0,
                                              line=dict(width=0))))
        traces += on_top
        if len(steps):
            traces.append(go.Scatter(x=[x[-1]], y=[seq[-1]], mode="markers", name="current", legendrank=1,
                                     marker=dict(size=18, color="rgba(0,0,0,0)",
                                                 line=dict(color=colour("ink"), width=2)),
                                     hoverinfo="skip"))
        self.figure.items = len(steps)
        with self.figure.batch_update():
            self.figure.data = []
            for trace in traces:
                self.figure.add_trace(trace)
            self.figure.layout.xaxis.update(integer_axis(x))
            self.figure.layout.yaxis.update(integer_axis(seq))

    def _hover(self, index: int, point: object) -> str | None:
        steps, x = self._drawn
        customdata = self.figure.data[index].customdata
        if customdata is None or not isinstance(point, int) or point >= len(customdata):
            return None
        row = int(customdata[point])
        return f"step {x[row]}" + str(frame_hover(steps.iloc[[row]], [(f, f) for f in _HOVER_FIELDS])[0])


def _step_kinds() -> list[str]:
    try:
        from agent_inspect.executor import StepKind
    except ImportError:
        return [_ANY]
    return [_ANY, *(k.value for k in StepKind)]


def _store_html(cache: Any, key: Any) -> str:
    if not isinstance(cache, pd.DataFrame):
        return ""
    total = len(cache)
    if key is not None and not _na(key) and "business_key" in cache.columns:
        cache = cache[cache["business_key"] == key]
        title = f"simulated store: {len(cache)} of {total} entries, key {key}"
    else:
        title = f"simulated store: {total} entries"
    # long state keys make tall rows: the table scrolls inside a box of fixed height
    return f'<div class="ai-scroll-tall ai-store-scroll">{frame_html(cache, max_rows=_STORE_ROWS, caption=title)}</div>'


def _breakpoints_html(breakpoints: Any) -> str:
    items = []
    for bp in breakpoints or ():
        parts = [f"{name}={getattr(bp, name)}" for name in ("kind", "key", "seq", "action", "outcome")
                 if getattr(bp, name, None) is not None]
        if getattr(bp, "when", None) is not None:
            parts.append("when=…")
        items.append(f"<li>{escape(', '.join(parts) or 'every step')}</li>")
    if not items:
        return '<div class="ai-breakpoint-list">no breakpoint: Run to breakpoint runs to the end</div>'
    return f'<div class="ai-breakpoint-list">breakpoints:<ul>{"".join(items)}</ul></div>'


def _step_html(index: int, row: pd.Series, cause: str = "") -> str:
    cells = "".join(f"<tr>{labelled('th', k)}<td>{escape(_short(v))}</td></tr>"
                    for k, v in row.items() if k not in _DETAIL_SKIP and not _na(v))
    line = f'<div class="ai-step-cause">{escape(cause)}</div>' if cause else ""
    return (f'{line}<details class="ai-step-fields" open><summary>step {escape(index)} · {escape(row.get("kind", ""))}: '
            f'every field</summary><table class="agent-inspect ai-step">{labelled("caption", f"step {index}", term="step")}'
            f'<tbody>{cells}</tbody></table></details>')


def step_cause(steps: pd.DataFrame, row: pd.Series) -> str:
    """One line saying why step ``row`` happened, from the step fields (the engine's wording where it gives one).

    An eviction names its lookup, the rule's note and what it removed (grouped by round); a re-run names the
    earlier eviction step that removed its record, when there is one."""
    kind = str(row.get("kind", ""))
    where = (f"{row.get('action')} " if not _na(row.get("action")) else "") + \
        f"({row.get('key')}, seq {_int_text(row.get('seq'))})"
    if kind in ("eviction", "invalidation"):
        note = row.get("rule_note") if not _na(row.get("rule_note")) else row.get("reason")
        removed = row.get("change") if not _na(row.get("change")) else ""   # the engine groups it by round
        return f"{_lookup_of(row)}: {note}" + (f" — {removed}" if removed else "")
    if kind == "rerun":
        by = _evicted_by(steps, row)
        if by is not None:
            return (f"rerun of {where}: its record was {'invalidated' if by['kind'] == 'invalidation' else 'evicted'}"
                    f" by step {by['index']} ({_lookup_of(by)})")
    reason = row.get("reason")
    return f"{kind} of {where}: {reason}" if not _na(reason) and kind else ""


def _lookup_of(step: pd.Series) -> str:
    """The lookup a step made, in :func:`~agent_inspect.recovery.lookup_words`' one wording."""
    action = step.get("action")
    return lookup_words("a task" if _na(action) else action, step.get("key"), _int_text(step.get("seq")))


def _evicted_by(steps: pd.DataFrame, row: pd.Series) -> pd.Series | None:
    """The last eviction (rounds > s) or invalidation (rounds >= s) of the same key before ``row`` that covers
    its round."""
    if not {"kind", "key", "seq", "index"} <= set(steps.columns) or _na(row.get("seq")):
        return None
    seq, index = int(row["seq"]), row.get("index")
    removals = steps[steps["kind"].isin(("eviction", "invalidation")).to_numpy(dtype=bool)
                     & (steps["key"] == row.get("key")).fillna(False).to_numpy(dtype=bool)]
    if index is not None and not _na(index):
        removals = removals[removals["index"] < index]
    for _, r in removals.iloc[::-1].iterrows():
        if _na(r.get("seq")):
            continue
        s = int(r["seq"])
        if s < seq or (r["kind"] == "invalidation" and s <= seq):
            found: pd.Series = r
            return found
    return None


def _int_text(value: Any) -> str:
    return "?" if _na(value) else str(int(value)) if isinstance(value, (int, float, np.integer)) else str(value)


def _memory_html(memory: Any, key: Any = None) -> str:
    """The memory of the current key only, folded; undecoded (Kryo) values summarised, never dumped."""
    if memory is None:
        return ""
    if isinstance(memory, Mapping) and key is not None and not _na(key):
        mine = memory.get(key)
        title = f"memory of key {key} at this step"
    elif isinstance(memory, Mapping):
        mine, title = None, f"memory: {len(memory):,} {count_words(len(memory), 'key')} (pick a key or Step to see one)"
    else:
        mine, title = memory, "memory at this step"
    if mine is None:
        return f'<details class="ai-memory-fold"><summary>{escape(title)} · empty</summary></details>'
    parts = []
    for part in ("short_term", "sensory"):
        values = getattr(mine, part, None) if not isinstance(mine, Mapping) else mine.get(part)
        if values is None:
            continue
        rows = "".join(f"<tr><th>{escape(name)}</th><td>{escape(_memory_value(v))}</td></tr>"
                       for name, v in dict(values).items())
        parts.append(f'<table class="agent-inspect ai-memory-table"><caption>{escape(part.replace("_", "-"))}: '
                     f"{plural(len(values), 'entry', 'entries')}</caption><tbody>{rows}</tbody></table>")
    if not parts:
        parts.append(f'<pre class="ai-value">{escape(_short(to_builtins(mine)))}</pre>')
    return f'<details class="ai-memory-fold"><summary>{escape(title)}</summary>{"".join(parts)}</details>'


def _memory_value(value: Any) -> str:
    """A memory value in one short line: undecoded payloads by their serde and size."""
    serde, payload = getattr(value, "serde", None), getattr(value, "payload", None)
    if isinstance(serde, str) and isinstance(payload, (str, bytes)):
        return f"{serde} payload, {len(payload):,} base64 chars (not decoded: give the executor a memory_decoder)"
    text = pretty_json(to_builtins(value))
    return text if len(text) <= _MEMORY_VALUE_CHARS else text[:_MEMORY_VALUE_CHARS - 1] + "…"


def _na(value: Any) -> bool:
    if isinstance(value, (list, tuple, dict, set, frozenset, np.ndarray)):
        return False
    try:
        return value is None or bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _short(value: Any) -> str:
    text = pretty_json(value) if isinstance(value, (Mapping, list, tuple)) else str(value)
    return text if len(text) <= 400 else text[:397] + "…"
