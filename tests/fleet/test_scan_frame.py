"""The per-key frame's compact dtypes: what a scan's client holds per key, whatever the windows were."""

from __future__ import annotations

import json

import pandas as pd

from agent_inspect.fleet._task import compact_keys, concat_keys

TEXT = "runtime_evidence"   # a per-key text column: categorical when its values repeat


def _frame(keys: list[str], texts: list[str], flags: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"business_key": keys, "records": [6] * len(keys), "lint_flags": flags, TEXT: texts})


def _histograms(n: int, start: int = 0) -> list[str]:
    """Per-key texts, different for every key."""
    return [json.dumps({"K1.5/V3": i, "K2/V4": i % 7}) for i in range(start, start + n)]


def test_unique_texts_stay_strings_repeated_texts_become_categoricals() -> None:
    frame = compact_keys(_frame([f"k{i}" for i in range(40)], _histograms(40), ["a,b", ""] * 20))
    assert frame[TEXT].dtype == "str"
    assert isinstance(frame["lint_flags"].dtype, pd.CategoricalDtype)
    assert frame["records"].dtype == "int32"


def test_a_column_categorical_in_each_window_but_unique_overall_ends_as_strings() -> None:
    # a window of one key is categorical (one value); across 20 such windows every value differs
    windows = [compact_keys(_frame([f"k{w}"], _histograms(1, w), [""])) for w in range(20)]
    whole = pd.concat([w.astype({TEXT: "str"}) for w in windows], ignore_index=True)
    for w in windows:
        assert isinstance(w[TEXT].dtype, pd.CategoricalDtype)
    united = concat_keys(windows)
    assert united[TEXT].dtype == "str"
    pd.testing.assert_frame_equal(united, compact_keys(whole))


def test_mixed_windows_unite_to_what_the_whole_frame_would_be() -> None:
    repeated = compact_keys(_frame([f"r{i}" for i in range(30)], ['{"tools.order": 1}'] * 30, [""] * 30))
    unique = compact_keys(_frame([f"u{i}" for i in range(4)], _histograms(4, 100), [""] * 4))
    assert isinstance(repeated[TEXT].dtype, pd.CategoricalDtype)
    assert unique[TEXT].dtype == "str"
    united = concat_keys([repeated, unique])
    whole = pd.concat([repeated.astype({TEXT: "str"}), unique], ignore_index=True)
    assert isinstance(united[TEXT].dtype, pd.CategoricalDtype)  # 5 values in 34 rows
    pd.testing.assert_frame_equal(united, compact_keys(whole))
    assert united[TEXT].astype(str).tolist() == whole[TEXT].tolist()


def test_call_counts_by_function_have_the_same_width_whatever_the_history() -> None:
    """A key's durable calls executed again are one int32 count per function id: windows that never call a
    function get zeros for it, and the totals are the sums."""
    a = compact_keys(pd.DataFrame({"business_key": ["a1", "a2"], "original_reused": [0, 4], "original_calls": [3, 0],
                                   "original_calls:tools.order": [3, 0]}))
    b = compact_keys(pd.DataFrame({"business_key": ["b1"], "original_reused": [1], "original_calls": [30],
                                   "original_calls:tools.refund": [12], "original_calls:tools.order": [18]}))
    united = concat_keys([a, b])
    assert list(united.columns) == ["business_key", "original_reused", "original_calls", "original_calls:tools.order",
                                    "original_calls:tools.refund"]
    assert united["original_calls:tools.refund"].tolist() == [0, 0, 12]
    assert united["original_calls:tools.order"].tolist() == [3, 0, 18]
    assert {str(united[c].dtype) for c in united.columns if ":" in c} == {"int32"}
