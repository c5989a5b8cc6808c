"""The per-key frame's compact dtypes: what a scan's client holds per key, whatever the windows were."""

from __future__ import annotations

import json

import pandas as pd

from agent_inspect.scan._task import compact_keys, concat_keys


def _frame(keys: list[str], calls: list[str], flags: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"business_key": keys, "records": [6] * len(keys),
                         "lint_flags": flags, "original_calls_by_function": calls})


def _histograms(n: int, start: int = 0) -> list[str]:
    """Per-key calls by function, different for every key (as keys that ran many rounds have)."""
    return [json.dumps({"tools.order": i, "tools.refund": i % 7}) for i in range(start, start + n)]


def test_unique_texts_stay_strings_repeated_texts_become_categoricals() -> None:
    frame = compact_keys(_frame([f"k{i}" for i in range(40)], _histograms(40), ["a,b", ""] * 20))
    assert frame["original_calls_by_function"].dtype == "str"
    assert isinstance(frame["lint_flags"].dtype, pd.CategoricalDtype)
    assert frame["records"].dtype == "int32"


def test_a_column_categorical_in_each_window_but_unique_overall_ends_as_strings() -> None:
    # a window of one key is categorical (one value); across 20 such windows every value differs
    windows = [compact_keys(_frame([f"k{w}"], _histograms(1, w), [""])) for w in range(20)]
    whole = pd.concat([w.astype({"original_calls_by_function": "str"}) for w in windows], ignore_index=True)
    for w in windows:
        assert isinstance(w["original_calls_by_function"].dtype, pd.CategoricalDtype)
    united = concat_keys(windows)
    assert united["original_calls_by_function"].dtype == "str"
    pd.testing.assert_frame_equal(united, compact_keys(whole))


def test_mixed_windows_unite_to_what_the_whole_frame_would_be() -> None:
    repeated = compact_keys(_frame([f"r{i}" for i in range(30)], ['{"tools.order": 1}'] * 30, [""] * 30))
    unique = compact_keys(_frame([f"u{i}" for i in range(4)], _histograms(4, 100), [""] * 4))
    assert isinstance(repeated["original_calls_by_function"].dtype, pd.CategoricalDtype)
    assert unique["original_calls_by_function"].dtype == "str"
    united = concat_keys([repeated, unique])
    whole = pd.concat([repeated.astype({"original_calls_by_function": "str"}), unique], ignore_index=True)
    assert isinstance(united["original_calls_by_function"].dtype, pd.CategoricalDtype)  # 5 values in 34 rows
    pd.testing.assert_frame_equal(united, compact_keys(whole))
    assert united["original_calls_by_function"].astype(str).tolist() == whole["original_calls_by_function"].tolist()
