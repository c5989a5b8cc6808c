"""Divergence view: the conflicting roots side by side, their attribute diff and the explanation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import ipywidgets as w
import pandas as pd

from agent_inspect._controls import show_controls
from agent_inspect._html import escape, frame_html, labelled
from agent_inspect._types import ReconstructionLike
from agent_inspect.widgets._common import decoded_value, first_column, message_html, pretty_json, records_of
from agent_inspect.widgets._grid import DataGrid
from agent_inspect.widgets._style import View, view_style
from agent_inspect.widgets._timeline import _positions

if TYPE_CHECKING:
    from agent_inspect._types import RecordSource

__all__ = ["DivergenceView"]

# More than this many records side by side would be unreadable; the rest are listed by position.
_MAX_SIDES = 4
_TABLE_COLUMNS = ("id", "divergence_id", "business_key", "key", "seq", "kind", "step", "removed", "positions",
                  "explanation")


class DivergenceView(View):
    """Pick one divergence of a reconstruction and see why it happened.

    Shows every divergence in a grid (sorted and filtered in the kernel; click a row to pick it),
    the rule's one-line explanation, the records in conflict side by side (their trigger events,
    decoded), the attribute diff the reconstruction computed and the cache removals (evictions,
    invalidations) the divergence caused. Up to four records sit side by side; "next" / "previous" page
    through every record of the divergence ("n more" says how many are left).

    For example::

        result = ai.reconstruct(log, markers=markers)
        ai.widgets.DivergenceView(result, key="user-0011")
    """

    def __init__(self, result: RecordSource, *, key: str | None = None) -> None:
        super().__init__()
        self.add_class("ai-divergence")
        self._result = result
        self.divergences = result.divergences if isinstance(result, ReconstructionLike) else pd.DataFrame()
        self._key_col = first_column(self.divergences, "business_key", "key")
        if key is not None and self._key_col is not None:
            keep = (self.divergences[self._key_col] == key).fillna(False).to_numpy(dtype=bool)
            self.divergences = self.divergences[keep]
        self._records = records_of(result)
        self.selector = w.Dropdown(description="Divergence", options=self._options(),
                                   layout=w.Layout(width="640px"))
        self.explanation = w.HTML()
        self.explanation.add_class("ai-explanation")
        self.sides = w.HTML()
        self.sides.add_class("ai-sides")
        self.diff = w.HTML()
        self.diff.add_class("ai-diff")
        self.removals = w.HTML()
        self.removals.add_class("ai-removals")
        self.page = 0
        self.previous_button = w.Button(description="previous", icon="chevron-left", layout=w.Layout(width="110px"))
        self.next_button = w.Button(description="next", icon="chevron-right", layout=w.Layout(width="110px"))
        self.page_label = w.HTML()
        self.page_label.add_class("ai-divergence-page")
        self.previous_button.on_click(lambda _: self.show_page(self.page - 1))
        self.next_button.on_click(lambda _: self.show_page(self.page + 1))
        self.pager = w.HBox([self.previous_button, self.page_label, self.next_button])
        self.pager.add_class("ai-divergence-pager")
        self._positions: list[int] = []
        self._root_conflict = False
        self.table = DataGrid(self.divergences, columns=[c for c in _TABLE_COLUMNS if c in self.divergences.columns],
                              height=240,
                              empty_text="no divergence: this recovery evicted or invalidated nothing")
        self.table.add_class("ai-divergence-table")
        self.table.on_select(lambda _label, _row: self.show(self.table.selected))
        self.selector.observe(lambda _: self._show(), names="value")
        self.children = [self.table, self.selector, self.explanation, self.pager, self.sides, self.diff, self.removals,
                         view_style()]
        self._show()

    def show(self, index: int) -> None:
        """Show the divergence at row ``index`` (0-based) of ``result.divergences``."""
        self.selector.value = int(index)

    def show_page(self, page: int) -> None:
        """Show the ``page``-th group of (up to four) records of the divergence shown."""
        pages = max(1, -(-len(self._positions) // _MAX_SIDES))
        self.page = min(max(0, int(page)), pages - 1)
        first = self.page * _MAX_SIDES
        shown = self._positions[first:first + _MAX_SIDES]
        self.sides.value = self._sides_html(self._positions, first, root_conflict=self._root_conflict)
        more = len(self._positions) - first - len(shown)
        self.page_label.value = (f'<span class="ai-page-text">records {first + 1}–{first + len(shown)} of '
                                 f'{len(self._positions)}{f" · {more} more" if more > 0 else ""}</span>'
                                 if shown else "")
        self.previous_button.disabled = self.page == 0
        self.next_button.disabled = more <= 0
        self.pager.layout.display = None if len(self._positions) > _MAX_SIDES else "none"

    # -- internals --------------------------------------------------------------------------------

    def _options(self) -> list[tuple[str, int]]:
        opts = []
        for i, (_, row) in enumerate(self.divergences.iterrows()):
            ident = row.get("divergence_id", row.get("id", i))
            key = row.get(self._key_col, "") if self._key_col else ""
            opts.append((show_controls(f"#{ident} · key {key} · seq {row.get('seq', '?')} · {row.get('kind', '')}"), i))
        return opts

    def _show(self) -> None:
        if self.divergences.empty or self.selector.value is None:
            self.explanation.value = message_html("no divergence: this recovery evicted or invalidated nothing")
            self.sides.value = ""
            self.diff.value = ""
            self.removals.value = ""
            self.pager.layout.display = "none"
            return
        row = self.divergences.iloc[int(self.selector.value)]
        self.table.selected = int(self.selector.value)
        self.explanation.value = (f'<div class="ai-explanation-text"><b>{escape(row.get("kind", ""))}</b> '
                                  f'at seq {escape(row.get("seq", "?"))}: {escape(row.get("explanation", ""))}</div>')
        pos_col = first_column(self.divergences, "positions", "root_positions", "pos")
        positions = _positions(row.get(pos_col)) if pos_col else []
        self._positions, self._root_conflict = positions, str(row.get("kind", "")) == "root-conflict"
        self.show_page(0)
        diff_col = first_column(self.divergences, "attribute_diff", "diff", "attributes_diff")
        self.diff.value = _diff_html(row.get(diff_col) if diff_col else None, positions)
        self.removals.value = self._removals_html(row.get("divergence_id", row.get("id")))

    def _removals_html(self, ident: Any) -> str:
        if ident is None or not isinstance(self._result, ReconstructionLike):
            return ""
        evictions = self._result.evictions
        if "divergence_id" not in evictions.columns:
            return ""
        mine = evictions[(evictions["divergence_id"] == ident).fillna(False).to_numpy(dtype=bool)]
        cols = [c for c in ("op", "step", "seq", "removed", "positions", "reason") if c in mine.columns]
        if mine.empty:
            return message_html("this divergence removed no cached record")
        return frame_html(mine[cols], max_rows=50, caption="cache removals it caused")

    def _sides_html(self, positions: list[int], first: int = 0, *, root_conflict: bool) -> str:
        if not positions:
            return message_html("the reconstruction names no conflicting records for this divergence")
        shown = positions[first:first + _MAX_SIDES]
        labels = ["earlier root", "later root"] if root_conflict and len(positions) == 2 else \
            [f"record {first + i + 1} of {len(positions)}" for i in range(len(shown))]
        cells = []
        for label, pos in zip(labels, shown):
            meta = []
            if pos in self._records.index:
                rec = self._records.loc[pos]
                for name in ("state_key", "task_event_id", "attempt", "status", "reason"):
                    if name in rec.index and not _na(rec[name]):
                        text = escape(rec[name])
                        cell = f"<code>{text}</code>" if name in ("state_key", "task_event_id") else \
                            labelled("span", rec[name])
                        meta.append(f"<div>{labelled('span', name, cls='ai-label')} {cell}</div>")
            event = _task_event(decoded_value(self._result, pos))
            cells.append(f'<div class="ai-side">'
                         f"<b>{escape(label)} · record {pos}</b>{''.join(meta)}"
                         f'<pre class="ai-value">{escape(pretty_json(event))}</pre></div>')
        more = len(positions) - first - len(shown)
        tail = message_html(f"{more} more: records {', '.join(map(str, positions[first + len(shown):]))} "
                            "(next shows them)") if more > 0 else ""
        return f'<div class="ai-side-by-side">{"".join(cells)}</div>{tail}'


def _na(value: Any) -> bool:
    try:
        return value is None or bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _task_event(value: Any) -> Any:
    for name in ("taskEvent", "task_event"):
        event = getattr(value, name, None) if not isinstance(value, Mapping) else value.get(name)
        if event is not None:
            return event
    return value


def _diff_rows(diff: Any) -> list[tuple[Any, Any, Any]]:
    """Normalise the reconstruction's attribute diff to (attribute, earlier, later) rows."""
    if diff is None or (not isinstance(diff, (Mapping, list, tuple, pd.DataFrame)) and _na(diff)):
        return []
    if isinstance(diff, pd.DataFrame):
        return [tuple(r)[:3] for r in diff.itertuples(index=False, name=None)]
    if isinstance(diff, Mapping):
        rows = []
        for attr, change in diff.items():
            if isinstance(change, Mapping):
                vals = list(change.values())
                rows.append((attr, vals[0] if vals else None, vals[1] if len(vals) > 1 else None))
            elif isinstance(change, (list, tuple)) and len(change) == 2:
                rows.append((attr, change[0], change[1]))
            else:
                rows.append((attr, change, None))
        return rows
    rows = []
    for item in diff:
        if isinstance(item, Mapping):
            vals = list(item.values())
            rows.append(tuple((vals + [None, None, None])[:3]))
        elif isinstance(item, (list, tuple)):
            rows.append(tuple((list(item) + [None, None, None])[:3]))
        else:
            rows.append((item, None, None))
    return rows


def _diff_html(diff: Any, positions: list[int]) -> str:
    rows = _diff_rows(diff)
    if not rows:
        return message_html("no attribute diff (the records' trigger attributes are equal or not recorded)")
    left, right = ("earlier", "later") if len(positions) == 2 else ("a", "b")
    body = "".join(f"<tr><td><code>{escape(a)}</code></td><td>{escape(pretty_json(x))}</td>"
                   f"<td>{escape(pretty_json(y))}</td></tr>" for a, x, y in rows)
    return (f'<table class="agent-inspect ai-diff-table"><caption>attribute diff</caption><thead><tr>'
            f"<th>attribute</th><th>{left}</th><th>{right}</th></tr></thead><tbody>{body}</tbody></table>")
