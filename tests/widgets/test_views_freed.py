"""A view closed is freed with every widget under it, and the frames and log it showed: nothing outside the view keeps
one of its widgets (the live tail closes each pane it rebuilds)."""

from __future__ import annotations

import gc
import weakref

import pandas as pd

import agent_inspect as ai
from agent_inspect.widgets import DataGrid, KeyHistory


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
    view.close()              # one call closes the view's whole tree
    gone = weakref.ref(log)
    del view, log
    gc.collect()
    assert gone() is None


def test_a_closed_result_inspector_frees_its_reconstruction() -> None:
    result = ai.reconstruct(ai.load(ai.samples.path("production")), markers=ai.samples.markers("production"))
    view = ai.inspect(result)
    view.close()
    gone = weakref.ref(result)
    del view, result
    gc.collect()
    assert gone() is None
