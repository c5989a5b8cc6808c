"""``ActionStateLog``: one decoded row per action-state record, with its exact bytes and source."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain
from operator import itemgetter
from typing import Any

import msgspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from agent_inspect import _html
from agent_inspect._bulk import gc_paused
from agent_inspect._errors import DecodeError, ValueFormatError
from agent_inspect.codec._keys import (
    FLAG_AMBIGUOUS,
    KEY_ARRAY_FIELDS,
    key_field_arrays,
    resolve_key_fields,
)
from agent_inspect.codec._values import (
    _DECODER,
    _F_CALL_NEW,
    _F_CALL_OLD,
    _F_ENVELOPE,
    _F_LEGACY,
    _F_LINEAGE,
    _F_MODERN,
    _MASKS,
    _NULL,
    PYTHON_EVENT,
    SUBAGENT_EVENT,
    UNSET,
    VALUE_FORMATS,
    ActionState,
    Event,
    _event_flags,
    decode_action_state,
    envelope_problem,
    newest_format,
    state_problem,
    value_format_candidates,
)
from agent_inspect.sources._raw import RawBatch, SourceInfo

__all__ = ["ActionStateLog", "COLUMNS"]

#: Columns of :attr:`ActionStateLog.records`, in order.
COLUMNS = (
    "partition", "offset", "timestamp", "state_key", "key_format", "key_group", "business_key", "key_text",
    "key_digest", "seq", "event_uuid", "action_uuid", "tombstone", "value_format", "value_format_inferred",
    "completed", "task_event_class", "task_event_type", "task_event_id", "upstream_event_id",
    "upstream_action", "is_root", "output_event_count", "output_event_types", "output_event_ids",
    "sensory_update_count", "short_term_update_count", "call_count", "calls_pending", "calls_succeeded",
    "calls_failed", "subagent_scope", "subagent_session_id", "subagent_call_id", "payload_bytes",
    "key_flags", "agent_key", "error",
)
_CATEGORIES = ("key_format", "business_key", "key_text", "key_digest", "action_uuid",
               "value_format", "task_event_class", "task_event_type", "upstream_action", "subagent_scope",
               "subagent_session_id", "subagent_call_id", "agent_key")
_INT32 = ("key_group", "output_event_count", "sensory_update_count", "short_term_update_count", "call_count",
          "calls_pending", "calls_succeeded", "calls_failed")
_BOOL = ("value_format_inferred", "completed", "is_root")
_LEGACY_TYPES = {
    "org.apache.flink.agents.api.InputEvent": "_input_event",
    "org.apache.flink.agents.api.OutputEvent": "_output_event",
}
_INPUT_TYPE = "_input_event"
_SUBAGENT_TYPE = "InternalSubagentCallEvent"
_NO_FLAGS: tuple[str, ...] = ()


def _event_type(ev: Event) -> str | None:
    """The routing type; legacy (V0/V1) events have none, so it is derived from the class."""
    if ev.type is not None:
        return ev.type
    if ev.event_class == PYTHON_EVENT and ev.event_type:
        if ev.event_type.endswith(".InputEvent"):
            return _INPUT_TYPE
        if ev.event_type.endswith(".OutputEvent"):
            return "_output_event"
        return ev.event_type
    return _LEGACY_TYPES.get(ev.event_class or "", ev.event_class)


_RAW_FIELDS = ("partition", "offset", "timestamp_ms", "key", "value")


def _concat(batches: RawBatch | Iterable[RawBatch]) -> RawBatch:
    """The batches one after the other, as one new batch."""
    batches = [batches] if isinstance(batches, RawBatch) else list(batches)
    return _joined_raw([(b, 0, len(b)) for b in batches], with_agent_key=any(b.agent_key is not None for b in batches))


def _joined_raw(pieces: Iterable[tuple[RawBatch, int, int]], *, with_agent_key: bool) -> RawBatch:
    """One new batch from slices ``(batch, start, end)`` of batches, in that order."""
    pieces = list(pieces)

    def join(columns: Iterable[tuple[Sequence[Any], int, int]]) -> list[Any]:
        return list(chain.from_iterable(col[a:z] for col, a, z in columns))

    raw = RawBatch(*(join((getattr(b, name), a, z) for b, a, z in pieces) for name in _RAW_FIELDS))
    if with_agent_key:
        raw.agent_key = join((b.agent_key if b.agent_key is not None else [None] * len(b), a, z)
                             for b, a, z in pieces)
    return raw


def _physical_order(raw: RawBatch) -> list[int] | None:
    """The permutation into physical order (partitions ascending, then offset; stable), None if already so."""
    part = np.asarray(raw.partition, dtype=np.int64)
    off = np.asarray(raw.offset, dtype=np.int64)
    if len(part) < 2:
        return None
    dp, do = np.diff(part), np.diff(off)
    if bool(np.all((dp > 0) | ((dp == 0) & (do >= 0)))):
        return None
    return np.lexsort((off, part)).tolist()  # type: ignore[no-any-return]


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


def _value_columns(values: list[bytes | None]) -> list[Sequence[Any]]:
    """The value columns (see _ROW_COLUMNS) of some records' values (None for a tombstone)."""
    rows = list(map(_decode_row, values))
    return list(zip(*rows)) if rows else [() for _ in _ROW_COLUMNS]


def _partition_runs(partitions: list[int]) -> list[tuple[int, int, int]] | None:
    """``(partition, start, end)`` of each run of one partition, or None when runs are too short to pay."""
    n = len(partitions)
    if n == 0:
        return []
    part = np.asarray(partitions, dtype=np.int64)
    cuts = np.flatnonzero(part[1:] != part[:-1]) + 1
    if len(cuts) > n // 64 + 8:
        return None
    starts = [0, *cuts.tolist()]
    ends = [*cuts.tolist(), n]
    return [(partitions[a], a, z) for a, z in zip(starts, ends)]


def _gather(batches: RawBatch | Iterable[RawBatch]) -> tuple[RawBatch, list[Sequence[Any]], pa.BinaryArray]:
    """All records in physical order, their value columns and their keys as Arrow; each batch done as it arrives.

    Sources hand batches over while still reading (Kafka fetches in the background), so the decode
    overlaps the transfer instead of following it, and keys are copied out while still in cache.
    Batches may mix partitions (Kafka chunks): their runs go to their partition's bucket, so the
    buckets in partition order are the physical order.
    """
    if isinstance(batches, RawBatch):
        batches = [batches]
    buckets: dict[int, list[tuple[RawBatch, list[Sequence[Any]], int, int]]] = {}
    arrival: list[tuple[RawBatch, list[Sequence[Any]], int, int]] = []
    bucketed = True
    for b in batches:
        cols = [*_value_columns(b.value), pa.array(b.key, pa.binary())]
        arrival.append((b, cols, 0, len(b)))
        runs = _partition_runs(b.partition) if bucketed else None
        if runs is None:
            bucketed = False
            continue
        for p, a, z in runs:
            buckets.setdefault(p, []).append((b, cols, a, z))
    pieces = [piece for p in sorted(buckets) for piece in buckets[p]] if bucketed else arrival
    raw, cols = _joined(pieces, with_agent_key=any(b.agent_key is not None for b, _, _, _ in arrival))
    keys = cols.pop()
    order = _physical_order(raw)  # offsets out of order within a partition (rare), or batches not bucketed
    if order is None:
        return raw, cols, keys
    take = _taker(order)
    return _take(raw, order), [take(col) for col in cols], keys.take(pa.array(order, pa.int64()))


def _joined(pieces: list[tuple[RawBatch, list[Sequence[Any]], int, int]], *,
            with_agent_key: bool) -> tuple[RawBatch, list[Sequence[Any]]]:
    """One batch and one set of value columns from slices of batches and their columns."""
    if not pieces:
        return RawBatch(agent_key=[] if with_agent_key else None), [*(() for _ in _ROW_COLUMNS),
                                                                    pa.array([], pa.binary())]
    first = pieces[0][0]
    bounds = [0, *(z for _, _, _, z in pieces)]
    if all(b is first for b, _, _, _ in pieces) and [a for _, _, a, _ in pieces] == bounds[:-1] \
            and bounds[-1] == len(first):
        # one batch whose runs are in order: taken as is (the log owns it); a copy would touch every record again
        if with_agent_key and first.agent_key is None:  # another (empty) batch had the column
            first = RawBatch(first.partition, first.offset, first.timestamp_ms, first.key, first.value,
                             [None] * len(first))
        return first, pieces[0][1]

    raw = _joined_raw(((b, a, z) for b, _, a, z in pieces), with_agent_key=with_agent_key)
    cols: list[Any] = [list(chain.from_iterable(c[j][a:z] for _, c, a, z in pieces)) for j in range(len(_ROW_COLUMNS))]
    cols.append(pa.concat_arrays([c[-1].slice(a, z - a) for _, c, a, z in pieces]))
    return raw, cols


def _subagent_ids(value: bytes) -> tuple[str | None, str | None, str | None]:
    try:
        attrs = decode_action_state(value).task_event.attrs()  # type: ignore[union-attr]
    except (DecodeError, AttributeError):
        return None, None, None
    if not isinstance(attrs, dict):
        return None, None, None
    return tuple(v if isinstance(v, str) else None  # type: ignore[return-value]
                 for v in (attrs.get("targetScope"), attrs.get("sessionId"), attrs.get("callId")))


def _build(raw: RawBatch, cols: list[Sequence[Any]], key_array: pa.BinaryArray, *, key_format: str | None,
           max_parallelism: int | None) -> pd.DataFrame:
    n = len(raw)
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
    c["value_format"], c["value_format_inferred"] = _settle_formats(masks, business_keys, raw.partition)
    c["error"] = errors
    return _frame(c, n)


def _value_part(raw: RawBatch, cols: list[Sequence[Any]]) -> tuple[dict[str, Any], Any, list[tuple[int, str]]]:
    """The columns that come from values and positions (final dtypes), the format masks and the value errors."""
    n = len(raw)
    c: dict[str, Any] = {}
    value_errors: list[tuple[int, str]] = []
    values = raw.value
    if _BAD in cols[0]:  # rare: values that do not decode keep only their size
        cols = [list(col) for col in cols]
        for i in [i for i, first in enumerate(cols[0]) if first is _BAD]:
            value_errors.append((i, f"value: {cols[1][i]}"))
            for col, empty in zip(cols[:-1], _EMPTY_ROW):
                col[i] = empty
    for name, col in zip(_ROW_COLUMNS, cols):
        c[name] = col
    masks = c.pop("_mask")
    problems = c.pop("_problem")
    if problems.count(None) != n:  # rare; the record decodes, so its columns stay, but upstream would refuse it
        value_errors += [(i, f"value: {problem}") for i, problem in enumerate(problems) if problem is not None]
        value_errors.sort(key=itemgetter(0))
    types, classes = c["task_event_type"], c["task_event_class"]
    c["task_event_type"], c["task_event_class"] = type_col, class_col = _categorical(types), _categorical(classes)
    counts = {name: np.fromiter(c[name], np.int32, n) for name in _COUNTS}  # -1: no decoded value
    for name, count in counts.items():
        c[name] = pd.arrays.IntegerArray(count, count < 0)
    decoded = counts["output_event_count"] >= 0  # a value that decoded (not a tombstone)
    c["is_root"] = pd.arrays.BooleanArray((type_col == _INPUT_TYPE).to_numpy(dtype=bool, na_value=False), ~decoded)
    calls = counts["calls_pending"] + counts["calls_succeeded"] + counts["calls_failed"]
    c["call_count"] = pd.arrays.IntegerArray(np.where(decoded, calls, -1), ~decoded)
    scope: list[str | None] = [None] * n
    session: list[str | None] = [None] * n
    call: list[str | None] = [None] * n
    if SUBAGENT_EVENT in class_col.cat.categories or _SUBAGENT_TYPE in type_col.cat.categories:  # most logs: none
        for i, cls in enumerate(classes):
            if cls == SUBAGENT_EVENT or types[i] == _SUBAGENT_TYPE:
                scope[i], session[i], call[i] = _subagent_ids(values[i])
    c["subagent_scope"], c["subagent_session_id"], c["subagent_call_id"] = scope, session, call
    size = np.fromiter(c["payload_bytes"], np.int64, n)
    c["payload_bytes"] = pd.arrays.IntegerArray(size, size < 0)  # -1: a tombstone
    c["tombstone"] = size < 0
    c["partition"] = raw.partition
    c["offset"] = raw.offset
    c["timestamp"] = raw.timestamp_ms
    c["agent_key"] = raw.agent_key if raw.agent_key is not None else [None] * n
    return _finished(c, n), masks, value_errors


def _key_error(k: Any) -> str:
    return "key: missing (record has no key)" if k is None else f"key: {_reason(k)}"


_COUNTS = ("output_event_count", "sensory_update_count", "short_term_update_count", "calls_pending",
           "calls_succeeded", "calls_failed")
_KEY_CATEGORIES = ("key_format", "action_uuid", "key_text", "key_digest", "business_key")
_KEY_ARRAY_TYPES = (pa.string(), pa.int64(), pa.int64(), pa.string(), pa.string(), pa.string(), pa.string())


def _key_columns(keys: pa.BinaryArray, errors: list[str | None], *, key_format: str | None,
                 max_parallelism: int | None) -> dict[str, Any] | None:
    """The key columns, final dtypes, from each distinct key once; None when a layout is ambiguous.

    A state key is written two or more times (initial, calls, completed), so the distinct keys are
    parsed (the common shapes in bulk by Arrow, the rest one by one) and rows take them by code.
    Categories keep first-appearance order.
    """
    encoded = keys.dictionary_encode()
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
    d["business_key"] = pc.coalesce(d["key_text"], d["key_digest"])
    out: dict[str, Any] = {}
    for name in _KEY_CATEGORIES:
        enc = d[name].dictionary_encode()
        rows = pa.DictionaryArray.from_arrays(enc.indices.take(codes), enc.dictionary)
        out[name] = rows.to_pandas()
        if name == "business_key":
            out["_business_codes"] = rows.indices.fill_null(-1).to_numpy().tolist()
    for name, dtype in (("key_group", np.int32), ("seq", np.int64)):
        values = d[name].take(codes).fill_null(-1).to_numpy().astype(dtype)
        out[name] = pd.arrays.IntegerArray(values, values < 0)
    if codes.null_count:
        missing = _key_error(None)
        for i in np.flatnonzero(codes.is_null().to_numpy(zero_copy_only=False)).tolist():
            errors[i] = missing
        flags = np.append(flags, None)
        flags[-1] = _NO_FLAGS
        take = codes.fill_null(len(flags) - 1).to_numpy()
    else:
        take = codes.to_numpy()
    out["key_flags"] = flags[take]
    text = texts if texts is not None else pa.array(
        [k.decode("utf-8", "replace") for k in encoded.dictionary.to_pylist()], pa.string())
    for name, col in (("event_uuid", d["event_uuid"]), ("state_key", text)):
        out[name] = pd.Series(col.take(codes), dtype="str")
    return out


_NO_KEY = (None,) * 8 + (_NO_FLAGS,)

_ROW_COLUMNS = (
    "completed", "task_event_class", "task_event_type", "task_event_id", "upstream_event_id", "upstream_action",
    "output_event_count", "output_event_types", "output_event_ids", "sensory_update_count",
    "short_term_update_count", "calls_pending", "calls_succeeded", "calls_failed", "_mask", "_problem",
    "payload_bytes",
)
_EMPTY_ROW = (None, None, None, None, None, None, -1, _NO_FLAGS, _NO_FLAGS, -1, -1, -1, -1, -1, 0, None, -1)
# The one envelope shape upstream writes (§5.4); anything else goes through the codec's checks.
_ENVELOPE_PREFIX = b'{"serde":"kryo","version":1,"payload":"'
_ENVELOPE_QUOTES = 10


# One object per distinct class, type and action name: a few thousand strings instead of millions, so
# the rows stay small and in cache.
_SAME: dict[str, str] = {}  # emptied after each build: a log of odd types must not leave them behind
_same: Callable[[Any, Any], Any] = _SAME.setdefault

_BAD = object()
_INVALID = (_BAD,)  # _row: the typed decode passed, but the codec's state_problem would not
_DECODE = _DECODER.decode


def _decode_row(value: bytes | None) -> tuple[Any, ...]:
    # The same typed decoder as value(pos), so a row has an error exactly when its value cannot be read.
    if value is None:
        return _EMPTY_ROW  # a tombstone
    try:
        st = _DECODE(value)
        if st.task_event is not None:
            row = _row(st, len(value))
            if row is not _INVALID:
                return row
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        pass
    try:  # unknown properties, no task event, an error or a problem: the codec's tolerant path explains it
        st = decode_action_state(value)
    except ValueFormatError as exc:
        return _bad_row(_reason(exc), len(value))
    row = _row(st, len(value))
    return row if row is not _INVALID else _bad_row(state_problem(st) or "not an ActionState", len(value))


def _bad_row(reason: str, size: int) -> tuple[Any, ...]:
    return (_BAD, reason, *_EMPTY_ROW[2:-1], size)  # a whole row: zip(*rows) stops at the shortest


def _row(st: Any, size: int) -> tuple[Any, ...]:
    """One record's summary columns (see _ROW_COLUMNS; ``size``: its bytes); one pass, as it runs for every record.

    Written for CPython's sake: no helper calls or comprehensions on the common path (each costs
    more than the work it wraps), the first event of a list handled without a loop.
    """
    te = st.task_event
    rare = False
    if te is not None:
        cls = te.event_class
        typ = te.type
        # the checks of codec.state_problem and the flags of codec._event_flags, inline: every record
        # has a task event, so a call here costs more than the rest of the check (b"{" is 123)
        if memoryview(te.attributes)[0] != 123 or (typ is None and cls is None):
            return _INVALID
        if te.delegate is not None or te.attachments or cls == SUBAGENT_EVENT:
            rare = True
            flags = 0
        else:
            flags = _F_LEGACY if (typ is None or cls == PYTHON_EVENT or te.source_timestamp is not None) \
                else _F_MODERN
            if te.upstream_event_id is not None or te.upstream_action_name is not None:
                flags |= _F_LINEAGE
        if typ is None:
            typ = _event_type(te)
    else:
        cls = typ = None
        flags = 0
    outs = st.output_events
    if outs:
        otypes = []
        oids = []
        for e in outs:
            t = e.type
            if memoryview(e.attributes)[0] != 123 or (t is None and e.event_class is None):
                return _INVALID
            otypes.append(t if t is not None else _event_type(e))
            oids.append(e.id)
            if e.delegate is not None or e.attachments or e.event_class == SUBAGENT_EVENT:
                rare = True
            else:
                flags |= _event_flags(e)
        out_types = tuple(otypes)
        out_ids = tuple(oids)
    else:
        out_types = out_ids = _NO_FLAGS
    calls = st.call_results
    pending = succeeded = failed = 0
    for cr in calls:
        s = cr.status
        if s is None:  # legacy rule (§5.5): no exception payload means it succeeded
            flags |= _F_CALL_OLD
            if cr.exception_payload is None:
                succeeded += 1
            else:
                failed += 1
        else:
            flags |= _F_CALL_NEW
            if s == "SUCCEEDED":
                succeeded += 1
            elif s == "PENDING":
                pending += 1
            else:
                failed += 1
    sensory = st.sensory_memory_updates
    short = st.short_term_memory_updates
    stm = len(short)
    problem = None
    if sensory or short:
        odd = False
        for mu in sensory + short:
            v = mu.value
            if v != _NULL:
                b = bytes(v)
                # the prefix holds 9 quotes; a 10th closes the payload, so no member can follow it
                if b.startswith(_ENVELOPE_PREFIX) and b.count(b'"') == _ENVELOPE_QUOTES:
                    flags |= _F_ENVELOPE
                else:
                    odd = True
        if odd:
            rare = True
            problem = envelope_problem(st)
    if st.memory_updates is not UNSET:
        stm += len(st.memory_updates)  # V0's single list
        rare = True
    if rare:
        if state_problem(st) is not None:  # delegates are checked there
            return _INVALID
        mask = value_format_candidates(st)
    else:
        mask = _MASKS[flags]
    if te is None:
        return (st.completed, None, None, None, None, None, len(outs), out_types, out_ids, len(sensory), stm,
                pending, succeeded, failed, mask, problem, size)
    action = te.upstream_action_name
    return (st.completed, _same(cls, cls), _same(typ, typ), te.id, te.upstream_event_id,
            action if action is None else _same(action, action), len(outs), out_types,
            out_ids, len(sensory), stm, pending, succeeded, failed, mask, problem, size)


def _reason(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _settle_formats(masks: Sequence[int], business_keys: Sequence[Any],
                    partitions: Sequence[int]) -> tuple[pd.Categorical, pd.api.extensions.ExtensionArray]:
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
    names = np.full(1 << len(VALUE_FORMATS), None, dtype=object)
    names[1:] = [newest_format(v) for v in range(1, len(names))]
    chosen = m.copy()
    if len(open_rows):
        chosen[open_rows] = 0
        bits = [1 << i for i in range(len(VALUE_FORMATS))]
        pinned_bit = {b: pinned & (m == b) for b in bits}
        for codes in (_codes(business_keys), _codes(partitions)):
            todo = open_rows[chosen[open_rows] == 0]
            if not len(todo):
                break
            size = int(codes.max()) + 1
            want = m[todo]
            best = np.zeros(len(todo), dtype=np.int64)  # score: pinned count * 64 + bit, so ties go to the newer
            for b in bits:
                count = np.bincount(codes[pinned_bit[b]], minlength=size)[codes[todo]]
                score = np.where((want & b != 0) & (count > 0), count * 64 + b, 0)
                best = np.maximum(best, score)
            chosen[todo] = best % 64
        undecided = open_rows[chosen[open_rows] == 0]
        chosen[undecided] = m[undecided]  # nothing pinned to follow: the newest format it fits
    inferred = np.zeros(n, dtype=bool)
    inferred[open_rows] = True
    return _categorical(names[chosen]), pd.arrays.BooleanArray(inferred, ~present)


def _codes(values: Sequence[Any]) -> np.ndarray:
    """Dense int codes of a column (None / NaN one code of its own)."""
    codes, _ = pd.factorize(np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values,
                            use_na_sentinel=False)
    return codes


def _categorical(col: list[Any]) -> pd.Categorical:
    # Arrow's dictionary encoding is several times faster than pd.Categorical on Python strings.
    return pa.array(col, pa.string()).dictionary_encode().to_pandas()


def _masked_int(col: Sequence[int], dtype: Any) -> pd.api.extensions.ExtensionArray:
    values = np.fromiter(col, dtype, len(col))
    return pd.arrays.IntegerArray(values, values < 0)  # every count/group/seq is >= 0; -1 = unknown


def _masked_bool(col: Sequence[bool | None]) -> pd.api.extensions.ExtensionArray:
    arr = pa.array(col, pa.bool_())
    return pd.arrays.BooleanArray(arr.fill_null(False).to_numpy(zero_copy_only=False),
                                  arr.is_null().to_numpy(zero_copy_only=False))


def _timestamps(col: Sequence[int | None]) -> Any:
    try:
        ms = np.fromiter(col, np.int64, len(col)).view("datetime64[ms]")
    except (TypeError, OverflowError):  # some record has no timestamp (a None)
        return pa.array(col, pa.timestamp("ms", tz="UTC")).to_pandas()
    return pd.array(ms, dtype=pd.DatetimeTZDtype("ms", "UTC"))


def _frame(c: dict[str, Any], n: int) -> pd.DataFrame:
    data = _finished(c, n)
    frame = pd.DataFrame({name: data[name] for name in COLUMNS}, copy=False)
    frame.index = pd.RangeIndex(n)
    return frame


def _finished(c: dict[str, Any], n: int) -> dict[str, Any]:
    """The columns of ``c`` in their final dtypes (those already final are kept)."""
    data: dict[str, Any] = {}
    for name in c:
        col = c[name]
        if isinstance(col, (pd.Series, np.ndarray, pd.api.extensions.ExtensionArray)):
            data[name] = col  # already final (key columns built per distinct key)
        elif name == "partition":
            data[name] = np.asarray(col, dtype=np.int32)
        elif name == "offset":
            data[name] = np.asarray(col, dtype=np.int64)
        elif name == "timestamp":
            data[name] = _timestamps(col)
        elif name in _CATEGORIES:
            data[name] = _categorical(col)
        elif name in _INT32:
            data[name] = _masked_int([-1 if v is None else v for v in col] if name == "key_group" else col,
                                     np.int32)
        elif name in ("seq", "payload_bytes"):
            data[name] = _masked_int([-1 if v is None else v for v in col] if name == "seq" else col, np.int64)
        elif name in _BOOL:
            data[name] = _masked_bool(col)
        elif name == "tombstone":
            data[name] = np.asarray(col, dtype=bool)
        elif name in ("output_event_types", "output_event_ids", "key_flags"):
            data[name] = np.fromiter(col, dtype=object, count=n)  # (slice assignment would look into the tuples)
        else:  # free text: state_key, event_uuid, task_event_id, upstream_event_id, error
            data[name] = pd.Series(pa.array(col, pa.string()), dtype="str")
    return data


class ActionStateLog:
    """The action-state journal as data: ``records`` (one row per record, index = position), ``raw``, ``source``.

    Build it with :meth:`from_raw` (the sources do that for you: ``ai.load(...)``). Bad keys or values are
    rows with an ``error``; tombstones are rows with ``tombstone=True``. ``value(pos)`` decodes one record.
    """

    def __init__(self, records: pd.DataFrame, raw: RawBatch, source: SourceInfo) -> None:
        self.records = records
        self.raw = raw
        self.source = source
        self._cache: dict[int, ActionState | None] = {}

    @classmethod
    def from_raw(cls, batches: RawBatch | Iterable[RawBatch], source: SourceInfo, *,
                 key_format: str | None = None, max_parallelism: int | None = None) -> ActionStateLog:
        """Decode raw records into a log; never drops a record. The log may keep the batches' lists: leave them be.

        ``key_format`` settles ambiguous key layouts (and is the only way to read "K1.5-draft" keys);
        ``max_parallelism`` bounds key groups.
        """
        try:
            with gc_paused():  # millions of short-lived objects: the cyclic GC would dominate the load
                raw, cols, keys = _gather(batches)
                records = _build(raw, cols, keys, key_format=key_format, max_parallelism=max_parallelism)
        finally:
            _SAME.clear()
        return cls(records, raw, source)

    def __len__(self) -> int:
        return len(self.records)

    @property
    def errors(self) -> pd.DataFrame:
        """The rows whose key or value did not decode, with the reason in ``error``."""
        return self.records[self.records["error"].notna()]

    def value(self, pos: int) -> ActionState | None:
        """The decoded value of the record at ``pos`` (None for a tombstone); cached.

        Raises :class:`ValueFormatError` when that record's value does not decode. A value that decodes but
        that upstream would refuse (a Kryo envelope of another version) is returned; its row has an ``error``.
        """
        pos = int(pos)
        if pos in self._cache:
            return self._cache[pos]
        if not 0 <= pos < len(self.raw):
            raise IndexError(f"position {pos} is outside this log (0..{len(self.raw) - 1})")
        data = self.raw.value[pos]
        state = None if data is None else decode_action_state(data)
        self._cache[pos] = state
        return state

    def values(self) -> list[ActionState | None]:
        """Every record's decoded value (None for tombstones and values that do not decode)."""
        out: list[ActionState | None] = []
        for pos in range(len(self.raw)):
            try:
                out.append(self.value(pos))
            except ValueFormatError:
                out.append(None)
        return out

    def keys(self) -> list[str]:
        """The business keys (key text, or digest for K1.6/K2), in order of first appearance."""
        return [k for k in self.records["business_key"].dropna().unique().tolist()]

    def for_key(self, key: str) -> ActionStateLog:
        """A log of one business key's records (positions renumbered from 0, order kept)."""
        mask = (self.records["business_key"] == key).fillna(False).to_numpy(dtype=bool)
        idx = np.flatnonzero(mask).tolist()
        records = self.records.iloc[idx].reset_index(drop=True)
        raw = RawBatch(*(list(map(col.__getitem__, idx)) for col in
                         (self.raw.partition, self.raw.offset, self.raw.timestamp_ms, self.raw.key, self.raw.value)),
                       agent_key=None if self.raw.agent_key is None else [self.raw.agent_key[i] for i in idx])
        sub = ActionStateLog(records, raw, self.source)
        sub._cache = {new: self._cache[old] for new, old in enumerate(idx) if old in self._cache}
        return sub

    def to_parquet(self, path: str | os.PathLike[str]) -> Any:
        """Write the exact records and source metadata to Parquet (reload with ``ai.load(path)``)."""
        from agent_inspect.sources import write_parquet

        return write_parquet(self, path)

    def verify_identity(self, *, num_partitions: int | None = None, max_parallelism: int = 128,
                        plan: Mapping[str, Any] | None = None) -> pd.DataFrame:
        """Recompute each record's identities and compare them with its key (spec §15 step 4).

        Returns a frame indexed by position with ``*_expected`` and ``*_ok`` columns (``<NA>`` where a
        check cannot be made): the event UUID from ``taskEvent.attributes`` (0.3+ recipe; legacy V0/V1
        records are not checked), the Kafka partition (``num_partitions``, by default the topic's
        partition count for Kafka sources), the key group of K1.5 keys (assuming a ``String`` business
        key), and with ``plan`` (the agent plan JSON, or its ``actions`` map) the action name and UUID.
        Hash-based action UUIDs of Java actions differ per JVM, so those are left unchecked.
        """
        from agent_inspect.codec import (
            event_uuid,
            java_string_hash,
            key_group,
            murmur_hash,
            name_action_uuid,
            python_action_uuid,
        )
        from agent_inspect.codec._values import TASK_ATTRIBUTES_DECODER

        r = self.records
        n = len(r)
        fmts = r["key_format"].astype(object).tolist()
        texts = r["key_text"].astype(object).tolist()
        digests = r["key_digest"].astype(object).tolist()
        vfmts = r["value_format"].astype(object).tolist()
        actual_ev = r["event_uuid"].astype(object).tolist()

        ev_expected: list[str | None] = [None] * n
        by_attrs: dict[bytes, str | None] = {}
        for pos in range(n):
            data = self.raw.value[pos]
            if data is None or vfmts[pos] in (None, "V0", "V1"):
                continue
            try:
                task = TASK_ATTRIBUTES_DECODER.decode(data).task_event
            except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
                continue
            if task is None or not task.attributes:
                continue
            attrs = bytes(task.attributes)
            if attrs not in by_attrs:
                try:
                    by_attrs[attrs] = event_uuid(attrs)
                except DecodeError:
                    by_attrs[attrs] = None
            ev_expected[pos] = by_attrs[attrs]

        if num_partitions is None and self.source.kind == "kafka":
            num_partitions = self.source.options.get("num_partitions") or (
                max(self.source.end_offsets) + 1 if self.source.end_offsets else None)
        part_expected: list[int] = [-1] * n
        if num_partitions:
            by_basis: dict[str, int] = {}
            for pos, fmt in enumerate(fmts):
                if fmt in ("K1", "K1.5-draft"):
                    basis = (texts[pos] or "").split("_", 1)[0] or None
                elif fmt == "K1.5":
                    basis = texts[pos]
                elif fmt in ("K1.6", "K2"):
                    basis = digests[pos]
                else:
                    basis = None
                if basis is not None:
                    if basis not in by_basis:
                        by_basis[basis] = murmur_hash(java_string_hash(basis)) % num_partitions
                    part_expected[pos] = by_basis[basis]

        group_expected = [key_group(java_string_hash(texts[pos]), max_parallelism)
                          if fmt in ("K1.5", "K1.5-draft") and texts[pos] is not None else -1
                          for pos, fmt in enumerate(fmts)]

        names: list[str | None] = [None] * n
        action_ok: list[bool | None] = [None] * n
        if plan is not None:
            actions = plan.get("actions", plan)
            hashed: dict[str, str] = {}
            named = {name_action_uuid(name): name for name in actions}
            java = False
            for name, spec in actions.items():
                exec_ = (spec or {}).get("exec") or {}
                if exec_.get("module") is not None and exec_.get("qualname") is not None:
                    triggers = spec.get("trigger_conditions") or spec.get("triggers") or []
                    hashed[python_action_uuid(name, exec_["module"], exec_["qualname"], triggers)] = name
                else:
                    java = True
            for pos, (fmt, act) in enumerate(zip(fmts, r["action_uuid"].astype(object).tolist())):
                if fmt is None or act is None:
                    continue
                table = named if fmt == "K2" else hashed
                names[pos] = table.get(act)
                if names[pos] is not None:
                    action_ok[pos] = True
                elif fmt == "K2" or not java:
                    action_ok[pos] = False

        ev_ok = [None if e is None or a is None else e == a for e, a in zip(ev_expected, actual_ev)]
        parts = r["partition"].tolist()
        groups = r["key_group"].fillna(-1).astype(int).tolist()
        return pd.DataFrame({
            "event_uuid_expected": pd.array(ev_expected, dtype="str"),
            "event_uuid_ok": pd.array(ev_ok, dtype="boolean"),
            "partition_expected": _masked_int(part_expected, np.int32),
            "partition_ok": pd.array([None if e < 0 else e == p for e, p in zip(part_expected, parts)],
                                     dtype="boolean"),
            "key_group_expected": _masked_int(group_expected, np.int32),
            "key_group_ok": pd.array([None if e < 0 else e == g for e, g in zip(group_expected, groups)],
                                     dtype="boolean"),
            "action_name": pd.Categorical(names),
            "action_uuid_ok": pd.array(action_ok, dtype="boolean"),
        }, index=pd.RangeIndex(n))

    def summary(self) -> dict[str, Any]:
        """Counts for a first look: records, errors, keys, partitions, key/value formats, completed, tombstones."""
        r = self.records
        inferred = r["value_format_inferred"]
        return {
            "source": {"kind": self.source.kind, "location": self.source.location, "topic": self.source.topic},
            "records": int(len(r)),
            "errors": int(r["error"].notna().sum()),
            "business_keys": int(r["business_key"].nunique()),
            "partitions": sorted(int(p) for p in pd.unique(r["partition"])),
            "key_formats": _counts(r["key_format"]),
            "value_formats": _counts(r["value_format"]),
            "value_formats_inferred": int(inferred.fillna(False).sum()),
            "completed": int(r["completed"].fillna(False).sum()),
            "tombstones": int(r["tombstone"].sum()),
            "executions": int(r.loc[~r["tombstone"], "state_key"].nunique()),
            "root_records": int(r["is_root"].fillna(False).sum()),
            "flagged_keys": int((r["key_flags"].map(len) > 0).sum()),
        }

    def __repr__(self) -> str:
        s = self.summary()
        return (f"<ActionStateLog {s['records']} records, {s['business_keys']} business keys, "
                f"{s['errors']} errors from {self.source.kind} {self.source.location!r}>")

    def _repr_html_(self) -> str:
        s = self.summary()
        rows = "".join(f"<tr><th>{_html.escape(k)}</th><td>{_html.escape(_plain(v))}</td></tr>"
                       for k, v in s.items() if k != "source")
        head = (f"<p><b>ActionStateLog</b> from {_html.escape(self.source.kind)} "
                f"<code>{_html.escape(self.source.location)}</code></p>")
        cols = ["partition", "offset", "business_key", "seq", "key_format", "value_format", "completed",
                "task_event_type", "output_event_count", "call_count", "error"]
        return (head + f'<table class="agent-inspect">{rows}</table>'
                + _html.frame_html(self.records[cols], max_rows=10, caption="records"))


def _counts(col: pd.Series) -> dict[str, int]:
    return {str(k): int(v) for k, v in col.value_counts(dropna=True).items() if v}


def _plain(v: Any, empty: str = "—") -> str:
    """A summary value as text (shared by the HTML view and the CLI's ``summary``)."""
    if isinstance(v, dict):
        return ", ".join(f"{k}: {n}" for k, n in v.items()) or empty
    if isinstance(v, list):
        return ", ".join(map(str, v)) or empty
    return str(v)

