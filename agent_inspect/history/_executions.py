"""Per business key, in log order: action executions, attempts, rounds and event lineage (spec §15.5)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from agent_inspect._glossary import plural
from agent_inspect._types import RecordSource
from agent_inspect.history._refresh import refresh_rows

__all__ = ["History", "build_history", "executions", "attempts", "rounds", "lineage", "annotate", "annotate_rows",
           "ATTEMPT_REASONS"]

ATTEMPT_REASONS = (
    "completed-key-rewritten",  # a state key that completed in this attempt is written again
    "round-regression",         # a record of an earlier seq than the key's latest round
    "initial-rewritten",        # an initial record for a state key already written in this attempt
    "root-conflict",            # a second, different root input at one (key, seq)
)
"""Why a new attempt (a restore) is seen to begin at a record (spec §15.5, plus two equivalent signals)."""

_COLUMNS = ("business_key", "seq", "state_key", "action_uuid", "event_uuid", "is_root", "completed",
            "call_count", "output_event_count", "tombstone", "task_event_id", "task_event_type",
            "upstream_event_id", "output_event_ids")


def _frame(log: RecordSource) -> pd.DataFrame:
    return log if isinstance(log, pd.DataFrame) else log.records


def _lists(records: pd.DataFrame, names: Sequence[str] = _COLUMNS) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for name in names:
        if name not in records.columns:
            out[name] = [None] * len(records)
            continue
        col = records[name]
        values = col.astype(object).tolist()
        if name != "output_event_ids" and col.isna().any():
            values = [None if m else v for v, m in zip(values, col.isna().tolist())]
        out[name] = values
    return out


def annotate(log: RecordSource, *, kafka_pending: str | None = None) -> pd.DataFrame:
    """Per record (same index as ``log.records``): ``execution`` (-1 for tombstones and undecodable
    keys), ``attempt`` (1-based, per business key; NA when the key did not parse) and
    ``attempt_start`` (the reason a new attempt begins at this record, else None).

    Attempts are seen per business key in log order: a new one begins where a state key that
    completed in the current attempt is written again, where a record goes back to an earlier seq
    (spec §15.5), where an initial record rewrites a state key already written in this attempt, or
    where a second, different root input appears at one (key, seq) — all impossible without a restore.
    Executions are the writes of one state key within one attempt, starting a new one after a
    completed record or at a rewritten initial record (spec §5.6). Partition-local: call per partition.
    A log written by 0.4 or main is read without its checkpoint-time refresh rows (:func:`refresh_rows`,
    addendum §2.2: no attempts, no executions): theirs are -1, NA and None. A Kafka log written with
    ``kafka_pending="marker"`` (addendum §2.3) has none: every repeated value in it is a write of its own.

    For example::

        marks = ai.history.annotate(log)               # same index as log.records
        marks[["execution", "attempt", "attempt_start"]].dropna().head()
    """
    return annotate_rows(_frame(log), refresh_rows(log, kafka_pending=kafka_pending))


def annotate_rows(records: pd.DataFrame, refresh: Collection[int]) -> pd.DataFrame:
    """:func:`annotate` of ``records`` (some or all of a log's) read without the ``refresh`` positions: what views
    of one key's rows use, with the refresh rows of the whole log (``refresh_rows(log)``), so a key's rows read as
    the whole log does.

    For example::

        v4 = ai.load(ai.samples.path("production_v4"))
        one = v4.records[v4.records["business_key"] == v4.keys()[0]]
        ai.history.annotate_rows(one, ai.history.refresh_rows(v4))["execution"].lt(0).sum()   # 30 refresh rows
    """
    n = len(records)
    c = _lists(records, _ANNOTATE_COLUMNS)
    skip = records.index.isin(list(refresh)).tolist() if refresh else None
    # Python lists while filling (an item store into an array costs several times a list's), arrays at the end
    execution = [-1] * n
    attempt = [0] * n
    starts: list[str | None] = [None] * n
    key_state: dict[Any, _KeyAttempt] = {}
    open_exec: dict[str, tuple[int, int, bool]] = {}   # state key -> (execution id, attempt, completed)
    next_exec = 0
    for i, (k, seq, sk, tomb, done, calls, outs, root, fp) in enumerate(zip(*(c[name] for name in _ANNOTATE_COLUMNS))):
        if k is None or seq is None or sk is None or (skip is not None and skip[i]):
            continue
        st = key_state.get(k)
        if st is None:
            st = key_state[k] = _KeyAttempt(seq)
        if tomb:
            attempt[i] = st.attempt
            continue
        completed = bool(done)
        is_root = bool(root)
        reason = None
        if sk in st.completed:
            reason = "completed-key-rewritten"
        elif seq < st.max_seq:
            reason = "round-regression"
        elif not completed and not calls and not outs and sk in st.written:   # an initial record, written again
            reason = "initial-rewritten"
        elif is_root and fp is not None and (seen := st.roots.get(seq)) is not None and (
                len(seen) > 1 or fp not in seen):   # another input at this round
            reason = "root-conflict"
        if reason is not None:
            st.restart(seq)
            starts[i] = reason
        cur = st.attempt
        attempt[i] = cur
        if seq > st.max_seq:
            st.max_seq = seq
        st.written.add(sk)
        if is_root and fp is not None:
            st.roots.setdefault(seq, set()).add(fp)
        prev = open_exec.get(sk)
        if prev is None or prev[1] != cur or prev[2]:
            ex = next_exec
            next_exec += 1
        else:
            ex = prev[0]
        execution[i] = ex
        open_exec[sk] = (ex, cur, completed)
        if completed:
            st.completed.add(sk)
    attempts = np.array(attempt, dtype="int64")
    return pd.DataFrame({
        "execution": np.array(execution, dtype="int64"),
        "attempt": pd.arrays.IntegerArray(attempts, attempts == 0),
        "attempt_start": pd.Series(starts, dtype="object", index=records.index),
    }, index=records.index)


_ANNOTATE_COLUMNS = ("business_key", "seq", "state_key", "tombstone", "completed", "call_count",
                     "output_event_count", "is_root", "event_uuid")


class _KeyAttempt:
    """One business key's current attempt in :func:`annotate`: its number, latest seq, and what it wrote."""

    __slots__ = ("attempt", "max_seq", "written", "completed", "roots")

    def __init__(self, seq: Any) -> None:
        self.attempt = 0
        self.restart(seq)   # the first attempt

    def restart(self, seq: Any) -> None:
        """A new attempt begins at ``seq``."""
        self.attempt += 1
        self.max_seq = seq
        self.written: set[str] = set()
        self.completed: set[str] = set()
        self.roots: dict[Any, set[Any]] = {}


@dataclass(frozen=True)
class History:
    """What the log shows per business key: records annotated with execution and attempt, and the
    executions, attempts, rounds and lineage frames. Positions are ``log.records`` index values.

    For example::

        h = ai.history.build_history(log)
        h.attempts.head(), h.rounds.head(), h.lineage.head()
    """

    records: pd.DataFrame
    executions: pd.DataFrame
    attempts: pd.DataFrame
    rounds: pd.DataFrame
    lineage: pd.DataFrame

    def __repr__(self) -> str:
        # one line of counts: the frames stay attributes
        return (f"History({plural(len(self.records), 'record')}, {plural(len(self.executions), 'execution')}, "
                f"{plural(len(self.attempts), 'attempt')}, {plural(len(self.rounds), 'round')})")


def build_history(log: RecordSource, *, annotated: pd.DataFrame | None = None,
                  kafka_pending: str | None = None) -> History:
    """Executions, attempts, rounds and lineage of every business key of ``log`` (or a records frame).

    For example::

        h = ai.history.build_history(log)              # executions, attempts, rounds and lineage at once
        len(h.executions), len(h.attempts)
    """
    records = _frame(log)
    ann = annotate(log, kafka_pending=kafka_pending) if annotated is None else annotated
    rec = pd.concat([records[[c for c in ("business_key", "seq", "state_key") if c in records.columns]], ann], axis=1)
    rec.index.name = "pos"
    rows = _execution_rows(records, ann)
    return History(rec, _execution_frame(rows), _attempts(records, ann), _rounds(records, ann),
                   _lineage(records, ann, rows))


def _executions(records: pd.DataFrame, ann: pd.DataFrame) -> pd.DataFrame:
    return _execution_frame(_execution_rows(records, ann))


_EXEC_COLUMNS = ["execution", "business_key", "seq", "attempt", "state_key", "action_uuid", "event_uuid", "is_root",
                 "task_event_id", "task_event_type", "upstream_event_id", "initial", "completed", "max_calls",
                 "writes", "first_pos", "last_pos", "positions", "output_event_ids"]


def _execution_rows(records: pd.DataFrame, ann: pd.DataFrame) -> list[dict[str, Any]]:
    c = _lists(records)
    ex = ann["execution"].to_numpy()
    att = ann["attempt"].astype(object).tolist()
    rows: dict[int, dict[str, Any]] = {}
    for i, pos in enumerate(records.index.tolist()):
        e = int(ex[i])
        if e < 0:
            continue
        row = rows.get(e)
        if row is None:
            rows[e] = row = {
                "execution": e, "business_key": c["business_key"][i], "seq": c["seq"][i],
                "attempt": att[i], "state_key": c["state_key"][i], "action_uuid": c["action_uuid"][i],
                "event_uuid": c["event_uuid"][i], "is_root": bool(c["is_root"][i]),
                "task_event_id": c["task_event_id"][i], "task_event_type": c["task_event_type"][i],
                "upstream_event_id": c["upstream_event_id"][i],
                "initial": not c["completed"][i] and not (c["call_count"][i] or 0),
                "first_pos": pos, "positions": [], "completed": False, "max_calls": 0,
                "output_event_ids": (),
            }
        row["positions"].append(pos)
        row["last_pos"] = pos
        row["completed"] = bool(c["completed"][i])
        row["max_calls"] = max(row["max_calls"], int(c["call_count"][i] or 0))
        if c["completed"][i]:
            outs = c["output_event_ids"][i]
            row["output_event_ids"] = tuple(outs) if outs is not None else ()
    for row in rows.values():
        row["positions"] = tuple(row["positions"])
        row["writes"] = len(row["positions"])
    return list(rows.values())


def _execution_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=_EXEC_COLUMNS)
    return _typed(frame.set_index("execution", drop=False).rename_axis(None))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    for name in ("seq", "attempt", "first_pos", "last_pos"):
        if name in frame.columns:
            frame[name] = frame[name].astype("Int64")
    return frame


def _attempts(records: pd.DataFrame, ann: pd.DataFrame) -> pd.DataFrame:
    frame = pd.DataFrame({"business_key": records["business_key"] if "business_key" in records else None,
                          "seq": records["seq"] if "seq" in records else None,
                          "attempt": ann["attempt"], "attempt_start": ann["attempt_start"],
                          "pos": records.index}).dropna(subset=["attempt"])
    if frame.empty:
        return pd.DataFrame(columns=["business_key", "attempt", "start_reason", "first_pos", "last_pos",
                                     "records", "min_seq", "max_seq"])
    g = frame.groupby(["business_key", "attempt"], sort=False, observed=True)
    out = g.agg(first_pos=("pos", "min"), last_pos=("pos", "max"), records=("pos", "size"),
                min_seq=("seq", "min"), max_seq=("seq", "max"), start_reason=("attempt_start", "first"))
    out = out.reset_index()[["business_key", "attempt", "start_reason", "first_pos", "last_pos", "records",
                             "min_seq", "max_seq"]]
    out.loc[out["attempt"] == 1, "start_reason"] = None
    return _typed(out.sort_values(["first_pos"]).reset_index(drop=True))


def _rounds(records: pd.DataFrame, ann: pd.DataFrame) -> pd.DataFrame:
    cols = ["business_key", "seq", "attempt", "first_pos", "last_pos", "records", "executions", "roots",
            "completed"]
    c = _lists(records)
    ex = ann["execution"].tolist()
    att = ann["attempt"].astype(object).tolist()
    acc: dict[tuple[Any, Any, Any], list[Any]] = {}
    for i, pos in enumerate(records.index.tolist()):
        if ex[i] < 0:
            continue
        key = (c["business_key"][i], c["seq"][i], att[i])
        row = acc.get(key)
        if row is None:
            row = acc[key] = [pos, pos, 0, set(), set(), 0]
        row[1] = pos
        row[2] += 1
        row[3].add(ex[i])
        if c["is_root"][i] and c["event_uuid"][i] is not None:
            row[4].add(c["event_uuid"][i])
        if c["completed"][i]:
            row[5] += 1
    rows = [(k, s, a, r[0], r[1], r[2], len(r[3]), tuple(sorted(r[4])), r[5]) for (k, s, a), r in acc.items()]
    frame = pd.DataFrame(rows, columns=cols).sort_values("first_pos", kind="stable").reset_index(drop=True)
    return _typed(frame)


def _lineage(records: pd.DataFrame, ann: pd.DataFrame, rows: list[dict[str, Any]] | None = None) -> pd.DataFrame:
    """Edges parent execution → child execution through one event id (output ids, upstreamEventId)."""
    cols = ["business_key", "seq", "parent_execution", "child_execution", "event_id", "via",
            "parent_pos", "child_pos"]
    if rows is None:
        rows = _execution_rows(records, ann)
    producers: dict[tuple[Any, Any, str], list[tuple[int, int]]] = {}
    triggers: dict[tuple[Any, Any, str], list[tuple[int, int]]] = {}
    for row in rows:
        k, s = row["business_key"], row["seq"]
        for oid in row["output_event_ids"]:
            producers.setdefault((k, s, oid), []).append((row["execution"], row["last_pos"]))
        if row["task_event_id"] is not None:
            triggers.setdefault((k, s, row["task_event_id"]), []).append((row["execution"], row["first_pos"]))
    edges = []
    for row in rows:
        k, s, ex, first = row["business_key"], row["seq"], row["execution"], row["first_pos"]
        tid, up = row["task_event_id"], row["upstream_event_id"]
        if tid is not None:
            for parent, ppos in _latest_before(producers.get((k, s, tid)), first):
                edges.append((k, s, parent, ex, tid, "output", ppos, first))
        if up is not None:
            for parent, ppos in _latest_before(triggers.get((k, s, up)), first):
                if parent != ex:
                    edges.append((k, s, parent, ex, up, "upstream", ppos, first))
    frame = pd.DataFrame(edges, columns=cols).drop_duplicates(subset=["parent_execution", "child_execution"])
    return frame.reset_index(drop=True)


def _latest_before(candidates: Sequence[tuple[int, int]] | None, pos: int) -> list[tuple[int, int]]:
    if not candidates:
        return []
    before = [c for c in candidates if c[1] <= pos]
    return [max(before, key=lambda c: c[1])] if before else [min(candidates, key=lambda c: c[1])]


def executions(log: RecordSource, *, kafka_pending: str | None = None) -> pd.DataFrame:
    """One row per action execution (the writes of one state key in one attempt), in log order.

    For example::

        ai.history.executions(log).head()              # one row per action execution
    """
    return _executions(_frame(log), annotate(log, kafka_pending=kafka_pending))


def attempts(log: RecordSource, *, kafka_pending: str | None = None) -> pd.DataFrame:
    """One row per (business key, attempt) with where it starts and why (spec §15.5).

    For example::

        ai.history.attempts(log).head()                # where each key's attempts begin, and why
    """
    return _attempts(_frame(log), annotate(log, kafka_pending=kafka_pending))


def rounds(log: RecordSource, *, kafka_pending: str | None = None) -> pd.DataFrame:
    """One row per (business key, seq, attempt): records, executions, root fingerprints, completions.

    For example::

        ai.history.rounds(log).head()                  # one row per (key, seq, attempt)
    """
    return _rounds(_frame(log), annotate(log, kafka_pending=kafka_pending))


def lineage(log: RecordSource, *, kafka_pending: str | None = None) -> pd.DataFrame:
    """Parent → child execution edges from output event ids and ``upstreamEventId`` (same key and seq).

    For example::

        ai.history.lineage(log).head()                 # parent -> child executions
    """
    return _lineage(_frame(log), annotate(log, kafka_pending=kafka_pending))
