"""ResultView: a result that has no view of its own, shown through its notebook display hook."""

from __future__ import annotations

import ipywidgets as w

from agent_inspect._html import HtmlRepr, Table, escape, render_parts
from agent_inspect.widgets._grid import DataGrid
from agent_inspect.widgets._style import View, view_style

__all__ = ["ResultView"]


class ResultView(View):
    """A result with a notebook display but no view of its own (the replay-safety report of ``ex.report()``, a
    trace log, a token ledger, a rule-check report), drawn from the parts its display hook yields
    (``_html_parts()``, the one hook its ``_repr_html_`` reads): its sentences as escaped HTML, each of its tables
    as a :class:`DataGrid` holding every row (sorted and filtered in the kernel) instead of the first rows only.
    Each table is a ``.ai-result-table`` under its caption.

    For example::

        ex = ai.ReplayExecutor(log, markers=markers)
        ex.run()
        view = ai.widgets.ResultView(ex.report())      # or ai.inspect(ex.report())
        view.tables[0].total                           # every task, the not replay-safe ones too
    """

    def __init__(self, result: HtmlRepr) -> None:
        super().__init__()
        self.add_class("ai-result-view")
        self.result = result
        #: one grid per table of the display, in its order
        self.tables: list[DataGrid] = []
        children: list[w.Widget] = []
        for part in result._html_parts():
            if isinstance(part, Table):
                grid = DataGrid(part.frame, height=360, empty_text="no row")
                grid.add_class("ai-result-table")
                self.tables.append(grid)
                if part.caption:
                    children.append(w.HTML(f"<b>{escape(part.caption)}</b>"))
                children.append(grid)
            else:
                children.append(w.HTML(render_parts([part])))
        self.children = [*children, view_style()]
