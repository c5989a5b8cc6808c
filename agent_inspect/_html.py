"""HTML helpers shared by every ``_repr_html_``, widget and the report.

Every string that came from a record is untrusted: it goes through :func:`escape` (or
:func:`frame_html`, which escapes every cell and header) before it reaches HTML.
"""

from __future__ import annotations

import html
from typing import Any

__all__ = ["escape", "plotly_text", "frame_html"]


def escape(value: Any) -> str:
    """HTML-escape ``str(value)``, quotes included (safe in text and in attribute values)."""
    return html.escape("" if value is None else str(value), quote=True)


def plotly_text(value: Any) -> str:
    """Escape ``str(value)`` for plotly text (hover, labels, trace names), which plotly reads as HTML.

    Plotly knows numeric entities but not ``&quot;``, so quotes become ``&#34;`` / ``&#39;``: inert
    and still shown as quotes.
    """
    text = html.escape("" if value is None else str(value), quote=False)
    return text.replace('"', "&#34;").replace("'", "&#39;")


def frame_html(frame: Any, *, max_rows: int = 20, caption: str | None = None) -> str:
    """A small escaped HTML table of the first ``max_rows`` rows of a DataFrame."""
    shown = frame.head(max_rows)
    head = "".join(f"<th>{escape(c)}</th>" for c in shown.columns)
    rows = []
    for idx, row in zip(shown.index, shown.itertuples(index=False, name=None)):
        cells = "".join(f"<td>{escape(_cell(v))}</td>" for v in row)
        rows.append(f"<tr><th>{escape(idx)}</th>{cells}</tr>")
    more = len(frame) - len(shown)
    foot = f"<p>… {more} more rows</p>" if more > 0 else ""
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return (f'<table class="agent-inspect">{cap}<thead><tr><th></th>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>{foot}")


def _cell(value: Any) -> Any:
    try:
        import pandas as pd

        if value is None or (not isinstance(value, (list, tuple, dict)) and pd.isna(value)):
            return ""
    except (TypeError, ValueError):
        pass
    return value
