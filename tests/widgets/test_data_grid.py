"""The kernel-side grid: sort, filter and the shipped window are computed in Python over the whole frame."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_inspect.widgets import DataGrid
from agent_inspect.widgets._grid import cell_text, filter_mask, sort_order, window_cells


def _frame(n: int = 1000) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return pd.DataFrame({
        "seq": rng.integers(0, 50, n),
        "key": np.array([f"user-{i}" for i in rng.integers(0, 30, n)], dtype=object),
        "status": pd.Categorical(rng.choice(["live", "evicted", "superseded"], n)),
        "score": np.where(rng.random(n) < 0.1, np.nan, rng.random(n)),
    }, index=np.arange(100, 100 + n))


def test_sort_matches_pandas_and_puts_missing_values_last():
    frame = _frame()
    for column in ("seq", "key", "status", "score"):
        for descending in (False, True):
            order = sort_order(frame, column, descending=descending)
            expected = frame.reset_index(drop=True).sort_values(
                column, ascending=not descending, kind="stable", na_position="last",
                key=(lambda s: s.astype(str)) if column == "status" else None)
            assert list(order) == list(expected.index), (column, descending)


def test_sort_of_a_row_subset_keeps_only_those_rows():
    frame = _frame()
    rows = np.arange(0, 1000, 3)
    order = sort_order(frame, "seq", rows=rows)
    assert sorted(order) == list(rows)
    assert list(frame["seq"].iloc[order]) == sorted(frame["seq"].iloc[rows])


@settings(deadline=None, max_examples=40)
@given(low=st.integers(-5, 60), width=st.integers(0, 20), text=st.sampled_from(["user-1", "USER-2", "ev", "x"]))
def test_filters_match_a_pandas_query(low, width, text):
    frame = _frame()
    mask = filter_mask(frame, {"seq": f"{low}-{low + width}", "key": text})
    expected = (frame["seq"].between(low, low + width)) & frame["key"].str.casefold().str.contains(text.casefold())
    assert mask is not None and list(mask) == list(expected)


def test_numeric_comparisons_and_text_on_categories():
    frame = _frame()
    assert list(filter_mask(frame, {"seq": ">45"})) == list(frame["seq"] > 45)
    assert list(filter_mask(frame, {"seq": "<=3"})) == list(frame["seq"] <= 3)
    assert list(filter_mask(frame, {"seq": "!=7"})) == list(frame["seq"] != 7)
    assert list(filter_mask(frame, {"seq": "7"})) == list(frame["seq"] == 7)
    assert list(filter_mask(frame, {"status": "EVICT"})) == list(frame["status"] == "evicted")
    assert filter_mask(frame, {"seq": " ", "nope": "x"}) is None


def test_the_grid_ships_only_its_window_and_follows_sort_and_filter():
    frame = _frame(100_000)
    grid = DataGrid(frame, columns=["seq", "key", "status"], index="pos")
    assert grid.columns == ["pos", "seq", "key", "status"]
    assert len(grid.window["cells"]) == 60 and grid.total == 100_000
    assert len(json.dumps(grid.window)) < 10_000  # a window, not the frame
    grid.viewport = [5000, 30]
    assert grid.window["start"] == 5000 and grid.window["ids"] == list(range(5000, 5030))
    assert grid.window["cells"][0] == [str(frame.index[5000]), str(frame["seq"].iloc[5000]),
                                       frame["key"].iloc[5000], str(frame["status"].iloc[5000])]
    grid.sort_by("seq", descending=True)
    assert grid.window["start"] == 0  # a new sort scrolls back to the top
    assert [int(r[1]) for r in grid.window["cells"]] == sorted(frame["seq"], reverse=True)[:30]
    grid.set_filter("key", "user-3")
    expected = frame[frame["key"].map(lambda k: "user-3" in k).astype(bool)]
    assert grid.total == len(expected)
    assert list(grid.shown.index) == list(expected.sort_values("seq", ascending=False, kind="stable").index)
    grid.set_filter("pos", "100-104")  # the index column filters too
    assert set(grid.shown.index) <= set(range(100, 105))


def test_rows_restrict_and_no_match_names_the_column_filters():
    frame = _frame()
    grid = DataGrid(frame, empty_text="nothing here")
    grid.set_rows(np.array([3, 1, 2]))
    assert grid.window["ids"] == [3, 1, 2]
    grid.set_filter("key", "no such key")
    assert grid.total == 0 and grid.message == "no row matches the column filters: key ~ no such key"
    grid.set_filter("key", "")
    grid.set_rows(np.array([], dtype=np.int64))
    assert grid.message == "nothing here"


def test_a_click_message_calls_back_with_the_row():
    frame = _frame()
    grid = DataGrid(frame)
    seen = []
    grid.on_select(lambda label, row: seen.append((label, row["key"])))
    grid._on_message(grid, {"type": "select", "row": 4}, [])  # what grid.js sends on a click
    grid._on_message(grid, {"type": "select", "row": 10**9}, [])  # out of range: ignored
    assert seen == [(104, frame["key"].iloc[4])] and grid.selected == 4
    with pytest.raises(IndexError):
        grid.select(-1)


def test_cells_are_plain_text_of_the_values():
    frame = pd.DataFrame({"a": [None, float("nan"), True, [1, "<b>"], b"\xff<i>"], "b": ["<img src=x>", "", "x", "y", "z"]})
    cells = window_cells(frame, ["a", "b"], np.arange(5))
    assert cells == [["", "<img src=x>"], ["", ""], ["yes", "x"], ["1, <b>", "y"], ["\ufffd<i>", "z"]]
    assert cell_text(pd.NA) == ""
    order = sort_order(frame, "a")  # unhashable lists sort by their text
    assert sorted(order) == list(range(5))
