"""The key columns of the records frame: each distinct state key parsed once, rows take its fields by code.

The bulk parse of a batch's distinct keys (Arrow work, mostly without the GIL) starts as the batch arrives,
in a thread of its own (:class:`EarlyKeyParse`), so it overlaps the value decode instead of following it;
after the last batch only the keys not parsed early are.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from agent_inspect.codec.bulk import (
    FLAG_AMBIGUOUS,
    KEY_ARRAY_FIELDS,
    NO_FLAGS,
    error_reason,
    key_field_arrays,
    resolve_key_fields,
)

__all__ = ["NO_KEY", "EarlyKeyParse", "key_columns", "key_error"]

NO_KEY = (None,) * 8 + (NO_FLAGS,)
"""The key fields of a record whose key did not parse."""


def key_error(k: Any) -> str:
    """The ``error`` text of a key that is missing (None) or did not parse (the parser's exception)."""
    return "key: missing (record has no key)" if k is None else f"key: {error_reason(k)}"


_KEY_CATEGORIES = ("key_format", "action_uuid", "key_text", "key_digest", "business_key")

_KEY_ARRAY_TYPES = (pa.string(), pa.int64(), pa.int64(), pa.string(), pa.string(), pa.string(), pa.string())

_Parsed = tuple[pa.BinaryArray, np.ndarray, dict[str, Any], np.ndarray]  # distinct keys, parsed mask, fields, flags


class EarlyKeyParse:
    """Bulk-parses each batch's distinct keys in a thread while the caller decodes values.

    :meth:`add` hands over a batch's keys (Arrow binary); :meth:`fields` gives the fields of a log's
    distinct keys, those parsed early looked up, the rest parsed then. Whatever goes wrong in the thread
    only costs the head start: :meth:`fields` then parses every key itself.
    """

    def __init__(self, max_parallelism: int | None) -> None:
        self._max_parallelism = max_parallelism
        self._pending: list[pa.BinaryArray] = []
        self._parsed: list[_Parsed] = []
        self._closed = False
        self._failed = False
        self._ready = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="agent-inspect-key-parse", daemon=True)
        self._thread.start()

    def add(self, keys: pa.BinaryArray) -> None:
        with self._ready:
            self._pending.append(keys)
            self._ready.notify()

    def close(self) -> None:
        """No more batches: the thread parses what is pending and ends."""
        with self._ready:
            self._closed = True
            self._ready.notify()
        self._thread.join()

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._pending and not self._closed:
                    self._ready.wait()
                group, self._pending = self._pending, []
                last = self._closed
            if group and not self._failed:
                # every batch that arrived meanwhile at once: each call back into Python waits for the GIL
                try:
                    self._parse(pa.concat_arrays(group) if len(group) > 1 else group[0])
                except Exception:  # noqa: BLE001 - fields() parses these keys again and raises what is wrong
                    self._failed = True
            if last and not self._pending:
                return

    def _parse(self, keys: pa.BinaryArray) -> None:
        distinct = keys.dictionary_encode().dictionary
        try:
            texts = distinct.cast(pa.string())
        except pa.ArrowInvalid:  # a key that is not UTF-8: left to the one-by-one parser
            return
        self._parsed.append((distinct, *key_field_arrays(texts, self._max_parallelism)))

    def fields(self, distinct: pa.BinaryArray, texts: pa.StringArray) -> tuple[np.ndarray, dict[str, Any], np.ndarray]:
        """:func:`key_field_arrays` of ``texts`` (the UTF-8 of the distinct keys ``distinct``); call after :meth:`close`."""
        if self._failed or not self._parsed:
            return key_field_arrays(texts, self._max_parallelism)
        parts = self._parsed
        if len(parts) == 1:
            known, parsed, fields, flags = parts[0]
        else:
            known = pa.concat_arrays([p[0] for p in parts])
            parsed = np.concatenate([p[1] for p in parts])
            fields = {name: pa.concat_arrays([p[2][name] for p in parts]) for name in KEY_ARRAY_FIELDS}
            flags = np.concatenate([p[3] for p in parts])
        where = pc.index_in(distinct, value_set=known)
        if where.null_count:  # a key no batch handed over (not the builder's way): every key parsed now
            return key_field_arrays(texts, self._max_parallelism)
        index = where.to_numpy()
        take = pa.array(index)
        return parsed[index], {name: fields[name].take(take) for name in KEY_ARRAY_FIELDS}, flags[index]


def key_columns(keys: pa.BinaryArray, errors: list[str | None], *, key_format: str | None,
                max_parallelism: int | None, early: EarlyKeyParse | None = None) -> dict[str, Any] | None:
    """The key columns, final dtypes, from each distinct key once; None when a layout is ambiguous.

    A state key is written two or more times (initial, calls, completed), so the distinct keys are
    parsed (the common shapes in bulk by Arrow, the rest one by one) and rows take them by code.
    Categories keep first-appearance order. ``early``: the bulk parse begun as the batches arrived (closed).
    """
    encoded = keys.dictionary_encode()
    codes = encoded.indices  # null for a missing key
    try:
        texts = encoded.dictionary.cast(pa.string())
    except pa.ArrowInvalid:  # some key is not UTF-8: the one-by-one parser names it
        texts = None
    d: dict[str, Any]
    if texts is not None and key_format is None:
        parsed, d, flags = (early.fields(encoded.dictionary, texts) if early is not None
                            else key_field_arrays(texts, max_parallelism))
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
        good = [f if type(f) is tuple else NO_KEY for f in fields]
        if not all(type(f) is tuple for f in fields):
            bad = np.full(len(parsed), None, dtype=object)
            bad[slow] = [None if type(f) is tuple else key_error(f) for f in fields]
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
        missing = key_error(None)
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
