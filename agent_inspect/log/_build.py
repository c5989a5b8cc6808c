"""The log builder: raw batches to the canonical records frame, decoding each batch as it arrives."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from typing import Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from agent_inspect.codec import SUBAGENT_EVENT, VALUE_FORMATS
from agent_inspect.codec.bulk import (
    FLAG_AMBIGUOUS,
    INPUT_EVENT_TYPE,
    KEY_ARRAY_FIELDS,
    LINEAGE_RULE_BIT,
    NO_FLAGS,
    SUBAGENT_EVENT_TYPE,
    error_reason,
    key_field_arrays,
    newest_format,
    resolve_key_fields,
    subagent_call_ids,
)
from agent_inspect.log._columns import (
    VALUE_ERROR,
    WORD_COLUMNS,
    Words,
    chunk_columns,
    concat_columns,
    slice_columns,
    take_columns,
)
from agent_inspect.log._dtypes import (
    coded_categorical,
    epoch_ms,
    finished_columns,
    missing_categorical,
    utc_timestamps,
)
from agent_inspect.raw import RawBatch

__all__ = ["COLUMNS", "build_records", "concat_batches", "physical_order"]

COLUMNS = (
    "partition", "offset", "timestamp", "state_key", "key_format", "key_group", "business_key", "key_text",
    "key_digest", "seq", "event_uuid", "action_uuid", "tombstone", "value_format", "value_format_inferred",
    "value_format_lineage_rule", "completed", "task_event_class", "task_event_type", "task_event_id",
    "upstream_event_id", "upstream_action", "is_root", "output_event_count", "output_event_types",
    "output_event_ids", "subagent_result_count", "subagent_result_event_ids", "sensory_update_count", "short_term_update_count", "call_count", "calls_pending", "calls_succeeded",
    "calls_failed", "subagent_scope", "subagent_session_id", "subagent_call_id", "payload_bytes",
    "key_flags", "agent_key", "error",
)
"""Columns of :attr:`ActionStateLog.records`, in order."""


def build_records(batches: RawBatch | Iterable[RawBatch], *, key_format: str | None,
                  max_parallelism: int | None) -> tuple[RawBatch, pd.DataFrame]:
    """The batches joined in physical order and their records frame (call under ``gc_paused``)."""
    keys, join_values, join_raw = _gather(batches)
    return _build(keys, join_values, join_raw, key_format=key_format, max_parallelism=max_parallelism)


def concat_batches(batches: RawBatch | Iterable[RawBatch]) -> RawBatch:
    """The batches one after the other, as one new batch."""
    return _concat(batches)


def physical_order(raw: RawBatch) -> RawBatch:
    """The batch in physical order: partitions ascending, then offset (stable for equal positions)."""
    return _sorted(raw)


_RAW_FIELDS = ("partition", "offset", "timestamp_ms", "key", "value")

def _concat(batches: RawBatch | Iterable[RawBatch]) -> RawBatch:
    """The batches one after the other, as one new batch."""
    batches = [batches] if isinstance(batches, RawBatch) else list(batches)
    return _joined_raw([(b, 0, len(b)) for b in batches], with_agent_key=any(b.agent_key is not None for b in batches))

def _joined_raw(pieces: Iterable[tuple[RawBatch, int, int]], *, with_agent_key: bool) -> RawBatch:
    """One new batch from slices ``(batch, start, end)`` of batches, in that order."""
    pieces = list(pieces)

    def join(columns: Iterable[tuple[Sequence[Any], int, int]]) -> list[Any]:
        out: list[Any] = []
        for col, a, z in columns:  # list += list copies references in C (chain() would step through each)
            out += col if a == 0 and z == len(col) else col[a:z]
        return out

    raw = RawBatch(*(join((getattr(b, name), a, z) for b, a, z in pieces) for name in _RAW_FIELDS))
    if with_agent_key:
        raw.agent_key = join((b.agent_key if b.agent_key is not None else [None] * len(b), a, z)
                             for b, a, z in pieces)
    return raw

def _physical_order(raw: RawBatch) -> list[int] | None:
    """The permutation into physical order (partitions ascending, then offset; stable), None if already so."""
    return _order_of(np.asarray(raw.partition, dtype=np.int64), np.asarray(raw.offset, dtype=np.int64))

def _order_of(part: np.ndarray, off: np.ndarray) -> list[int] | None:
    if len(part) < 2:
        return None
    dp, do = np.diff(part), np.diff(off)
    if bool(np.all((dp > 0) | ((dp == 0) & (do >= 0)))):
        return None
    order: list[int] = np.lexsort((off, part)).tolist()
    return order

def _take(raw: RawBatch, order: list[int]) -> RawBatch:
    take = _taker(order)
    return RawBatch(take(raw.partition), take(raw.offset), take(raw.timestamp_ms), take(raw.key),
                    take(raw.value), None if raw.agent_key is None else take(raw.agent_key))

def _taker(order: list[int]) -> Callable[[Sequence[Any]], list[Any]]:
    """A function reordering a column by ``order`` (itemgetter loops in C, several times a comprehension's speed)."""
    if len(order) == 1:
        return lambda col: [col[order[0]]]
    get = itemgetter(*order)
    return lambda col: list(get(col))

def _sorted(raw: RawBatch) -> RawBatch:
    """Physical order: partitions ascending, then offset (stable for equal positions)."""
    order = _physical_order(raw)
    return raw if order is None else _take(raw, order)

def _partition_runs(part: np.ndarray) -> list[tuple[int, int, int]] | None:
    """``(partition, start, end)`` of each run of one partition, or None when runs are too short to pay."""
    n = len(part)
    if n == 0:
        return []
    cuts = np.flatnonzero(part[1:] != part[:-1]) + 1
    if len(cuts) > n // 64 + 8:
        return None
    bounds = [0, *cuts.tolist(), n]
    return [(int(part[a]), a, z) for a, z in zip(bounds, bounds[1:])]

def _gather(batches: RawBatch | Iterable[RawBatch]
            ) -> tuple[pa.ChunkedArray, Callable[[], dict[str, Any]], Callable[[], RawBatch]]:
    """All records' keys (Arrow) in physical order, and functions joining their value columns and raw batches so.

    Each batch is done as it arrives: sources hand batches over while still reading (Kafka fetches in the
    background), so the decode overlaps the transfer instead of following it, and keys are copied out while
    still in cache. Batches may mix partitions (Kafka chunks): their runs go to their partition's bucket,
    so the buckets in partition order are the physical order. The value columns and raw batches are joined
    later, by the returned functions: the key columns (Arrow, mostly without the GIL) can start before.
    """
    if isinstance(batches, RawBatch):
        batches = [batches]
    buckets: dict[int, list[tuple[RawBatch, dict[str, Any], int, int]]] = {}
    arrival: list[tuple[RawBatch, dict[str, Any], int, int]] = []
    bucketed = True
    words = Words()
    for b in batches:
        cols = chunk_columns(b.value, words)
        cols[_KEYS] = pa.array(b.key, pa.binary())
        cols[_PARTITIONS] = np.asarray(b.partition, dtype=np.int64)
        cols[_OFFSETS] = np.asarray(b.offset, dtype=np.int64)
        cols[_TIMES] = epoch_ms(b.timestamp_ms)
        arrival.append((b, cols, 0, len(b)))
        runs = _partition_runs(cols[_PARTITIONS]) if bucketed else None
        if runs is None:
            bucketed = False
            continue
        for p, a, z in runs:
            buckets.setdefault(p, []).append((b, cols, a, z))
    pieces = [piece for p in sorted(buckets) for piece in buckets[p]] if bucketed else arrival
    with_agent_key = any(b.agent_key is not None for b, _, _, _ in arrival)
    names = [name for name in (pieces[0][1] if pieces else _empty_columns()) if name not in _POSITION]
    # the keys stay in their batches' arrays (joined, 40+ bytes a record, they would hold up the key thread)
    keys = _chunked_keys(pieces)
    where = _joined_columns(pieces, (_PARTITIONS, _OFFSETS), drop=True)
    # offsets out of order within a partition (rare), or batches not bucketed
    order = _order_of(where[_PARTITIONS], where[_OFFSETS])
    if order is not None:
        where = take_columns(where, order)
        keys = keys.take(pa.array(order, pa.int64()))

    def join_values() -> dict[str, Any]:
        cols = _joined_columns(pieces, names, drop=True)
        if order is not None:
            cols = take_columns(cols, order)
        for name in WORD_COLUMNS:
            cols[name] = words.categorical(cols[name])
        cols[_PARTITIONS], cols[_OFFSETS] = where[_PARTITIONS], where[_OFFSETS]
        return cols

    def join_raw() -> RawBatch:
        raw = _joined_raw_batch(pieces, with_agent_key=with_agent_key)
        pieces.clear()
        return raw if order is None else _take(raw, order)

    return keys, join_values, join_raw

_KEYS, _PARTITIONS, _OFFSETS, _TIMES = "_keys", "_partitions", "_offsets", "_times"
_POSITION = (_KEYS, _PARTITIONS, _OFFSETS)

def _chunked_keys(pieces: list[tuple[RawBatch, dict[str, Any], int, int]]) -> pa.ChunkedArray:
    """The pieces' keys in their order, as slices of their batches' arrays (taken out of the batches' columns)."""
    chunks = [c[_KEYS].slice(a, z - a) for _, c, a, z in pieces]
    for _, c, _, _ in pieces:
        c.pop(_KEYS, None)
    return pa.chunked_array(chunks, pa.binary())

def _empty_columns() -> dict[str, Any]:
    cols = chunk_columns([], Words())
    cols[_KEYS] = pa.array([], pa.binary())
    cols[_PARTITIONS] = cols[_OFFSETS] = cols[_TIMES] = np.zeros(0, dtype=np.int64)
    return cols

def _whole(pieces: list[tuple[RawBatch, dict[str, Any], int, int]]) -> bool:
    """Whether the pieces are one batch's runs in order, all of it (taken as is: a copy would touch every record)."""
    first = pieces[0][0]
    bounds = [0, *(z for _, _, _, z in pieces)]
    return all(b is first for b, _, _, _ in pieces) and [a for _, _, a, _ in pieces] == bounds[:-1] \
        and bounds[-1] == len(first)

def _joined_columns(pieces: list[tuple[RawBatch, dict[str, Any], int, int]], names: Iterable[str], *,
                    drop: bool) -> dict[str, Any]:
    """The columns ``names`` joined from slices of batches' columns (``drop``: then dropped from the batches')."""
    names = list(names)
    if not pieces:
        empty = _empty_columns()
        return {name: empty[name] for name in names}
    if _whole(pieces):
        out = {name: pieces[0][1][name] for name in names}
    else:
        out = concat_columns([{name: c[name] for name in names} if (a, z) == (0, len(b))
                              else slice_columns(c, a, z, names) for b, c, a, z in pieces],
                             [z - a for _, _, a, z in pieces])
    if drop:  # the batches' own copies would stay alive (memory) while the log is built
        for _, c, _, _ in pieces:
            for name in names:
                c.pop(name, None)
    return out

def _joined_raw_batch(pieces: list[tuple[RawBatch, dict[str, Any], int, int]], *, with_agent_key: bool) -> RawBatch:
    """One batch from slices of batches (the log owns it)."""
    if not pieces:
        return RawBatch(agent_key=[] if with_agent_key else None)
    if _whole(pieces):
        first = pieces[0][0]
        if with_agent_key and first.agent_key is None:  # another (empty) batch had the column
            first = RawBatch(first.partition, first.offset, first.timestamp_ms, first.key, first.value,
                             [None] * len(first))
        return first
    return _joined_raw(((b, a, z) for b, _, a, z in pieces), with_agent_key=with_agent_key)

def _build(key_array: pa.ChunkedArray, join_values: Callable[[], dict[str, Any]], join_raw: Callable[[], RawBatch],
           *, key_format: str | None, max_parallelism: int | None) -> tuple[RawBatch, pd.DataFrame]:
    n = len(key_array)
    # The key columns are Arrow work that mostly runs without the GIL: a thread builds them while this
    # one finishes the value columns (on a machine with a second core they overlap).
    key_errors: list[str | None] = [None] * n
    keys_done: dict[str, Any] = {}

    def key_columns() -> None:
        try:
            keys_done["ready"] = _key_columns(key_array, key_errors, key_format=key_format,
                                              max_parallelism=max_parallelism)
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            keys_done["error"] = exc

    worker = threading.Thread(target=key_columns, name="agent-inspect-keys", daemon=True)
    worker.start()
    try:
        cols = join_values()  # while the key thread runs
        raw = join_raw()
        c, masks, value_errors = _value_part(raw, cols)
    finally:
        worker.join()
    if "error" in keys_done:
        raise keys_done["error"]
    ready = keys_done["ready"]
    errors = key_errors
    if ready is None:  # ambiguous layouts are settled per partition, record by record
        errors = [None] * n
        keys = resolve_key_fields(raw.key, raw.partition, prefer=key_format, max_parallelism=max_parallelism)
        good = [k if type(k) is tuple else _NO_KEY for k in keys]
        for i, k in enumerate(keys):
            if type(k) is not tuple:
                errors[i] = _key_error(k)
        (c["key_format"], c["key_group"], c["seq"], c["event_uuid"], c["action_uuid"], c["key_text"],
         c["key_digest"], _, c["key_flags"]) = (list(col) for col in zip(*good)) if n else ([],) * 9
        c["business_key"] = [k[5] if k[5] is not None else k[6] for k in good]
        c["state_key"] = [None if k is None else k.decode("utf-8", "replace") for k in raw.key]
        business_keys = c["business_key"]
    else:
        business_keys = ready.pop("_business_codes")
        c.update(ready)
    for i, reason in value_errors:  # a record's key reason comes first
        errors[i] = reason if errors[i] is None else f"{errors[i]}; {reason}"
    c["value_format"], c["value_format_inferred"] = _settle_formats(masks, business_keys, c["partition"])
    c["error"] = errors
    return raw, _frame(c, n)

def _value_part(raw: RawBatch, cols: dict[str, Any]) -> tuple[dict[str, Any], Any, list[tuple[int, str]]]:
    """The columns that come from values and positions (final dtypes), the format masks and the value errors."""
    n = len(raw)
    c = dict(cols)
    errors = c.pop(VALUE_ERROR)
    value_errors = [] if errors is None else [(i, e) for i, e in enumerate(errors) if e is not None]
    masks = c.pop("_mask")
    ruled = (masks & LINEAGE_RULE_BIT) != 0
    masks &= ~LINEAGE_RULE_BIT
    c["value_format_lineage_rule"] = pd.arrays.BooleanArray(ruled, masks == 0)
    type_col, class_col = c["task_event_type"], c["task_event_class"]
    counts = {name: c[name] for name in _COUNTS}  # -1: no decoded value
    for name, count in counts.items():
        c[name] = pd.arrays.IntegerArray(count, count < 0)
    decoded = counts["output_event_count"] >= 0  # a value that decoded (not a tombstone)
    c["is_root"] = pd.arrays.BooleanArray((type_col == INPUT_EVENT_TYPE).to_numpy(dtype=bool, na_value=False), ~decoded)
    calls = counts["calls_pending"] + counts["calls_succeeded"] + counts["calls_failed"]
    c["call_count"] = pd.arrays.IntegerArray(np.where(decoded, calls, -1), ~decoded)
    if SUBAGENT_EVENT in class_col.cat.categories or SUBAGENT_EVENT_TYPE in type_col.cat.categories:
        scope: list[str | None] = [None] * n
        session: list[str | None] = [None] * n
        call: list[str | None] = [None] * n
        values, type_list = raw.value, type_col.tolist()
        for i, cls in enumerate(class_col.tolist()):
            if cls == SUBAGENT_EVENT or type_list[i] == SUBAGENT_EVENT_TYPE:
                scope[i], session[i], call[i] = subagent_call_ids(cast(bytes, values[i]))  # a call event has a value
        c["subagent_scope"], c["subagent_session_id"], c["subagent_call_id"] = scope, session, call
    else:  # most logs: no sub-agent call
        for name in ("subagent_scope", "subagent_session_id", "subagent_call_id"):
            c[name] = missing_categorical(n)
    size = c["payload_bytes"]
    c["payload_bytes"] = pd.arrays.IntegerArray(size, size < 0)  # -1: a tombstone
    c["tombstone"] = size < 0
    c["partition"] = c.pop(_PARTITIONS).astype(np.int32)  # made per batch
    c["offset"] = c.pop(_OFFSETS)
    c["timestamp"] = utc_timestamps(c.pop(_TIMES))  # made per batch
    c["agent_key"] = raw.agent_key if raw.agent_key is not None else missing_categorical(n)
    return finished_columns(c, n), masks, value_errors

def _key_error(k: Any) -> str:
    return "key: missing (record has no key)" if k is None else f"key: {error_reason(k)}"

_COUNTS = ("output_event_count", "subagent_result_count", "sensory_update_count", "short_term_update_count", "calls_pending",
           "calls_succeeded", "calls_failed")

_KEY_CATEGORIES = ("key_format", "action_uuid", "key_text", "key_digest", "business_key")

_KEY_ARRAY_TYPES = (pa.string(), pa.int64(), pa.int64(), pa.string(), pa.string(), pa.string(), pa.string())

def _key_columns(keys: pa.ChunkedArray, errors: list[str | None], *, key_format: str | None,
                 max_parallelism: int | None) -> dict[str, Any] | None:
    """The key columns, final dtypes, from each distinct key once; None when a layout is ambiguous.

    A state key is written two or more times (initial, calls, completed), so the distinct keys are
    parsed (the common shapes in bulk by Arrow, the rest one by one) and rows take them by code.
    Categories keep first-appearance order.
    """
    encoded = _dictionary_encoded(keys)
    codes = encoded.indices  # null for a missing key
    try:
        texts = encoded.dictionary.cast(pa.string())
    except pa.ArrowInvalid:  # some key is not UTF-8: the one-by-one parser names it
        texts = None
    d: dict[str, Any]
    if texts is not None and key_format is None:
        parsed, d, flags = key_field_arrays(texts, max_parallelism)
    else:  # every key one by one (a preferred layout, or bytes that are not UTF-8)
        parsed = np.zeros(len(encoded.dictionary), dtype=bool)
        d = {name: pa.nulls(len(parsed), typ) for name, typ in zip(KEY_ARRAY_FIELDS, _KEY_ARRAY_TYPES)}
        flags = np.empty(len(parsed), dtype=object)
    slow = np.flatnonzero(~parsed)
    if len(slow):
        distinct = encoded.dictionary.take(pa.array(slow)).to_pylist()
        fields = resolve_key_fields(distinct, None, prefer=key_format, max_parallelism=max_parallelism)
        if any(type(f) is tuple and FLAG_AMBIGUOUS in f[8] for f in fields):
            return None
        good = [f if type(f) is tuple else _NO_KEY for f in fields]
        if not all(type(f) is tuple for f in fields):
            bad = np.full(len(parsed), None, dtype=object)
            bad[slow] = [None if type(f) is tuple else _key_error(f) for f in fields]
            valid = codes.is_valid().to_numpy(zero_copy_only=False).tolist()
            for i, j in enumerate(codes.fill_null(0).to_numpy().tolist()):
                if bad[j] is not None and valid[i]:
                    errors[i] = bad[j]
        slow_cols = list(zip(*good))
        mask = pa.array(~parsed)
        for name, col, typ in zip(KEY_ARRAY_FIELDS, slow_cols, _KEY_ARRAY_TYPES):
            values = pa.array(col, typ)
            d[name] = values if len(slow) == len(parsed) else pc.replace_with_mask(d[name], mask, values)
        flags[slow] = list(slow_cols[8])
    no_digest = d["key_digest"].null_count == len(d["key_digest"])  # K1 and K1.5 logs
    d["business_key"] = d["key_text"] if no_digest else pc.coalesce(d["key_text"], d["key_digest"])
    out: dict[str, Any] = {}
    made: dict[int, pa.DictionaryArray] = {}  # by column: without digests, the business key is the key text
    for name in _KEY_CATEGORIES:
        rows = made.get(id(d[name]))
        if rows is None:
            enc = d[name].dictionary_encode()
            rows = made[id(d[name])] = pa.DictionaryArray.from_arrays(enc.indices.take(codes), enc.dictionary)
        out[name] = rows.to_pandas()
        if name == "business_key":
            out["_business_codes"] = rows.indices.fill_null(-1).to_numpy()
    for name, dtype in (("key_group", np.int32), ("seq", np.int64)):
        values = d[name].take(codes).fill_null(-1).to_numpy().astype(dtype)
        out[name] = pd.arrays.IntegerArray(values, values < 0)
    if codes.null_count:
        missing = _key_error(None)
        for i in np.flatnonzero(codes.is_null().to_numpy(zero_copy_only=False)).tolist():
            errors[i] = missing
        flags = np.append(flags, np.array([None], dtype=object))
        flags[-1] = NO_FLAGS
        take = codes.fill_null(len(flags) - 1).to_numpy()
    else:
        take = codes.to_numpy()
    out["key_flags"] = flags[take]
    out["event_uuid"] = pd.Series(d["event_uuid"].take(codes), dtype="str")
    state_keys = keys.cast(pa.string()) if texts is not None else pa.array(  # (UTF-8 keys: the bytes as they are)
        [k.decode("utf-8", "replace") for k in encoded.dictionary.to_pylist()], pa.string()).take(codes)
    out["state_key"] = pd.Series(state_keys, dtype="str")
    return out

_NO_KEY = (None,) * 8 + (NO_FLAGS,)

def _dictionary_encoded(keys: pa.ChunkedArray) -> pa.DictionaryArray:
    """The keys dictionary-encoded as one array (every chunk's dictionary is the whole one, in first-seen order)."""
    if keys.num_chunks == 1:
        encoded: pa.DictionaryArray = keys.chunk(0).dictionary_encode()
        return encoded
    chunks = keys.dictionary_encode().chunks
    if not chunks:  # (Arrow drops empty chunks)
        return pa.array([], pa.binary()).dictionary_encode()
    return pa.DictionaryArray.from_arrays(pa.concat_arrays([c.indices for c in chunks]), chunks[-1].dictionary)

def _settle_formats(masks: Sequence[int], business_keys: Sequence[Any] | np.ndarray,
                    partitions: Sequence[int] | np.ndarray) -> tuple[pd.Categorical, pd.api.extensions.ExtensionArray]:
    """Pinned records keep their format; the others take their key's, else their partition's (§2.2).

    A record whose value fits several formats takes, among those, the one its business key's pinned
    records show most often (ties: the newer), else the same among its partition's pinned records,
    else the newest it fits. Returns the format ids and the ``value_format_inferred`` column.
    """
    m = np.asarray(masks, dtype=np.int64)
    n = len(m)
    present = m != 0
    pinned = present & ((m & (m - 1)) == 0)
    open_rows = np.flatnonzero(present & ~pinned)
    names = [None, *(newest_format(v) for v in range(1, 1 << len(VALUE_FORMATS)))]  # by mask
    chosen = m.copy()
    if len(open_rows):
        chosen[open_rows] = 0
        bits = [1 << i for i in range(len(VALUE_FORMATS))]
        span = 1 << len(VALUE_FORMATS)
        pinned_bit = {b: pinned & (m == b) for b in bits}
        for codes in (_codes(business_keys), _codes(partitions)):
            todo = open_rows[chosen[open_rows] == 0]
            if not len(todo):
                break
            size = int(codes.max()) + 1
            want = m[todo]
            best = np.zeros(len(todo), dtype=np.int64)  # score: pinned count * span + bit, so ties go to the newer
            for b in bits:
                count = np.bincount(codes[pinned_bit[b]], minlength=size)[codes[todo]]
                score = np.where((want & b != 0) & (count > 0), count * span + b, 0)
                best = np.maximum(best, score)
            chosen[todo] = best % span
        undecided = open_rows[chosen[open_rows] == 0]
        chosen[undecided] = m[undecided]  # nothing pinned to follow: the newest format it fits
    inferred = np.zeros(n, dtype=bool)
    inferred[open_rows] = True
    return coded_categorical(np.where(present, chosen, -1), names), pd.arrays.BooleanArray(inferred, ~present)

def _codes(values: Sequence[Any] | np.ndarray) -> np.ndarray:
    """Dense int codes of a column (None / NaN one code of its own)."""
    codes: np.ndarray
    codes, _ = pd.factorize(np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values,
                            use_na_sentinel=False)
    return codes

def _frame(c: dict[str, Any], n: int) -> pd.DataFrame:
    data = finished_columns(c, n)
    frame = pd.DataFrame({name: data[name] for name in COLUMNS}, copy=False)
    frame.index = pd.RangeIndex(n)
    return frame
