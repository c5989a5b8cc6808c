"""A compact history of one business key: one line per action execution (Temporal's compact mode).

Each line folds an execution's initial, call and completed records (``execution`` of the
reconstruction's frame, else of :func:`annotate`); tombstones and records without an execution get a
line of their own. Times and durations come from the record timestamps; status and outcome come from
the reconstruction under its rule. Pure functions over plain frames and byte strings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from agent_inspect._types import RecordSource
from agent_inspect.history._executions import annotate_rows
from agent_inspect.history._names import action_label, action_names
from agent_inspect.history._refresh import refresh_rows

__all__ = ["compact_history", "record_kinds", "matching_positions", "SearchIndex", "REMOVED_STATUSES"]

REMOVED_STATUSES = ("evicted", "invalidated")
"""Statuses of records a recovery dropped; a line with one of them shows it rather than its last status."""

_LINE_COLUMNS = ("line", "execution", "seq", "attempt", "action", "action_uuid", "event_type", "state_key",
                 "first_pos", "last_pos", "positions", "records", "start", "end", "duration_ms", "calls",
                 "completed", "status", "statuses", "outcome", "reason", "divergences", "diverged", "rerun")
# Record columns whose text a search looks at, besides the record's value.
_SEARCH_COLUMNS = ("state_key", "task_event_type", "task_event_id", "upstream_event_id", "upstream_action",
                   "event_uuid", "action_uuid", "status", "reason", "status_rule_note", "outcome", "outcome_reason",
                   "rule_note", "error", "subagent_session_id", "subagent_call_id", "output_event_types",
                   "output_event_ids")


def _col(frame: pd.DataFrame, name: str, default: object = None) -> pd.Series:
    if name in frame.columns:
        return frame[name]
    return pd.Series(default, index=frame.index, dtype=object)


def _objects(frame: pd.DataFrame, name: str) -> list[object]:
    """A column as a list with None for every missing value (NaN, NA, NaT)."""
    if name not in frame.columns:
        return [None] * len(frame)
    col = frame[name]
    return [None if m else v for v, m in zip(col.astype(object).tolist(), col.isna().tolist())]


def record_kinds(frame: pd.DataFrame) -> np.ndarray:
    """Per record: ``initial``, ``call``, ``completed`` or ``tombstone`` (a record of no execution: ``record``).

    For example::

        ai.history.record_kinds(log.records[:5])       # initial, call, completed, tombstone or record
    """
    completed = _col(frame, "completed", False).fillna(False).to_numpy(dtype=bool)
    calls = pd.to_numeric(_col(frame, "call_count", 0), errors="coerce").fillna(0).to_numpy() > 0
    tomb = _col(frame, "tombstone", False).fillna(False).to_numpy(dtype=bool)
    out = np.where(completed, "completed", np.where(calls, "call", "initial")).astype(object)
    out[tomb] = "tombstone"
    return out


def compact_history(records: RecordSource, divergences: pd.DataFrame | None = None, *,
                    known: Mapping[str, str] | Iterable[str] = (), kafka_pending: str | None = None) -> pd.DataFrame:
    """One line per action execution of ``records`` (a log, a reconstruction or a records frame, index = log
    position; usually one key's: ``log.for_key(key)``), in log order.

    Columns: ``line`` (0-based), ``execution``, ``seq``, ``attempt``, ``action`` (the action's name, from the
    log or ``known`` names, see :func:`action_names`; ``uuid:<8 hex>…`` when no name is known), ``event_type`` (the event that triggered it), ``first_pos`` / ``last_pos``
    / ``positions`` / ``records``, ``start`` / ``end`` (record timestamps) and ``duration_ms``, ``calls``,
    ``completed``, ``status`` (a removed status if any record has one, else the last record's),
    ``statuses`` (distinct, in order), ``outcome`` and ``reason`` (the last record's that has one),
    ``divergences`` (ids), ``diverged`` and ``rerun`` (outcome RERUN). Column-wise: 20k records take
    a few tens of milliseconds. A log's refresh rows are no executions, as :func:`executions` reads them
    (``kafka_pending`` too).

    For example::

        ai.history.compact_history(log.for_key("user-0011"))[["line", "seq", "attempt", "action", "status"]].head()
    """
    if not isinstance(records, pd.DataFrame) and not isinstance(getattr(records, "records", None), pd.DataFrame):
        raise TypeError(f"compact_history takes a log, a reconstruction or a records frame (one key's: "
                        f"log.for_key(key)), not a {type(records).__name__}")
    frame = records if isinstance(records, pd.DataFrame) else records.records
    if frame.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in _LINE_COLUMNS})
    if "execution" not in frame.columns:
        # the log's refresh rows are no executions, as ai.history.executions reads it
        frame = frame.assign(execution=annotate_rows(frame, refresh_rows(records, kafka_pending=kafka_pending))["execution"].to_numpy())
    pos = frame.index.to_numpy(dtype="int64")
    execution = pd.to_numeric(frame["execution"], errors="coerce").fillna(-1).to_numpy(dtype="int64")
    # Records of no execution are lines of their own: a negative group id per record.
    codes, first_seen = pd.factorize(np.where(execution >= 0, execution, -1 - pos), sort=False)
    n = len(first_seen)
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(n))
    sizes = np.diff(np.append(starts, len(codes)))
    first, last = order[starts], order[starts + sizes - 1]

    def per_line(name: str, how: str) -> list[object]:
        if name not in frame.columns:
            return [None] * n
        got = getattr(frame[name].reset_index(drop=True).groupby(codes, sort=True), how)()
        got = got.reindex(range(n))
        return [None if m else v for v, m in zip(got.astype(object).tolist(), got.isna().tolist())]

    status = frame["status"] if "status" in frame.columns else pd.Series(None, index=frame.index, dtype=object)
    removed = status.where(status.isin(REMOVED_STATUSES)).reset_index(drop=True).groupby(codes, sort=True).first()
    removed = removed.reindex(range(n))
    last_status = per_line("status", "last")
    line_status = [last_status[i] if pd.isna(r) else r for i, r in enumerate(removed.tolist())]
    outcome = per_line("outcome", "last")
    ts = pd.to_datetime(_col(frame, "timestamp"), utc=True, errors="coerce")
    start, end = ts.iloc[first].reset_index(drop=True), ts.iloc[last].reset_index(drop=True)
    duration = (end - start).dt.total_seconds() * 1000.0
    calls = pd.to_numeric(_col(frame, "call_count", 0), errors="coerce").fillna(0).to_numpy(dtype="int64")
    completed = _col(frame, "completed", False).fillna(False).to_numpy(dtype=bool)
    names = action_names(frame, known)
    uuids = _col(frame, "action_uuid").to_numpy(dtype=object)[first]
    return pd.DataFrame({
        "line": np.arange(n), "execution": execution[first], "seq": _ints(_col(frame, "seq").iloc[first]),
        "attempt": _ints(_col(frame, "attempt").iloc[first]),
        "action": [action_label(u, names) if isinstance(u, str) else "record" for u in uuids],
        "action_uuid": uuids, "event_type": _objects(frame.iloc[first], "task_event_type"),
        "state_key": _objects(frame.iloc[first], "state_key"),
        "first_pos": pos[first], "last_pos": pos[last],
        "positions": [tuple(p) for p in np.split(pos[order], starts[1:])],
        "records": sizes, "start": start, "end": end,
        "duration_ms": duration.astype(object).where(duration.notna(), None),
        "calls": np.maximum.reduceat(calls[order], starts), "completed": np.logical_or.reduceat(completed[order], starts),
        "status": line_status, "statuses": _distinct(status, codes, n), "outcome": outcome,
        "reason": per_line("reason", "last"), "divergences": _line_divergences(frame, codes, n, divergences),
        "diverged": False, "rerun": [o == "RERUN" for o in outcome],
    }, columns=list(_LINE_COLUMNS)).assign(diverged=lambda f: f["divergences"].map(bool))


def _ints(values: pd.Series) -> list[int | None]:
    return [_int(v) for v in values.tolist()]


def _distinct(values: pd.Series, codes: np.ndarray, n: int) -> list[tuple[object, ...]]:
    """Per line, the distinct non-missing values of its records, in log order."""
    seen: list[dict[object, None]] = [{} for _ in range(n)]
    missing = values.isna().tolist()
    for code, value, m in zip(codes.tolist(), values.astype(object).tolist(), missing):
        if not m:
            seen[code][value] = None
    return [tuple(d) for d in seen]


def _line_divergences(frame: pd.DataFrame, codes: np.ndarray, n: int,
                      divergences: pd.DataFrame | None) -> list[tuple[object, ...]]:
    """Per line, the sorted ids of the divergences its records take part in."""
    extra = _divergent_positions(divergences)
    own = _objects(frame, "divergence_id")
    found: dict[int, set[object]] = {}
    for i, (p, d) in enumerate(zip(frame.index.tolist(), own)):
        ids = [x for x in (d, extra.get(p)) if x is not None]
        if ids:
            found.setdefault(int(codes[i]), set()).update(ids)
    return [tuple(sorted(found.get(i, ()), key=str)) for i in range(n)]


def _int(value: Any) -> int | None:
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _divergent_positions(divergences: pd.DataFrame | None) -> dict[int, object]:
    """Record position → divergence id, from a divergences frame's ``positions``."""
    if divergences is None or divergences.empty or "positions" not in divergences.columns:
        return {}
    ids = divergences["id"].tolist() if "id" in divergences.columns else divergences.index.tolist()
    out: dict[int, object] = {}
    for did, positions in zip(ids, divergences["positions"].tolist()):
        if isinstance(positions, (int, np.integer)):
            positions = (positions,)
        if not isinstance(positions, (list, tuple, np.ndarray)):
            continue
        for p in positions:
            out.setdefault(int(p), did)
    return out


class SearchIndex:
    """Case-insensitive substring search over one key's records: their attributes and their values.

    Built once (each attribute column factorized, each value lowered), so every search after the
    first costs one pass over the distinct attribute texts and one substring test per value.
    ``values[i]`` is the stored value of the record at position ``records.index[i]`` (JSON bytes;
    None for a tombstone): an order id inside a decoded value matches, as do a state key, an event
    id or a status.

    For example::

        one = log.records[log.records["business_key"] == "user-0011"]
        index = ai.history.SearchIndex(one, [log.raw.value[pos] for pos in one.index])
        index.find("order")                            # positions whose attributes or value contain it
    """

    def __init__(self, records: pd.DataFrame, values: Sequence[bytes | None]) -> None:
        self.positions: np.ndarray = records.index.to_numpy(dtype="int64")
        self._columns: list[tuple[np.ndarray, list[str]]] = []
        for name in _SEARCH_COLUMNS:
            if name not in records.columns:
                continue
            col = records[name].to_numpy(dtype=object)
            try:
                codes, uniques = pd.factorize(col, use_na_sentinel=True)
            except TypeError:  # unhashable cells (lists): their text instead
                codes, uniques = pd.factorize(np.array([str(v) for v in col], dtype=object))
            self._columns.append((codes, [str(u).lower() for u in uniques]))
        self._values = [b"" if v is None else bytes(v).lower() for v in values]

    def find(self, text: str) -> np.ndarray:
        """Positions (ascending) of the records that contain ``text`` (every position for an empty text)."""
        needle = text.strip().lower()
        if not needle:
            return self.positions
        hit = np.zeros(len(self.positions), dtype=bool)
        for codes, uniques in self._columns:
            matching = np.array([needle in u for u in uniques] + [False], dtype=bool)
            hit |= matching[codes]  # code -1 (missing) picks the trailing False
        encoded = needle.encode("utf-8")
        hit |= np.fromiter((encoded in v for v in self._values), dtype=bool, count=len(self._values))
        return self.positions[hit]


def matching_positions(records: pd.DataFrame, values: Sequence[bytes | None], text: str) -> np.ndarray:
    """Positions (ascending) of the records whose attributes or value contain ``text``, case-insensitively
    (a one-off :class:`SearchIndex`).

    For example::

        one = log.records[log.records["business_key"] == "user-0011"]
        ai.history.matching_positions(one, [log.raw.value[pos] for pos in one.index], "ORDER")
    """
    return SearchIndex(records, values).find(text)
