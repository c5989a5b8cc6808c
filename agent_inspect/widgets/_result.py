"""The reconstruction inspector: records, timeline, divergences and graph of the most affected key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as w
import pandas as pd

from agent_inspect._errors import InspectError
from agent_inspect._glossary import plural
from agent_inspect._html import frame_html
from agent_inspect._types import (
    ReconstructionLike,
)
from agent_inspect.widgets._browser import LogBrowser
from agent_inspect.widgets._common import first_column, message_html, records_of, runtime_html
from agent_inspect.widgets._divergence import DivergenceView
from agent_inspect.widgets._graph import GraphView, SubagentTreeView
from agent_inspect.widgets._history import KeyHistory
from agent_inspect.widgets._style import View, choices, view_style
from agent_inspect.widgets._timeline import KeyTimeline, most_affected_key

__all__ = ["ResultInspector"]

_MAX_KEYS = 200  # keys offered in the key picker


class ResultInspector(View):
    """A reconstruction in tabs: Records, History, Timeline, Divergences, Graph, Sub-agents, Lints.

    The key picker lists the keys with the most evicted or invalidated records first and drives
    the History, Timeline, Divergences, Graph and Sub-agents tabs. Picking a key (or passing ``key=``)
    shows its History, the compact one-line-per-execution view. The graph opens on the key's first
    divergent round. Tabs are built when first opened or when the key changes.

    For example::

        ai.widgets.ResultInspector(ai.reconstruct(log, markers=markers), key="user-0011")
    """

    TABS = ("Records", "History", "Timeline", "Divergences", "Graph", "Sub-agents", "Lints")

    def __init__(self, result: ReconstructionLike, key: str | None = None) -> None:
        super().__init__()
        self.add_class("ai-inspector")
        self.result = result
        keys = _ranked_keys(result)
        if key is not None:
            keys = [key, *[k for k in keys if k != key]]
        self.key_picker = w.Dropdown(description="Key", options=choices(keys), value=keys[0] if keys else None,
                                     layout=w.Layout(width="420px"))
        self.tabs = w.Tab(children=[w.VBox() for _ in self.TABS], titles=self.TABS)
        self.tabs.add_class("ai-tabs")
        self._built: dict[str, w.Widget] = {}
        self.key_picker.observe(lambda _: self._key_changed(), names="value")
        self.tabs.observe(lambda _: self._ensure(self.TABS[self.tabs.selected_index or 0]), names="selected_index")
        self.runtime = w.HTML(runtime_html(result, rule=getattr(result, "rule", None)))   # the runtime the reconstruction read the log as, and why
        self.tabs.add_class("ai-tabs")
        self.children = [self.runtime, self.key_picker, self.tabs, view_style()]
        if key is not None:
            self.view("History")
        else:
            self._ensure("Records")

    def view(self, tab: str) -> w.Widget:
        """The widget in tab ``tab`` (built now if needed); also selects that tab."""
        self.tabs.selected_index = self.TABS.index(tab)
        return self._ensure(tab)

    def _key_changed(self) -> None:
        for tab in ("History", "Timeline", "Divergences", "Graph", "Sub-agents"):
            self._built.pop(tab, None)
            self.tabs.children[self.TABS.index(tab)].children = []
        if self.tabs.selected_index in (None, 0):
            self.view("History")   # the default view of one key
        else:
            self._ensure(self.TABS[self.tabs.selected_index])

    def _ensure(self, tab: str) -> w.Widget:
        if tab in self._built:
            return self._built[tab]
        key = self.key_picker.value
        makers: dict[str, Callable[[], w.Widget]] = {
            "Records": lambda: _records_view(self.result),
            "History": lambda: KeyHistory(self.result, key),
            "Timeline": lambda: KeyTimeline(self.result, key),
            "Divergences": lambda: DivergenceView(self.result, key=key),
            "Graph": lambda: GraphView(self.result, key, _first_divergent_round(self.result, key)),
            "Sub-agents": lambda: SubagentTreeView(self.result, key),
            "Lints": lambda: _lints_view(self.result),
        }
        try:
            view = makers[tab]()
        except InspectError as exc:
            view = w.HTML(message_html(str(exc), level="warning"))
        self._built[tab] = view
        self.tabs.children[self.TABS.index(tab)].children = [view]
        return view


def _records_view(result: Any) -> LogBrowser:
    """The log browser of the Records tab, without its runtime line: the inspector shows it once above the tabs."""
    view = LogBrowser(result)
    view.runtime.layout.display = "none"
    return view


def _lints_view(result: Any) -> w.Widget:
    lints = getattr(result, "lints", None)
    if not isinstance(lints, pd.DataFrame) or lints.empty:
        view = w.HTML(message_html("no lint: none of the known format and identity hazards was found"))
    else:
        view = w.HTML(frame_html(lints, max_rows=500, caption=plural(len(lints), "lint")))
    view.add_class("ai-lints")
    return view


def _first_divergent_round(result: ReconstructionLike, key: Any) -> int | None:
    divergences = result.divergences
    if divergences.empty or "seq" not in divergences.columns:
        return None
    key_col = first_column(divergences, "business_key", "key")
    if key_col is None:
        return None
    seqs = divergences.loc[(divergences[key_col] == key).fillna(False).to_numpy(dtype=bool), "seq"].dropna()
    return int(seqs.min()) if len(seqs) else None


def _ranked_keys(result: Any) -> list[Any]:
    frame = records_of(result)
    if "business_key" not in frame.columns or frame.empty:
        return []
    first = most_affected_key(result)
    counts = frame["business_key"].value_counts(sort=True)
    if "status" in frame.columns:
        removed = frame["status"].isin(("evicted", "invalidated")).to_numpy(dtype=bool)
        affected = frame["business_key"][removed].value_counts(sort=True)
        counts = pd.concat([affected, counts.drop(affected.index, errors="ignore")])
    keys = [first, *[k for k in counts.index[:_MAX_KEYS] if k != first]]
    return [k for k in keys if k is not None]
