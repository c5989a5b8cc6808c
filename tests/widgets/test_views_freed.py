"""A view closed with every widget under it (what the live tail does to each pane it rebuilds) is freed, and the
frames it showed with it: nothing outside the view keeps one of its widgets."""

from __future__ import annotations

import gc
import weakref

import pandas as pd

import agent_inspect as ai
from agent_inspect.widgets import DataGrid, KeyHistory
from agent_inspect.widgets._style import close_view


def test_a_closed_grid_is_freed() -> None:
    grid = DataGrid(pd.DataFrame({"a": range(5)}))
    gone = weakref.ref(grid)
    grid.close()
    del grid
    gc.collect()
    assert gone() is None


def test_a_closed_key_history_is_freed() -> None:
    log = ai.load(ai.samples.path("production"))
    key = str(log.records["business_key"].dropna().iloc[0])
    view = KeyHistory(ai.reconstruct(log), key)
    gone = weakref.ref(view)
    view.close()
    del view
    gc.collect()
    assert gone() is None


def test_a_closed_log_browser_frees_its_log() -> None:
    log = ai.load(ai.samples.path("production"))
    view = ai.inspect(log)
    close_view(view)
    gone = weakref.ref(log)
    del view, log
    gc.collect()
    assert gone() is None
