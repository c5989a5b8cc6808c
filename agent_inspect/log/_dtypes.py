"""Final dtypes of the records frame: categories, masked ints and bools, UTC timestamps, plain text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

__all__ = ["categorical", "coded_categorical", "epoch_ms", "finished_columns", "masked_int", "missing_categorical",
           "utc_timestamps"]

_CATEGORIES = ("key_format", "business_key", "key_text", "key_digest", "action_uuid",
               "value_format", "task_event_class", "task_event_type", "upstream_action", "subagent_scope",
               "subagent_session_id", "subagent_call_id", "agent_key")

_INT32 = ("key_group", "output_event_count", "subagent_result_count", "sensory_update_count", "short_term_update_count", "call_count",
          "calls_pending", "calls_succeeded", "calls_failed")

_BOOL = ("value_format_inferred", "completed", "is_root")

def categorical(col: Sequence[Any] | np.ndarray | pa.Array | pa.ChunkedArray) -> pd.Categorical:
    # Arrow's dictionary encoding is several times faster than pd.Categorical on Python strings.
    arr = col if isinstance(col, (pa.Array, pa.ChunkedArray)) else pa.array(col, pa.string())
    if isinstance(arr, pa.ChunkedArray):  # one dictionary, categories in order of first appearance
        arr = arr.combine_chunks()
    return arr.dictionary_encode().to_pandas()

def coded_categorical(codes: np.ndarray, words: Sequence[str | None]) -> pd.Categorical:
    """The categorical of ``words[code]`` per row (a negative code: missing; codes may share a word), categories
    in order of first appearance: what :func:`categorical` makes of the words themselves, without a row's text."""
    seen = pa.array(codes, mask=codes < 0).dictionary_encode()  # the codes met, in order of first appearance
    met = pa.array(words, pa.string()).take(seen.dictionary).dictionary_encode()  # codes may share a word
    return pa.DictionaryArray.from_arrays(met.indices.take(seen.indices), met.dictionary).to_pandas()

def missing_categorical(n: int) -> pd.Categorical:
    """What :func:`categorical` makes of ``n`` missing values."""
    return pa.nulls(n, pa.string()).dictionary_encode().to_pandas()

def masked_int(col: Sequence[int], dtype: Any) -> pd.api.extensions.ExtensionArray:
    values = np.fromiter(col, dtype, len(col))
    return pd.arrays.IntegerArray(values, values < 0)  # every count/group/seq is >= 0; -1 = unknown

def masked_bool(col: Sequence[bool | None] | pa.Array) -> pd.api.extensions.ExtensionArray:
    arr = col if isinstance(col, pa.Array) else pa.array(col, pa.bool_())
    return pd.arrays.BooleanArray(arr.fill_null(False).to_numpy(zero_copy_only=False),
                                  arr.is_null().to_numpy(zero_copy_only=False))

#: the epoch milliseconds a record's time may hold: from the epoch (Kafka writes -1, NO_TIMESTAMP, for a record without
#: one and takes no other negative time) to the end of year 9999 (pandas formats no timestamp after it, so one such
#: record would keep a notebook from showing the log). Outside: NaT (``log.raw`` keeps the value).
_MS_MIN, _MS_MAX = 0, 253402300799999
_NAT = int(np.iinfo(np.int64).min)   # NaT's int64 value, made once (np.iinfo costs a microsecond a call)

def timestamps(col: Sequence[int | None]) -> Any:
    return utc_timestamps(epoch_ms(col))

def epoch_ms(col: Sequence[int | None]) -> np.ndarray:
    """Epoch milliseconds as int64, NaT's value for a missing timestamp or one out of range."""
    try:
        ms = np.fromiter(col, np.int64, len(col))
    except (TypeError, OverflowError):  # some record has no timestamp (a None)
        ms = np.fromiter((_NAT if v is None or not _MS_MIN <= v <= _MS_MAX else v for v in col), np.int64, len(col))
    else:
        out = (ms < _MS_MIN) | (ms > _MS_MAX)
        if out.any():
            ms[out] = _NAT
    return ms

def utc_timestamps(ms: np.ndarray) -> Any:
    """The timestamp column of :func:`epoch_ms`'s values."""
    return pd.array(ms.view("datetime64[ms]"), dtype=pd.DatetimeTZDtype("ms", "UTC"))

def finished_columns(c: dict[str, Any], n: int) -> dict[str, Any]:
    """The columns of ``c`` in their final dtypes (those already final are kept)."""
    data: dict[str, Any] = {}
    for name in c:
        col = c[name]
        if isinstance(col, (pd.Series, np.ndarray, pd.api.extensions.ExtensionArray)):
            data[name] = col  # already final (key columns built per distinct key)
        elif isinstance(col, (pa.Array, pa.ChunkedArray)) and name not in _CATEGORIES and name not in _BOOL:
            data[name] = pd.Series(col, dtype="str")  # free text made per batch (task_event_id, upstream_event_id)
        elif name == "partition":
            data[name] = np.asarray(col, dtype=np.int32)
        elif name == "offset":
            data[name] = np.asarray(col, dtype=np.int64)
        elif name == "timestamp":
            data[name] = timestamps(col)
        elif name in _CATEGORIES:
            data[name] = categorical(col)
        elif name in _INT32:
            data[name] = masked_int([-1 if v is None else v for v in col] if name == "key_group" else col,
                                     np.int32)
        elif name in ("seq", "payload_bytes"):
            data[name] = masked_int([-1 if v is None else v for v in col] if name == "seq" else col, np.int64)
        elif name in _BOOL:
            data[name] = masked_bool(col)
        elif name == "tombstone":
            data[name] = np.asarray(col, dtype=bool)
        elif name in ("output_event_types", "output_event_ids", "subagent_result_event_ids", "key_flags"):
            data[name] = np.fromiter(col, dtype=object, count=n)  # (slice assignment would look into the tuples)
        else:  # free text: state_key, event_uuid, task_event_id, upstream_event_id, error
            data[name] = pd.Series(pa.array(col, pa.string()), dtype="str")
    return data
