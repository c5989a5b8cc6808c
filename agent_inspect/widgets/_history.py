"""The compact history of one business key, the default view of a key (modelled on Temporal's history).

One line per action execution (its initial, call and completed records folded), with wall-clock time,
duration, status and outcome badges under the reconstruction's rule. The kernel holds the lines and
sends one page at a time; expanding a line fetches its records and their decoded values; searching
(any attribute text, an order id inside a value) and the jumps run in the kernel too. The browser side
(``static/history.js``) builds every node with ``textContent``: payloads are untrusted.
"""

from __future__ import annotations

from typing import Any

import anywidget
import pandas as pd
import traitlets as t

from agent_inspect._controls import show_controls
from agent_inspect._errors import InspectError
from agent_inspect._glossary import define, define_column, plural
from agent_inspect._types import ReconstructionLike
from agent_inspect.codec import PlanSource
from agent_inspect.diffing import names_for
from agent_inspect.history import SearchIndex, annotate_rows, compact_history, record_kinds, refresh_rows
from agent_inspect.widgets._common import decoded_value, first_column, log_of, pretty_json, records_of
from agent_inspect.widgets._style import palette_css, static_text

__all__ = ["KeyHistory", "reopen_snippet", "snippet_settings"]

PAGE_SIZE = 100


class KeyHistory(anywidget.AnyWidget):
    """One business key's history: one line per action execution, expandable to its records.

    ``KeyHistory(result, key, record=pos)`` opens on the line of record ``pos`` (a log position, or a
    ``(partition, offset)`` pair), expanded with that record highlighted. Methods mirror the buttons:
    :meth:`expand`, :meth:`goto_page`, :meth:`jump_to_first_divergence`, :meth:`next_rerun`,
    :meth:`search`; :meth:`record_json` and :meth:`snippet` are what "copy JSON" and "copy link" copy.

    For example::

        view = ai.widgets.KeyHistory(ai.reconstruct(log, markers=markers), "user-0011")
        view.search("order")                          # keep the lines whose records mention "order"
        len(view.rows), view.jump_to_first_divergence()
    """

    _esm = static_text("history.js")
    _css = palette_css() + static_text("history.css")

    header = t.Dict().tag(sync=True)
    rows: t.List[dict[str, Any]] = t.List().tag(sync=True)
    page = t.Int(0).tag(sync=True)
    page_count = t.Int(1).tag(sync=True)
    page_size = t.Int(PAGE_SIZE).tag(sync=True)
    total = t.Int(0).tag(sync=True)
    query = t.Unicode("").tag(sync=True)
    search_info = t.Unicode("").tag(sync=True)
    details = t.Dict().tag(sync=True)
    focus_line = t.Int(-1).tag(sync=True)
    focus_record = t.Int(-1).tag(sync=True)
    notice = t.Unicode("").tag(sync=True)

    def __init__(self, result: ReconstructionLike, key: Any, *, record: int | tuple[int, int] | None = None,
                 page_size: int = PAGE_SIZE) -> None:
        super().__init__(page_size=page_size)
        self.add_class("ai-history")
        self.key = key
        self._matches: set[int] = set()
        self._take(result)
        self.on_msg(self._on_msg)
        self.observe(lambda _: self._filtered(), names="query")
        self._filter()
        if record is not None:
            self.focus(record)

    def show_result(self, result: ReconstructionLike) -> None:
        """Show a newer reconstruction of the same key in place (the live tail's windows).

        The page, the search and the opened lines stay where they were, as far as they still exist.
        """
        opened, page = [int(k) for k in self.details], self.page
        with self.hold_sync():
            self._take(result)
            self._filter()
            self.goto_page(page)
            for line in opened:
                if line < len(self.lines):
                    self.expand(line)

    # -- what the buttons do ----------------------------------------------------------------------

    def goto_page(self, page: int) -> None:
        """Show page ``page`` (0-based, clamped) of the visible lines."""
        page = max(0, min(int(page), self.page_count - 1))
        start = page * self.page_size
        part = self.visible.iloc[start:start + self.page_size]
        shown = {str(x) for x in part["line"].tolist()}
        self.details = {k: v for k, v in self.details.items() if k in shown}
        self.rows = [_row(line, self._matches) for line in part.itertuples(index=False)]
        self.page = page

    def expand(self, line: int) -> dict[str, Any]:
        """Fetch line ``line``'s records and their decoded values (shown below the line)."""
        line = int(line)
        positions = self.lines.at[line, "positions"]
        detail = {"records": [self._record(p) for p in positions]}
        self.details = {**self.details, str(line): detail}
        return detail

    def collapse(self, line: int) -> None:
        self.details = {k: v for k, v in self.details.items() if k != str(int(line))}

    def search(self, text: str) -> None:
        """Keep the lines with a record whose attributes or decoded value contain ``text`` (empty: all)."""
        self.query = text

    def jump_to_first_divergence(self) -> int | None:
        """Focus the first line (in log order) involved in a divergence; its line number, or None."""
        return self._jump(self.lines["diverged"].to_numpy(dtype=bool), after=-1, what="divergence")

    def next_rerun(self) -> int | None:
        """Focus the next line after the focused one whose outcome is RERUN (wraps around)."""
        found = self._jump(self.lines["rerun"].to_numpy(dtype=bool), after=self.focus_line, what="re-run")
        if found is None and self.focus_line >= 0:
            found = self._jump(self.lines["rerun"].to_numpy(dtype=bool), after=-1, what="re-run")
        return found

    def focus(self, record: int | tuple[int, int]) -> int:
        """Open the line of record ``record`` (position or ``(partition, offset)``), expanded, and highlight it."""
        pos = self._position(record)
        line: int = self._line_of[pos]
        if line not in set(self.visible["line"].tolist()):
            self.query = ""
        self._show_line(line)
        self.expand(line)
        self.focus_record = pos
        return line

    def record_json(self, pos: int) -> str:
        """The decoded value of record ``pos`` as indented JSON (what "copy JSON" copies)."""
        return show_controls(pretty_json(decoded_value(self.result, int(pos))))   # valid JSON still: \u202e

    def snippet(self, pos: int) -> str:
        """One line of Python that reopens this key's history on record ``pos``."""
        return reopen_snippet(self.result, self.key, int(pos))

    # -- internals --------------------------------------------------------------------------------

    def _take(self, result: ReconstructionLike) -> None:
        key = self.key
        frame = records_of(result)
        mine = frame[(frame["business_key"] == key).fillna(False).to_numpy(dtype=bool)] \
            if "business_key" in frame.columns else frame.iloc[0:0]
        if mine.empty:
            raise InspectError(f"business key {key!r} has no records here; pick one of log.keys()")
        log = log_of(result)
        if "execution" not in mine.columns and log is not None:
            # a plain log: the key's rows read as the whole log is (its refresh rows are no executions, no attempts)
            marks = annotate_rows(mine, refresh_rows(log))
            mine = mine.assign(execution=marks["execution"], attempt=marks["attempt"])
        self.result, self.records = result, mine
        divergences = getattr(result, "divergences", None)
        self.lines = compact_history(mine, divergences if isinstance(divergences, pd.DataFrame) else None,
                                     known=names_for(log_of(result)))
        self._line_of = {p: line for line, ps in zip(self.lines["line"], self.lines["positions"]) for p in ps}
        self._kinds = dict(zip(mine.index.tolist(), record_kinds(mine).tolist()))
        self._index: SearchIndex | None = None  # built on the first search
        self.visible = self.lines
        rule = getattr(getattr(result, "rule", None), "name", None)
        self.header = _header(key, rule, mine, self.lines)

    def _position(self, record: int | tuple[int, int]) -> int:
        try:
            return self._position_of(record)
        except (TypeError, ValueError):     # ("x", a 1-tuple): an unpacking or int() error said nothing of record=
            raise InspectError(f"record takes a log position (int) or a (partition, offset) pair, got {record!r}") \
                from None

    def _position_of(self, record: int | tuple[int, int]) -> int:
        if isinstance(record, (tuple, list)):
            part, off = (int(x) for x in record)
            hit = self.records[(self.records["partition"] == part) & (self.records["offset"] == off)]
            if hit.empty:
                raise InspectError(f"no record of key {self.key!r} at partition {part}, offset {off}")
            return int(hit.index[0])
        pos = int(record)
        if pos not in self._line_of:
            raise InspectError(f"record {pos} is not a record of key {self.key!r}")
        return pos

    def _jump(self, mask: Any, *, after: int, what: str) -> int | None:
        lines = self.lines["line"].to_numpy()[mask]
        lines = lines[lines > after]
        if not len(lines):
            self.notice = f"no {what} {'after this line' if after >= 0 else 'in this key'}"
            return None
        line = int(lines[0])
        if line not in set(self.visible["line"].tolist()):
            self.query = ""
        self._show_line(line)
        self.focus_record = -1
        self.notice = ""
        return line

    def _show_line(self, line: int) -> None:
        index = self.visible["line"].tolist().index(line)
        self.goto_page(index // self.page_size)
        self.focus_line = line

    def _filtered(self) -> None:
        with self.hold_sync():
            self._filter()

    def _filter(self) -> None:
        text = self.query.strip()
        if text:
            if self._index is None:
                log = log_of(self.result)
                values = [None] * len(self.records) if log is None or log.raw is None else \
                    [log.raw.value[p] for p in self.records.index]
                self._index = SearchIndex(self.records, values)
            hits = self._index.find(text)
            self._matches = set(hits.tolist())
            keep = sorted({self._line_of[p] for p in self._matches})
            self.visible = self.lines.iloc[keep]
            self.search_info = (f"{len(keep):,} of {plural(len(self.lines), 'line')} ({plural(len(hits), 'record')}) "
                                f"contain {text!r}")
        else:
            self._matches = set()
            self.visible = self.lines
            self.search_info = ""
        self.total = len(self.visible)
        self.page_count = max(1, -(-self.total // self.page_size))
        self.details = {}
        self.focus_line = -1
        self.focus_record = -1
        self.goto_page(0)

    def _record(self, pos: int) -> dict[str, Any]:
        row = self.records.loc[pos]
        return {
            "pos": int(pos), "partition": _plain(row.get("partition")), "offset": _plain(row.get("offset")),
            "time": _time(row.get("timestamp")), "kind": self._kinds.get(pos, "record"),
            "status": _plain(row.get("status")), "reason": _plain(row.get("reason")),
            "outcome": _plain(row.get("outcome")), "divergence": _plain(row.get("divergence_id")),
            "calls": _plain(row.get("call_count")), "match": pos in self._matches,
            "json": self.record_json(pos), "snippet": self.snippet(pos),
        }

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        with self.hold_sync():  # one state message per request, whatever it changed
            self._handle(content)

    def _handle(self, content: dict[str, Any]) -> None:
        action = content.get("action")
        try:
            if action == "expand":
                self.expand(int(content["line"]))
            elif action == "collapse":
                self.collapse(int(content["line"]))
            elif action == "page":
                self.goto_page(int(content["page"]))
            elif action == "divergence":
                self.jump_to_first_divergence()
            elif action == "rerun":
                self.next_rerun()
            elif action == "focus":
                self.focus_line = int(content["line"])
        except (KeyError, ValueError, InspectError) as exc:
            self.notice = str(exc)


def reopen_snippet(result: Any, key: Any, pos: int) -> str:
    """``ai.inspect(ai.load(<source>), business_key=…, record=…, rule=…, markers=…)`` for record ``pos`` of
    ``result``: every setting the reconstruction was given (rule, markers, runtime, restore checks), so the
    snippet brings the same view back.

    The record is named by ``(partition, offset)``: that stays right when the reload reads more (a topic
    that grew) or less (a scan's per-key load) than this log did.
    """
    log = log_of(result)
    source = getattr(log, "source", None)
    location = getattr(source, "location", None)
    if location is None:
        raise InspectError("this log does not say where it came from, so no snippet can reload it")
    row = records_of(result).loc[int(pos)]
    record = (int(row["partition"]), int(row["offset"]))
    settings, left_out = snippet_settings(result)
    tail = "".join(f", {name}={value!r}" for name, value in settings.items())
    note = f"  # also pass {', '.join(left_out)} (not writable as text)" if left_out else ""
    return f"ai.inspect(ai.load({location!r}), business_key={key!r}, record={record!r}{tail}){note}"


def snippet_settings(result: Any) -> tuple[dict[str, Any], list[str]]:
    """The settings of ``result`` a snippet passes on (name → literal value), and the ones it cannot write
    (a plan or agent object). The rule always; the others when they were given. Markers read from a checkpoint
    are written as reading it again, so the snippet restores its plan too."""
    recovery = getattr(result, "recovery", None)
    rule = getattr(getattr(result, "rule", None), "name", None)
    out: dict[str, Any] = {} if rule is None else {"rule": rule}
    given = dict(getattr(recovery, "given", {}) or {})
    markers = getattr(result, "markers", None)
    if isinstance(given.get("markers"), PlanSource):
        out["markers"] = _Code(f"ai.checkpoint.read({given['markers'].path!r})")
    elif "markers" in given or (recovery is None and markers is not None):
        out["markers"] = _plain_markers(getattr(recovery, "markers", markers))
    if "runtime" in given and recovery is not None:
        out["runtime"] = recovery.runtime.name
    for name in ("store_flavour", "kafka_pending", "call_matching", "expected_fingerprint", "max_parallelism"):
        value = given.get(name)
        if isinstance(value, (str, int)):
            out[name] = value
    left_out = [f"{name}=" for name in ("plan", "agent") if given.get(name) is not None]
    return out, left_out


class _Code(str):
    """Python source that a snippet writes as it is (its repr is itself)."""

    def __repr__(self) -> str:
        return str(self)


def _plain_markers(markers: Any) -> Any:
    """Markers as literal Python data: a list of ``{partition: offset}`` dicts (None and [] as they are)."""
    if markers is None:
        return None
    if hasattr(markers, "items"):
        markers = [markers]
    return [{int(p): int(o) for p, o in dict(m).items()} for m in markers]


# the line's columns, left to right (the last holds the divergence and search marks)
_COLUMNS = ("time (UTC)", "duration", "seq", "attempt", "action", "triggered by", "records", "status", "outcome", "")


def _header(key: Any, rule: str | None, records: pd.DataFrame, lines: pd.DataFrame) -> dict[str, Any]:
    status = first_column(records, "status")
    outcome = first_column(lines, "outcome")
    counts = {} if status is None else {str(k): int(v) for k, v in records[status].value_counts().items() if v}
    outcomes = {} if outcome is None else {str(k): int(v) for k, v in lines[outcome].value_counts().items() if v}
    terms = {t: define(t) for t in (*counts, *outcomes, *lines["status"].dropna().astype(str).unique(),
                                     "divergence", "rule", "RERUN") if define(t)}
    return {"key": show_controls(str(key)), "rule": rule or "", "records": len(records), "lines": len(lines),
            "statuses": counts, "outcomes": outcomes, "divergent_lines": int(lines["diverged"].sum()),
            "reruns": int(lines["rerun"].sum()), "terms": terms,
            "columns": [[c, define_column(c)] for c in _COLUMNS]}


def _row(line: Any, matches: set[int]) -> dict[str, Any]:
    return {
        "line": int(line.line), "seq": line.seq, "attempt": line.attempt, "action": show_controls(str(line.action)),
        "action_id": _plain(line.action_uuid),
        "event": _plain(line.event_type), "records": int(line.records), "first_pos": int(line.first_pos),
        "time": _time(line.start), "date": _date(line.start), "duration": _duration(line.duration_ms),
        "calls": int(line.calls), "completed": bool(line.completed), "status": _plain(line.status),
        "statuses": [str(s) for s in line.statuses], "outcome": _plain(line.outcome), "reason": _plain(line.reason),
        "divergences": [str(d) for d in line.divergences], "rerun": bool(line.rerun),
        "matches": sum(1 for p in line.positions if p in matches),
    }


def _plain(value: Any) -> Any:
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and value != value:
        return None
    if hasattr(value, "item"):
        return value.item()
    # record text goes in with textContent: its control characters are written out, as the HTML views show them
    return show_controls(value) if isinstance(value, str) else value if isinstance(value, (int, float, bool)) \
        else show_controls(str(value))


def _time(value: Any) -> str:
    if value is None or pd.isna(value):
        return ""
    ts = pd.Timestamp(value)
    clock: str = ts.strftime("%H:%M:%S.")
    return clock + f"{ts.microsecond // 1000:03d}"


def _date(value: Any) -> str:
    return "" if value is None or pd.isna(value) else pd.Timestamp(value).isoformat()


def _duration(ms: Any) -> str:
    if ms is None or pd.isna(ms):
        return ""
    ms = float(ms)
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 60_000:
        return f"{ms / 1000:.2f} s"
    return f"{int(ms // 60_000)} min {ms % 60_000 / 1000:.0f} s"
