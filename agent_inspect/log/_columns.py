"""A batch's value columns in their storage types (numpy, Arrow), made as the batch arrives.

Kafka hands the builder one chunk at a time while librdkafka fetches the next, so each chunk's rows are
turned into arrays at once: the work after the last chunk is then concatenating arrays, not walking
Python lists of every record again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from agent_inspect.codec.bulk import EMPTY_ROW, ROW_COLUMNS, ROW_ERROR, value_columns
from agent_inspect.log._dtypes import coded_categorical

__all__ = ["VALUE_ERROR", "WORD_COLUMNS", "Words", "chunk_columns", "concat_columns", "slice_columns", "take_columns"]

VALUE_ERROR = "_value_error"
"""The column of value errors ("value: <reason>"), None for a batch without any."""

WORD_COLUMNS = ("task_event_class", "task_event_type", "upstream_action")
"""Value columns of a few distinct words (the frame's categoricals): int32 codes into the build's :class:`Words`."""


class Words(dict[str | None, int]):
    """One build's words, each with the code of its first arrival; None is -1.

    A word column is kept as codes per batch, so no text is copied, joined or hashed again after the last
    batch: the frame's categorical is made from the codes (:meth:`categorical`).
    """

    def __init__(self) -> None:
        super().__init__({None: -1})

    def __missing__(self, word: str) -> int:
        code = self[word] = len(self) - 1
        return code

    def categorical(self, codes: np.ndarray) -> pd.Categorical:
        """The categorical of a column of codes, categories in order of first appearance (as Arrow makes them)."""
        return coded_categorical(codes, list(self)[1:])  # code c is entry c + 1 (None, -1, comes first)


_TEXT = frozenset({"task_event_id", "upstream_event_id"})
_WORDS = frozenset(WORD_COLUMNS)
_INT32 = frozenset({"output_event_count", "subagent_result_count", "sensory_update_count", "short_term_update_count",
                    "calls_pending", "calls_succeeded", "calls_failed"})
_INT64 = frozenset({"_mask", "payload_bytes"})
_OBJECTS = frozenset({"output_event_types", "output_event_ids", "subagent_result_event_ids"})


def chunk_columns(values: list[bytes | None], words: Words) -> dict[str, Any]:
    """The value columns of one batch's values (see ROW_COLUMNS) as arrays, and its value errors.

    The columns of :data:`WORD_COLUMNS` are codes into ``words`` (one table for every batch of a build).
    """
    cols = value_columns(values)
    n = len(values)
    errors: list[str | None] | None = None
    if ROW_ERROR in cols[0]:  # rare: values that do not decode keep only their size
        errors = [None] * n
        for i in [i for i, first in enumerate(cols[0]) if first is ROW_ERROR]:
            errors[i] = f"value: {cols[1][i]}"
            for col, empty in zip(cols[:-1], EMPTY_ROW):
                col[i] = empty
    out: dict[str, Any] = {}
    code = words.__getitem__
    for name, col in zip(ROW_COLUMNS, cols):
        if name == "_problem":
            if col.count(None) != n:  # the record decodes, so its columns stay, but upstream would refuse it
                errors = errors or [None] * n
                for i, problem in enumerate(col):
                    if problem is not None:
                        errors[i] = f"value: {problem}"
        elif name in _WORDS:
            out[name] = np.full(n, code(col[0]), np.int32) if _uniform(col) else np.fromiter(map(code, col), np.int32, n)
        elif name in _TEXT:
            out[name] = pa.array(col, pa.string())
        elif name in _INT32:
            out[name] = np.full(n, col[0], np.int32) if _uniform(col) else np.fromiter(col, np.int32, n)
        elif name in _INT64:
            out[name] = np.full(n, col[0], np.int64) if _uniform(col) else np.fromiter(col, np.int64, n)
        elif name in _OBJECTS:
            out[name] = np.fromiter(col, dtype=object, count=n)  # (slice assignment would look into the tuples)
        else:  # completed: True, False or None
            out[name] = pa.array(col, pa.bool_())
    out[VALUE_ERROR] = errors
    return out


def _uniform(col: list[Any]) -> bool:
    """Whether every cell equals the first (a class, a count that is always 0): one C compare a cell, not a lookup
    and a conversion each. The ends are looked at first, so a mixed column costs little."""
    return bool(col) and col[-1] == col[0] and col.count(col[0]) == len(col)


def slice_columns(cols: dict[str, Any], start: int, end: int, names: Iterable[str] | None = None) -> dict[str, Any]:
    """Rows ``start:end`` of a batch's columns (``names``: only those; views where the storage allows)."""
    return {name: _slice(cols[name], start, end) for name in (cols if names is None else names)}


def _slice(col: Any, start: int, end: int) -> Any:
    if col is None:
        return None
    if isinstance(col, pa.Array):
        return col.slice(start, end - start)
    return col[start:end]


def concat_columns(parts: Sequence[dict[str, Any]], lengths: Sequence[int]) -> dict[str, Any]:
    """Batches' columns one after the other (``lengths``: each part's rows)."""
    if len(parts) == 1:
        return dict(parts[0])
    out: dict[str, Any] = {}
    for name in parts[0]:
        cols = [p[name] for p in parts]
        first = cols[0]
        if isinstance(first, np.ndarray):
            out[name] = np.concatenate(cols)
        elif isinstance(first, (pa.Array, pa.ChunkedArray)):
            out[name] = _concat_arrow(cols)
        elif all(c is None for c in cols):  # the value errors of clean batches
            out[name] = None
        else:
            out[name] = list(chain.from_iterable([None] * k if c is None else c for c, k in zip(cols, lengths)))
    return out


def _concat_arrow(cols: list[Any]) -> Any:
    chunks = [c for col in cols for c in (col.chunks if isinstance(col, pa.ChunkedArray) else (col,))]
    if pa.types.is_string(chunks[0].type):  # free text stays in its batches' buffers: a join would copy every byte
        return pa.chunked_array(chunks, chunks[0].type)
    try:
        return pa.concat_arrays(chunks)
    except (pa.ArrowInvalid, pa.ArrowCapacityError):  # over 2 GiB of text: one column in several chunks
        return pa.chunked_array(chunks, chunks[0].type)


def take_columns(cols: dict[str, Any], order: list[int]) -> dict[str, Any]:
    """The columns reordered by ``order``."""
    index = np.asarray(order, dtype=np.int64)
    arrow_index = pa.array(index)
    out: dict[str, Any] = {}
    for name, col in cols.items():
        if col is None:
            out[name] = None
        elif isinstance(col, np.ndarray):
            out[name] = col[index]
        elif isinstance(col, (pa.Array, pa.ChunkedArray)):
            out[name] = col.take(arrow_index)
        else:
            out[name] = [col[i] for i in order]
    return out
