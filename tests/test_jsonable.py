"""The one converter of result values to JSON data (CLI --json, trace verification, diff, sample info files)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from agent_inspect._jsonable import jsonable, jsonable_rows


def test_numpy_missing_and_time_values_become_plain_json() -> None:
    value = {1: (np.int64(3), np.float64("nan"), pd.NA, pd.NaT, pd.Timestamp("2026-12-01T10:00:00Z")),
             "a": [np.bool_(True), np.array([1, 2])], "b": None}
    out = jsonable(value)
    assert out == {"1": [3, None, None, None, "2026-12-01T10:00:00+00:00"], "a": [True, [1, 2]], "b": None}
    json.dumps(out, allow_nan=False)


def test_rows_keep_column_names_and_order() -> None:
    frame = pd.DataFrame({"k": ["x", "y"], "n": pd.array([1, None], dtype="Int64")})
    assert jsonable_rows(frame) == [{"k": "x", "n": 1}, {"k": "y", "n": None}]
    assert jsonable_rows(None) == []
