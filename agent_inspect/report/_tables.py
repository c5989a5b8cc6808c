"""The report's tables as a reader sees them: names not ids, no internal columns, positions folded into a link."""

from __future__ import annotations

from typing import Any

import pandas as pd

from agent_inspect._glossary import define, plural
from agent_inspect._html import escape, labelled, table_html

__all__ = ["reader_table", "records_link", "counts_shown"]

#: columns that are the toolkit's own bookkeeping, never a reader's: ids repeated by the row number, cache
#: events, raw per-record diffs (the divergence table words them)
_INTERNAL = ("id", "cache_ops", "attribute_diff", "entry_id", "state_key_bytes")
#: columns holding lists of log positions: folded into one "records" link per row
_POSITIONS = ("positions", "pos_list", "record_positions")


def counts_shown(frame: pd.DataFrame, columns: Any) -> pd.DataFrame:
    """``frame`` with its integer ``columns`` (counts, not ids or offsets) written as the report writes counts:
    12,345."""
    out = frame.copy()
    for c in columns:
        if c in out.columns and pd.api.types.is_integer_dtype(out[c].dtype):
            out[c] = [f"{int(v):,}" if pd.notna(v) else "" for v in out[c]]
    return out


def records_link(positions: Any, anchor: str) -> str:
    """A folded list of log positions: "3 records", opening to the positions ("" when there are none)."""
    ps = [int(p) for p in positions] if isinstance(positions, (list, tuple)) else []
    if not ps:
        return ""
    return (f'<details class="records" id="{escape(anchor)}"><summary>{escape(plural(len(ps), "record"))}'
            f'</summary>{escape(", ".join(map(str, ps)))}</details>')


def reader_table(frame: pd.DataFrame, *, max_rows: int, caption: str | None = None, anchor: str = "table") -> str:
    """``frame``'s first ``max_rows`` rows as an escaped table for readers.

    A ``label`` column (the name a reader sees, e.g. a sub-agent call's sub-agent and caller) replaces ``name``;
    internal columns and columns empty in every row are left out; position lists become a "records" link
    (``<anchor>-<row>-records``); a column the glossary defines carries its definition as the header's title.
    """
    shown = frame.head(max_rows)
    if "label" in shown.columns and "name" in shown.columns:
        shown = shown.drop(columns=["name"]).rename(columns={"label": "name"})
    keep = [c for c in shown.columns if c not in _INTERNAL and not shown[c].map(_blank).all()]
    shown = shown[keep]
    head = "".join(_th("records" if c in _POSITIONS else c) for c in shown.columns)
    rows = []
    for idx, row in zip(shown.index, shown.itertuples(index=False, name=None)):
        cells = "".join(f"<td>{records_link(v, f'{anchor}-{idx}-records')}</td>" if c in _POSITIONS
                        else labelled("td", _text(v)) for c, v in zip(shown.columns, row))
        rows.append(f"<tr><th>{escape(idx)}</th>{cells}</tr>")
    return table_html(head, rows, caption=caption, more=len(frame) - len(shown))


def _th(column: Any) -> str:
    meaning = define(str(column))
    return f'<th title="{escape(meaning)}">{escape(column)}</th>' if meaning else f"<th>{escape(column)}</th>"


def _blank(value: Any) -> bool:
    if isinstance(value, (list, tuple, dict, set)):
        return len(value) == 0
    try:
        return value is None or value == "" or bool(pd.isna(value))
    except (TypeError, ValueError):     # an array: not a blank
        return False


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)) and not any(isinstance(v, (list, tuple, dict)) for v in value):
        return ", ".join(map(str, value))
    return "" if _blank(value) else str(value)
