"""Rebuild the cache from recovery markers (spec §6.5, §7.4, §8.4): the window, entries, last write wins."""

from __future__ import annotations

import weakref
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from agent_inspect._bulk import once_per_log
from agent_inspect._errors import DataLossError, RecoveryError
from agent_inspect._glossary import count_words
from agent_inspect.codec import merge_markers
from agent_inspect.history import source_kind_of
from agent_inspect.rules import resolve_rule
from agent_inspect.store import DivergenceRule, Entry, RecoverySession

if TYPE_CHECKING:
    from agent_inspect._types import LogLike, MarkersLike
    from agent_inspect.log import ActionStateLog
    from agent_inspect.raw import SourceInfo

__all__ = ["Markers", "normalize_markers", "rebuild_start", "window_mask", "iter_entries", "rebuild", "rebuild_records",
           "source_kind_of", "Undecodable", "restore_failures", "whole_log_markers"]

Markers = Sequence[Mapping[int, int]] | Mapping[int, int] | None
"""Recovery markers: one ``{partition: offset}`` map per subtask (spec §6.4, §7.4), or None."""


def normalize_markers(markers: MarkersLike) -> dict[int, int] | None:
    """Start offset per partition: the minimum over all markers (plain maps or the versioned Kafka form, §6.4);
    None for a fresh start (no markers, or ``[]``: spec §6.5 step 1).

    For example::

        ai.recovery.normalize_markers([{0: 120, 1: 98}, {0: 110}])   # {0: 110, 1: 98}: the minimum per partition
        ai.recovery.normalize_markers([])                             # None: a fresh start
    """
    if markers is None:
        return None
    return merge_markers(markers, error=RecoveryError) or None


def rebuild_start(markers: MarkersLike) -> dict[int, int] | None:
    """Where a rebuild starts, as results keep it: None without markers (the whole loaded log), ``{}`` for a fresh
    start (``[]``), else :func:`normalize_markers`'s offsets. Unlike that, a fresh start is not read as the whole log.

    For example::

        ai.recovery.rebuild_start([{0: 120}, {0: 110}])                   # {0: 110}: the minimum per partition
        ai.recovery.rebuild_start(None)                                   # None: the whole log
        ai.recovery.rebuild_start([])                                     # {}: a fresh start, nothing is read
    """
    return None if markers is None else normalize_markers(markers) or {}


def marker_warnings(markers: Markers, partitions: ActionStateLog | pd.DataFrame | Iterable[int] | None) -> list[str]:
    """What markers leave out of the loaded log's partitions, one sentence each (spec §6.5 step 2: only partitions
    named in some marker are read); none without markers. ``partitions``: the log, its records, or partition numbers.

    A marker past a partition's end (its last loaded offset + 1, or the source's end offset when the load recorded
    one) leaves that partition's records out of the window; a marker right at the end is a checkpoint with nothing
    after it.

    For example::

        ai.recovery.marker_warnings([{99: 5}], log)     # ["the markers name partition 99, none of the log's (...)"]
        ai.recovery.marker_warnings([{99: 5}], [0])     # the same from the partition numbers
    """
    merged = normalize_markers(markers)
    if partitions is None or not merged:
        return []
    last: dict[int, int] = {}
    ends: dict[int, int] = {}
    if hasattr(partitions, "records") or isinstance(partitions, pd.DataFrame):
        frame = _frame(partitions)
        last = {int(p): int(o) for p, o in frame.groupby("partition")["offset"].max().dropna().items()}
        ends = {p: o + 1 for p, o in last.items()}
        # a Kafka load's end offset (the high watermark) may lie beyond its last record (transaction markers)
        for p, end in (getattr(getattr(partitions, "source", None), "end_offsets", None) or {}).items():
            ends[int(p)] = max(ends.get(int(p), 0), int(end))
        partitions = [int(p) for p in pd.unique(frame["partition"].dropna())]
    loaded = sorted(p for p in set(partitions) if p >= 0)    # -1: lines of a file that are not records
    if not loaded:
        return []
    unmarked = [p for p in loaded if p not in merged]
    past = [p for p in sorted(merged) if p in ends and merged[p] > ends[p]]
    if past and set(loaded) <= set(past) | set(unmarked):
        # every marker beyond the log's last record: the window is empty, as with another topic's markers
        scope = "every partition it holds" if not unmarked else "every partition of it they name"
        rest = f", and {_partitions(unmarked)} {_has(unmarked)} no marker" if unmarked else ""
        return [f"the markers lie past the log's end in {scope} ({_past_where(past, merged, last, ends)}){rest}: "
                f"nothing of it is in the rebuild window and no input is replayed; are they {_ask('markers')}"]
    if len(unmarked) == len(loaded):
        return [f"the markers name {_partitions(sorted(merged))}, none of the log's ({_partitions(loaded)}): "
                "nothing of it is in the rebuild window and no input is replayed; are they this topic's markers?"]
    said = []
    if unmarked:
        its = "its" if len(unmarked) == 1 else "their"
        said.append(f"{_partitions(unmarked)} {_has(unmarked)} no marker: the rebuild reads none of {its} records "
                    f"and replays none of {its} inputs")
    if past:
        one = len(past) == 1
        # not "replays none of its inputs": verify's plan comes from the trace, a given plan from the user
        noun = count_words(len(past), "marker")
        said.append(f"the {noun} of {_partitions(past)} {count_words(len(past), 'lies', 'lie')} past "
                    f"{'its end' if one else 'their ends'} ({_past_where(past, merged, last, ends, not one)}): none of "
                    f"{'its' if one else 'their'} records is in the rebuild window; "
                    f"{'is it' if one else 'are they'} {_ask(noun)}")
    return said


def _ask(markers: str) -> str:
    return f"this log's {markers} (another job's checkpoint?), or was the log read before the restore?"


def _past_where(past: list[int], merged: Mapping[int, int], last: Mapping[int, int], ends: Mapping[int, int],
                named: bool = True) -> str:
    """Each marker past its partition's end against that end: the last offset, or the source's end offset when
    that lies beyond it (the first three, then "…"); ``named``: each prefixed with its partition."""
    def one(p: int) -> str:
        end = f"last offset {last[p]}" if last.get(p, -2) + 1 == ends[p] else f"end offset {ends[p]}"
        return f"{f'partition {p}: ' if named else ''}marker {merged[p]}, {end}"
    return "; ".join(map(one, past[:3])) + ("; …" if len(past) > 3 else "")


def _has(numbers: list[int]) -> str:
    return "has" if len(numbers) == 1 else "have"


def _partitions(numbers: list[int]) -> str:
    return f"{count_words(len(numbers), 'partition')} " + ", ".join(map(str, numbers))


@dataclass(frozen=True, slots=True)
class Undecodable:
    """Stands in for the entry of a record whose key or value did not decode (``iter_entries(undecodable=True)``)."""

    error: str
    business_key: str | None = None
    seq: int | None = None
    #: a line of a file that holds no record at all (a damaged dump): the topic's record there is unknown
    no_record: bool = False


def _frame(log: Any) -> pd.DataFrame:
    return log.records if hasattr(log, "records") else log


def window_mask(records: pd.DataFrame, markers: Markers, *, start_offsets: Mapping[int, int] | None = None,
                source: SourceInfo | None = None) -> np.ndarray:
    """Which rows the rebuild reads: marker partitions only, from the minimum marker offset to the end.

    A marker below ``start_offsets`` (where the source read from) means the loaded log lacks records the rebuild
    reads; below a Kafka source's ``options["log_start"]`` it is a :class:`DataLossError`, as the 0.4+ rebuild
    fails (addendum §2.1). A Fluss ``source`` gets upstream's restore checks (spec §7.4): the table's buckets,
    no marker past a bucket's end.

    For example::

        mask = ai.recovery.window_mask(log.records, markers)   # the rows the rebuild reads
        int(mask.sum()), len(log.records)
    """
    start = normalize_markers(markers)
    if start is None:
        return np.zeros(len(records), dtype=bool)
    if source is not None and source.kind == "fluss" and source.end_offsets:
        ends = {int(p): int(o) for p, o in source.end_offsets.items()}
        if set(start) != set(ends):
            raise RecoveryError(f"recovery marker bucket set {sorted(start)} does not match the table's buckets "
                                f"{sorted(ends)}: upstream fails this restore (table recreated or re-bucketed)")
        for p, off in start.items():
            if off > ends[p]:
                raise RecoveryError(f"data loss detected for bucket {p}: marker offset {off} is past its end "
                                    f"{ends[p]}; upstream fails this restore")
    log_start = source.options.get("log_start") if source is not None else None
    if log_start:
        first = {int(p): int(o) for p, o in log_start.items()}
        for p, off in sorted(start.items()):
            if p in first and off < first[p]:
                raise DataLossError(
                    f"data loss in partition {p}: recovery marker offset {off} is below the log start {first[p]} "
                    f"(retention or a #1101 cleanup boundary removed the records before it); a 0.4+ rebuild "
                    f"fails this restore (0.3 silently read from the log start)")
    if start_offsets:
        for p, off in start.items():
            have = start_offsets.get(p)
            if have is not None and off < 0:     # below every loaded start: loading from the markers cannot help
                raise RecoveryError(f"marker offset {off} for partition {p} is negative: no record has a negative "
                                    "offset (they start at 0; -1 and -2 are a Kafka consumer's 'latest' and "
                                    "'earliest', not positions); pass the offsets the checkpoint recorded "
                                    "(ai.checkpoint.read(DIR).recovery_markers()), or 0 to rebuild from the "
                                    "partition's first record")
            if have is not None and off < have:
                raise RecoveryError(f"marker offset {off} for partition {p} is below the loaded start {have}; "
                                    f"load the source from the markers (markers=...) to see the whole window")
    part = records["partition"].to_numpy(dtype="int64", na_value=-1)
    off = records["offset"].to_numpy(dtype="int64", na_value=-1)
    lo = np.full(len(records), np.iinfo(np.int64).max, dtype="int64")
    for p, o in start.items():
        lo[part == p] = o
    return np.asarray(off >= lo)


def _col(records: pd.DataFrame, name: str, default: Any = None) -> list[Any]:
    if name not in records.columns:
        return [default] * len(records)
    col = records[name]
    values: list[Any] = col.astype(object).tolist()
    if col.isna().any():
        values = [default if m else v for v, m in zip(values, col.isna().tolist())]
    return values


def iter_entries(log: LogLike | pd.DataFrame, positions: Iterable[int] | np.ndarray | None = None, *,
                 attempts: Sequence[int | None] | None = None,
                 undecodable: bool = False) -> Iterator[tuple[int, Entry | Undecodable | None, str | None]]:
    """``(pos, entry, state_key)`` for rows of the log in order; entry None for a tombstone.

    Undecodable records are left out, or with ``undecodable=True`` given as an ``Undecodable`` entry (only a null
    value deletes, spec §6.5). Rows without a seqNum (K0) are ``(pos, None, None)``. ``attempts`` (one per row of
    the whole log) fills ``Entry.attempt``.

    For example::

        for pos, entry, state_key in ai.recovery.iter_entries(log, positions=range(3)):
            print(pos, state_key, entry.seq if entry else "tombstone")
    """
    records = _frame(log)
    if positions is not None:
        idx = np.asarray(list(positions) if not isinstance(positions, np.ndarray) else positions)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        if len(idx) != len(records):
            records = records.iloc[idx]
        att = [attempts[i] for i in idx] if attempts is not None else None
    else:
        att = list(attempts) if attempts is not None else None
    # each column in the type its Entry field takes, converted per column (a log's typed columns already are)
    cols = {name: _col(records, name, default) for name, default in _ENTRY_COLUMNS}
    for name, kind in _ENTRY_TYPES.items():
        if name in records.columns and not _typed(records[name].dtype, kind):
            cols[name] = [v if v is None else kind(v) for v in cols[name]]
    index = records.index
    where = index.tolist() if pd.api.types.is_integer_dtype(index.dtype) else [int(p) for p in index]
    tried = [None if a is None or pd.isna(a) else int(a) for a in att] if att is not None else repeat(None)
    rows = zip(where, tried, *cols.values())
    for p, a, sk, bk, seq, eu, au, kf, kt, root, done, eid, etype, outs, n, pending, ok, failed, tomb, error in rows:
        if error is not None:
            if undecodable:   # a file's malformed line has no partition (sources' NO_PARTITION, -1)
                part: Any = records.at[p, "partition"] if "partition" in records.columns else 0
                yield p, Undecodable(str(error), bk, seq, not pd.isna(part) and int(part) < 0), sk
            continue
        if sk is None or seq is None or bk is None:
            yield p, None, sk if seq is not None else None
            continue
        if tomb:
            yield p, None, sk
            continue
        # in field order (binding 20 keywords costs a third of the construction; one per record)
        yield p, Entry(sk, bk, seq, eu, au, kf, kt, root, done, eid, etype,
                       tuple(outs) if outs is not None else (), n, pending, ok, failed, p, a), sk


def _typed(dtype: Any, kind: type) -> bool:
    """Whether a column of ``dtype`` gives values of ``kind`` (or missing) as they are."""
    if kind is int:
        return bool(pd.api.types.is_integer_dtype(dtype))
    if kind is bool:
        return bool(pd.api.types.is_bool_dtype(dtype))
    categories = getattr(dtype, "categories", None)
    if categories is not None:
        return bool(pd.api.types.is_string_dtype(categories))   # an object Index: checked value by value
    return isinstance(dtype, pd.StringDtype)


#: the columns whose cells an :class:`Entry` takes converted (``int(seq)``, ``str(key_format)``, ...)
_ENTRY_TYPES: dict[str, type] = {
    "seq": int, "key_format": str, "is_root": bool, "completed": bool, "call_count": int, "calls_pending": int,
    "calls_succeeded": int, "calls_failed": int,
}


#: the log columns an :class:`Entry` is made of, in :func:`iter_entries`' order, with the value of a missing cell
_ENTRY_COLUMNS = (
    ("state_key", None), ("business_key", None), ("seq", None), ("event_uuid", ""), ("action_uuid", ""),
    ("key_format", ""), ("key_text", None), ("is_root", False), ("completed", False), ("task_event_id", None),
    ("task_event_type", None), ("output_event_ids", ()), ("call_count", 0), ("calls_pending", 0),
    ("calls_succeeded", 0), ("calls_failed", 0), ("tombstone", False), ("error", None),
)


def rebuild_records(session: RecoverySession,
                    entries: Iterable[tuple[int, Entry | Undecodable | None, str | None]], *,
                    refresh: Collection[int] = ()) -> RecoverySession:
    """Feed ``(pos, entry, state_key)`` rows (log order) into ``session``: tombstones delete, the rule's rebuild
    hook runs per record, last write wins, undecodable records are reported. Positions in ``refresh`` are
    refresh rows (0.4+, addendum §2), never a rule step. Partition-local: call it per partition.

    For example::

        session = ai.store.RecoverySession(ai.rules.resolve_rule("original"))
        ai.recovery.rebuild_records(session, ai.recovery.iter_entries(log))   # the whole log as the window
        len(session.store)
    """
    for pos, entry, sk in entries:
        if isinstance(entry, Undecodable):
            session.undecodable(sk, entry.error, pos=pos, business_key=entry.business_key, seq=entry.seq,
                                no_record=entry.no_record)
            continue
        if entry is None:
            if sk is not None:
                session.delete(sk, pos=pos)
            continue
        if pos in refresh:
            session.refresh_entry(entry)
            continue
        session.rebuild_entry(entry)
    return session


def restore_failures(records: pd.DataFrame, mask: np.ndarray | None = None, *,
                     expected_fingerprint: str | None = None) -> list[tuple[int, str, str | None]]:
    """``(pos, upstream message, business key)`` of each record of a K2 window (one with a ``v2:`` key) that fails
    the restore (spec §6.5, §14.2): another key format, a malformed v2 key or key group, a serializer fingerprint
    other than ``expected_fingerprint`` (default: the window's most common)."""
    if "state_key" not in records:
        return []
    keys = records["state_key"]
    if isinstance(keys.dtype, pd.StringDtype):   # most windows hold no v2 key: found without a copy to objects
        any_v2 = keys.str.startswith("v2:", na=False).to_numpy(dtype=bool)
        if not (any_v2 if mask is None else any_v2[mask]).any():
            return []
    # only the three columns read here are masked: masking the whole window copies every column
    sub = records[[c for c in ("state_key", "error", "business_key") if c in records]]
    sub = sub if mask is None else sub[mask]
    if sub.empty:
        return []
    sks = sub["state_key"].astype(object)
    known = sks.notna().to_numpy()
    v2 = sks.str.startswith("v2:", na=False).to_numpy(dtype=bool)
    if not v2.any():
        return []
    errors = sub["error"].astype(object).to_numpy() if "error" in sub else np.full(len(sub), None)
    key_error = np.array([isinstance(e, str) and e.startswith("key") for e in errors], dtype=bool)
    fps = np.full(len(sub), None, dtype=object)
    parsed = v2 & ~key_error
    fps[parsed] = [k.split("_")[4] if k.count("_") >= 5 else None for k in sks[parsed]]
    expected = expected_fingerprint
    if expected is None:
        counts = pd.Series(fps[parsed]).value_counts(sort=True)
        expected = str(counts.index[0]) if len(counts) else None
    bad = (known & ~v2) | (v2 & key_error) | (parsed & (fps != expected))
    if not bad.any():
        return []
    bks = sub["business_key"].astype(object).to_numpy() if "business_key" in sub else np.full(len(sub), None)
    out = []
    for i in np.flatnonzero(bad):
        sk = sks.iloc[i]
        if not v2[i]:
            msg = f"Unsupported action-state key format during recovery: {sk!r} is not a v2 key"
        elif key_error[i] and "outside" in errors[i]:
            msg = f"Action-state key-group of {sk!r} is outside the configured range ({errors[i]})"
        elif key_error[i]:
            msg = f"Malformed v2 action-state key {sk!r}"
        else:
            msg = (f"Action-state key serializer fingerprint does not match: {sk!r} has {fps[i]}, "
                   f"expected {expected}")
        bk = bks[i]
        out.append((int(sub.index[i]), msg, None if bk is None or pd.isna(bk) else str(bk)))
    return out


def whole_log_markers(log: ActionStateLog | pd.DataFrame) -> list[dict[int, int]]:
    """What ``markers=None`` means everywhere, the whole loaded log: per partition, the lower of where the source
    started reading and the first loaded offset.

    For example::

        ai.recovery.whole_log_markers(log)           # what markers=None means: [{partition: first offset, ...}]
    """
    starts = dict(getattr(getattr(log, "source", None), "start_offsets", None) or {})
    records = _frame(log)
    if len(records):
        for p, off in records.groupby("partition", observed=True)["offset"].min().items():
            starts[int(p)] = min(starts.get(int(p), int(off)), int(off))
    return [starts] if starts else []


def rebuild(log: ActionStateLog | pd.DataFrame, rule: DivergenceRule | str = "fixed", markers: Markers = None, *,
            session: RecoverySession | None = None, expected_fingerprint: str | None = None,
            max_parallelism: int | None = None, attempts: Sequence[int | None] | None = None,
            refresh: Collection[int] = ()) -> RecoverySession:
    """Rebuild the cache the way a restore does and return the driven :class:`RecoverySession`.

    ``markers`` (one ``{partition: offset}`` map per subtask) bound the window (:func:`window_mask`); None is the
    whole loaded log, ``[]`` a fresh start (spec §6.5 step 1). Records apply in log order (:func:`rebuild_records`);
    undecodable ones become "undecodable" divergences. In a K2 window a malformed key, a key group out of range
    (``max_parallelism``) or a serializer fingerprint other than ``expected_fingerprint`` fails the restore as
    upstream does: every lookup FAILs (rule attribute ``restore_checks=False`` turns this off). ``attempts`` (one
    per record) tags the entries; ``refresh``: :func:`~agent_inspect.recovery.refresh_positions`.

    For example::

        g01 = ai.load(ai.samples.path("G01"))                  # two inputs recorded for one round
        session = ai.recovery.rebuild(g01, "fixed", ai.samples.markers("G01"))   # the cache as the restore rebuilt it
        len(session.store), session.divergences[:3]
    """
    return rebuild_in_window(log, rule, markers, session=session, expected_fingerprint=expected_fingerprint,
                             max_parallelism=max_parallelism, attempts=attempts, refresh=refresh)[0]


def rebuild_in_window(log: ActionStateLog | pd.DataFrame, rule: DivergenceRule | str = "fixed",
                      markers: Markers = None, *, session: RecoverySession | None = None,
                      expected_fingerprint: str | None = None, max_parallelism: int | None = None,
                      attempts: Sequence[Any] | None = None,
                      refresh: Collection[int] = ()) -> tuple[RecoverySession, np.ndarray]:
    """:func:`rebuild`, also returning the window it read (one bool per row), for callers that need both."""
    if markers is None:
        markers = whole_log_markers(log)
    if session is None:
        session = RecoverySession(resolve_rule(rule), source_kind=source_kind_of(log))
    records = _frame(log)
    source = getattr(log, "source", None)
    mask = window_mask(records, markers, start_offsets=getattr(source, "start_offsets", None), source=source)
    if not mask.any():
        return session, mask
    if getattr(session.rule, "restore_checks", True):
        failures = restore_failures(records, mask, expected_fingerprint=expected_fingerprint)
        if max_parallelism is not None:
            found = {failure[0]: failure for failure in failures}
            for failure in _key_group_failures(records, mask, max_parallelism):
                found.setdefault(failure[0], failure)
            failures = [found[p] for p in sorted(found)]
        session.fail_restore(failures)
    rows = (iter_entries(records, mask, attempts=attempts, undecodable=True) if attempts is not None
            else window_entries(log, mask))
    rebuild_records(session, rows, refresh=refresh)
    return session, mask


def window_entries(log: ActionStateLog | pd.DataFrame, mask: np.ndarray) -> list[tuple[int, Entry | Undecodable | None,
                                                                                     str | None]]:
    """``iter_entries(log, mask, undecodable=True)`` as a list, from entries made once per log: every rebuild of
    a log (one per rule, per verb) reads the same records, and an entry is immutable."""
    rows = once_per_log(_ENTRIES, log, lambda: list(iter_entries(log, undecodable=True)))   # one row per record
    if mask.all():   # the whole log (markers None): no row to pick
        return list(rows)
    return [rows[i] for i in np.flatnonzero(mask).tolist()]


_ENTRIES: weakref.WeakKeyDictionary[Any, list[tuple[int, Entry | Undecodable | None, str | None]]] = \
    weakref.WeakKeyDictionary()


def _key_group_failures(records: pd.DataFrame, mask: Any, max_parallelism: int) -> list[tuple[int, str, str | None]]:
    sub = records[mask]
    if sub.empty or "key_group" not in sub or "state_key" not in sub:
        return []
    v2 = sub["state_key"].astype(object).str.startswith("v2:", na=False)
    if not v2.any():
        return []
    groups = sub["key_group"].astype("Int64")
    bad = sub[v2 & groups.notna() & ((groups >= max_parallelism) | (groups < 0))]
    out = []
    for pos, sk, g, bk in zip(bad.index, bad["state_key"], bad["key_group"], bad["business_key"], strict=True):
        msg = (f"Action-state key-group of {sk!r} is outside the configured range "
               f"(key group {int(g)} is outside [0, {max_parallelism}))")
        out.append((int(pos), msg, None if pd.isna(bk) else str(bk)))
    return out
