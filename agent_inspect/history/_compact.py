"""A compact history of one business key: one line per action execution (Temporal's compact mode).

Each line folds an execution's initial, call and completed records (``execution`` of the
reconstruction's frame, else of :func:`annotate`); tombstones and records without an execution get a
line of their own. Times and durations come from the record timestamps; status and outcome come from
the reconstruction under its rule. Pure functions over plain frames and byte strings.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from agent_inspect.history._executions import annotate

__all__ = ["compact_history", "record_kinds", "matching_positions", "REMOVED_STATUSES"]

#: Statuses of records a recovery dropped; a line with one of them shows it rather than its last status.
REMOVED_STATUSES = ("evicted", "invalidated")

_LINE_COLUMNS = ("line", "execution", "seq", "attempt", "action", "action_uuid", "event_type", "state_key",
                 "first_pos", "last_pos", "positions", "records", "start", "end", "duration_ms", "calls",
                 "completed", "status", "statuses", "outcome", "reason", "divergences", "diverged", "rerun")
# Record columns whose text a search looks at, besides the record's value.
_SEARCH_COLUMNS = ("state_key", "task_event_type", "task_event_id", "upstream_event_id", "upstream_action",
                   "event_uuid", "action_uuid", "status", "reason", "outcome", "outcome_reason", "error",
                   "subagent_session_id", "subagent_call_id", "output_event_types", "output_event_ids")


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
    """Per record: ``initial``, ``call``, ``completed`` or ``tombstone`` (a record of no execution: ``record``)."""
    completed = _col(frame, "completed", False).fillna(False).to_numpy(dtype=bool)
    calls = pd.to_numeric(_col(frame, "call_count", 0), errors="coerce").fillna(0).to_numpy() > 0
    tomb = _col(frame, "tombstone", False).fillna(False).to_numpy(dtype=bool)
    out = np.where(completed, "completed", np.where(calls, "call", "initial")).astype(object)
    out[tomb] = "tombstone"
    return out


def _action_names(frame: pd.DataFrame) -> dict[object, str]:
    """``action_uuid`` → the action's name, read from the records its output events triggered."""
    if "upstream_action" not in frame.columns or "task_event_id" not in frame.columns:
        return {}
    emitted_by = dict(zip(frame["task_event_id"].tolist(), frame["upstream_action"].tolist()))
    names: dict[object, str] = {}
    for uuid, outs in zip(_col(frame, "action_uuid").tolist(), _col(frame, "output_event_ids").tolist()):
        if uuid is None or uuid in names or not isinstance(outs, (list, tuple)):
            continue
        for event_id in outs:
            name = emitted_by.get(event_id)
            if isinstance(name, str) and name:
                names[uuid] = name
                break
    return names


def compact_history(records: pd.DataFrame, divergences: pd.DataFrame | None = None) -> pd.DataFrame:
    """One line per action execution of ``records`` (one key's rows, index = log position), in log order.

    Columns: ``line`` (0-based), ``execution``, ``seq``, ``attempt``, ``action`` (name when the log shows
    it, else ``action <uuid>``), ``event_type`` (the event that triggered it), ``first_pos`` / ``last_pos``
    / ``positions`` / ``records``, ``start`` / ``end`` (record timestamps) and ``duration_ms``, ``calls``,
    ``completed``, ``status`` (a removed status if any record has one, else the last record's),
    ``statuses`` (distinct, in order), ``outcome`` and ``reason`` (the last record's that has one),
    ``divergences`` (ids), ``diverged`` and ``rerun`` (outcome RERUN).
    """
    frame = records
    if frame.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in _LINE_COLUMNS})
    if "execution" not in frame.columns:
        frame = frame.assign(execution=annotate(frame)["execution"].to_numpy())
    pos = frame.index.to_numpy(dtype="int64")
    execution = pd.to_numeric(frame["execution"], errors="coerce").fillna(-1).to_numpy(dtype="int64")
    # Records of no execution are lines of their own: a negative group id per record.
    group = np.where(execution >= 0, execution, -1 - pos)
    codes, first_seen = pd.factorize(group, sort=False)
    n = len(first_seen)
    ts = list(pd.to_datetime(_col(frame, "timestamp"), utc=True, errors="coerce"))
    status = _objects(frame, "status")
    outcome = _objects(frame, "outcome")
    reason = _objects(frame, "reason")
    div = _objects(frame, "divergence_id")
    extra = _divergent_positions(divergences)
    names = _action_names(frame)
    seqs, attempts = _col(frame, "seq").tolist(), _col(frame, "attempt").tolist()
    uuids, types, sks = _col(frame, "action_uuid").tolist(), _col(frame, "task_event_type").tolist(), \
        _col(frame, "state_key").tolist()
    calls = pd.to_numeric(_col(frame, "call_count", 0), errors="coerce").fillna(0).to_numpy(dtype="int64")
    completed = _col(frame, "completed", False).fillna(False).to_numpy(dtype=bool)
    members: list[list[int]] = [[] for _ in range(n)]
    for i, c in enumerate(codes.tolist()):
        members[c].append(i)
    rows = []
    for line, idx in enumerate(members):
        first, last = idx[0], idx[-1]
        st = [status[i] for i in idx if status[i] is not None]
        removed = [s for s in st if s in REMOVED_STATUSES]
        ids = sorted({div[i] for i in idx if div[i] is not None} | {extra[p] for p in pos[idx].tolist() if p in extra},
                     key=str)
        out = next((outcome[i] for i in reversed(idx) if outcome[i] is not None), None)
        why = next((reason[i] for i in reversed(idx) if reason[i] is not None), None)
        start, end = ts[first], ts[last]
        uuid = uuids[first]
        rows.append({
            "line": line, "execution": int(execution[first]), "seq": _int(seqs[first]), "attempt": _int(attempts[first]),
            "action": names.get(uuid) or (f"action {str(uuid)[:8]}" if uuid is not None else "record"),
            "action_uuid": uuid, "event_type": types[first], "state_key": sks[first],
            "first_pos": int(pos[first]), "last_pos": int(pos[last]), "positions": tuple(pos[idx].tolist()),
            "records": len(idx), "start": start, "end": end,
            "duration_ms": None if pd.isna(start) or pd.isna(end) else (end - start).total_seconds() * 1000.0,
            "calls": int(calls[idx].max()), "completed": bool(completed[idx].any()),
            "status": removed[0] if removed else (st[-1] if st else None), "statuses": tuple(dict.fromkeys(st)),
            "outcome": out, "reason": why, "divergences": tuple(ids), "diverged": bool(ids),
            "rerun": out == "RERUN",
        })
    return pd.DataFrame(rows, columns=list(_LINE_COLUMNS))


def _int(value: object) -> int | None:
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return None
    try:
        return int(value)  # type: ignore[call-overload]
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


def matching_positions(records: pd.DataFrame, values: Sequence[bytes | None], text: str) -> np.ndarray:
    """Positions (ascending) of the records whose attributes or value contain ``text``, case-insensitively.

    ``values[i]`` is the stored value of the record at position ``records.index[i]`` (JSON bytes; None for
    a tombstone). An order id inside a decoded value matches, as does a state key, event id or status.
    """
    needle = text.strip().lower()
    pos = records.index.to_numpy(dtype="int64")
    if not needle:
        return pos
    hit = np.zeros(len(records), dtype=bool)
    for name in _SEARCH_COLUMNS:
        if name not in records.columns:
            continue
        col = records[name].astype(str).str.lower()
        hit |= col.str.contains(needle, regex=False).fillna(False).to_numpy(dtype=bool)
    encoded = needle.encode("utf-8")
    for i, raw in enumerate(values):
        if not hit[i] and raw is not None and encoded in bytes(raw).lower():
            hit[i] = True
    return pos[hit]
