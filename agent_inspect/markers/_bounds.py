"""Bounds on a checkpoint's instant from a log and a trace, for :mod:`agent_inspect.markers._infer`.

The job's writes are ordered by timestamp across partitions (:class:`Timeline`); restarts are the pauses the
per-key attempt starts point at (:func:`restarts`); what a restore ran again, resumed or re-submitted, and what a
Trace Log shows replayed or restored, bound the checkpoint's instant from above and below (:class:`Bounds`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np
import pandas as pd

from agent_inspect._glossary import plural

if TYPE_CHECKING:
    from agent_inspect.log import ActionStateLog

__all__ = ["Restart", "Bounds", "Timeline", "TraceFrame", "TraceFacts", "restarts", "restore_bounds", "refresh_checkpoints",
           "trace_bounds", "trace_notes", "spans", "settle"]


class TraceFrame(Protocol):
    """What the inference reads of a trace (:class:`agent_inspect.trace.TraceLog`): its readable records."""

    @property
    def good(self) -> pd.DataFrame: ...


@dataclass(frozen=True)
class Restart:
    """A restart seen in the log: the first write after the pause it left, and the attempts that show it."""

    number: int
    at: int                       # ms: first write of the restarted job
    pause_ms: int
    shown_by: tuple[int, ...]     # positions of per-key attempt starts voting for it


@dataclass
class Bounds:
    """Bounds on the checkpoint instant T (ms): ``T <= upper`` and ``T > lower``, with why."""

    upper: list[tuple[int, str]] = field(default_factory=list)
    lower: list[tuple[int, str]] = field(default_factory=list)

    def instant(self) -> int | None:
        return min(t for t, _ in self.upper) if self.upper else None

    def conflicts(self) -> list[str]:
        t = self.instant()
        return [why for lo, why in self.lower if t is not None and lo >= t]


class Timeline:
    """The log's records in write order (timestamps), with per-partition offsets to turn an instant into markers."""

    def __init__(self, records: pd.DataFrame, partitions: Iterable[int], ends: Mapping[int, int]) -> None:
        ms, valid = _to_ms(records["timestamp"], records["partition"]) if "timestamp" in records else \
            (np.zeros(len(records), "int64"), False)
        self.ok = valid and len(np.unique(ms)) > 1
        self.ms = ms
        self.part = records["partition"].to_numpy(dtype="int64")
        self.off = records["offset"].to_numpy(dtype="int64")
        self.partitions = sorted(set(int(p) for p in partitions))
        self.ends = {int(p): int(o) for p, o in ends.items()}
        self._by_part: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for p in self.partitions:
            m = self.part == p
            order = np.argsort(self.ms[m], kind="stable")
            self._by_part[p] = (self.ms[m][order], self.off[m][order])

    def markers_at(self, instant: int) -> dict[int, int]:
        """Per partition: the first offset written at or after ``instant`` (the end offset when none was)."""
        out = {}
        for p in self.partitions:
            ms, off = self._by_part[p]
            i = int(np.searchsorted(ms, instant, side="left"))
            out[p] = int(off[i:].min()) if i < len(off) else self.ends.get(p, int(off.max()) + 1 if len(off) else 0)
        return out

    def where(self, pos: int) -> str:
        return f"partition {int(self.part[pos])} offset {int(self.off[pos])}"


def _to_ms(ts: pd.Series, partition: pd.Series) -> tuple[np.ndarray, bool]:
    """Milliseconds since the epoch, and whether they can order the writes: a record without a timestamp takes its
    partition predecessor's (or successor's); more than one in ten without one cannot."""
    try:
        stamps = pd.to_datetime(ts, utc=True)
    except (TypeError, ValueError):
        return np.zeros(len(ts), dtype="int64"), False
    missing = int(stamps.isna().sum())
    if missing * 10 > len(stamps) or missing == len(stamps):
        return np.zeros(len(ts), dtype="int64"), False
    if missing:
        by_part = stamps.groupby(partition.to_numpy(), sort=False)
        stamps = by_part.ffill().fillna(by_part.bfill())
    return stamps.dt.tz_convert(None).to_numpy().astype("datetime64[ms]").astype("int64"), True


# -- restarts -------------------------------------------------------------------------------------------------

def restarts(records: pd.DataFrame, line: Timeline, refresh: Iterable[int] = ()) -> list[Restart]:
    """The restarts the log shows, oldest first.

    Each per-key attempt start (:func:`agent_inspect.history.annotate`; refresh rows left out, they rewrite
    states by design) says a restore happened between that key's previous write and this one; the restart is
    the longest pause in the job's writes (all partitions, by timestamp) in that interval. Starts that point at
    the same pause are one restart. Other pauses at least half as long as the shortest such restart are
    restarts too (a restore whose re-runs all reused write nothing per key).
    """
    from agent_inspect.history import annotate

    if not line.ok or not len(records):
        return []
    keep = np.ones(len(records), dtype=bool)
    refresh = list(refresh)
    if refresh:
        keep[records.index.get_indexer(refresh)] = False
    ann = annotate(records[keep])
    starts = np.flatnonzero(keep)[np.flatnonzero(ann["attempt_start"].notna().to_numpy())]
    if not len(starts):
        return []
    order = np.argsort(line.ms, kind="stable")
    sorted_ms = line.ms[order]
    gaps = np.diff(sorted_ms)
    keys = records["business_key"].astype(object).to_numpy()
    prev_of: dict[int, int] = {}
    last: dict[Any, int] = {}
    for i in np.flatnonzero(keep).tolist():   # log order is offset order in a partition; a key has one partition
        k = keys[i]
        if not isinstance(k, str):
            continue
        if k in last:
            prev_of[i] = last[k]
        last[k] = i
    votes: dict[int, list[int]] = {}
    pause: dict[int, int] = {}
    for i in starts.tolist():
        j = prev_of.get(i)
        lo = int(line.ms[j]) if j is not None else int(sorted_ms[0])
        hi = int(line.ms[i])
        a = int(np.searchsorted(sorted_ms, lo, side="left"))
        b = int(np.searchsorted(sorted_ms, hi, side="right")) - 1
        if b <= a:
            continue
        k = a + int(np.argmax(gaps[a:b]))
        at = int(sorted_ms[k + 1])
        votes.setdefault(at, []).append(int(i))
        pause[at] = int(gaps[k])
    if votes:
        # a pause as long as a restart, and far longer than the job's usual pause between writes
        least = max(min(pause.values()) // 2, 10 * int(np.median(gaps)) if len(gaps) else 0, 1)
        for k in np.flatnonzero(gaps >= least).tolist():
            at = int(sorted_ms[k + 1])
            if at not in votes:
                votes[at] = []
                pause[at] = int(gaps[k])
    return [Restart(n + 1, at, pause[at], tuple(votes[at])) for n, at in enumerate(sorted(votes))]


# -- bounds from what a restore did -----------------------------------------------------------------------------

class _Round(NamedTuple):
    first: int                  # position of its first record
    root_ids: frozenset[str]    # event ids of its root records' trigger (the input)


def _rounds(records: pd.DataFrame, mask: np.ndarray) -> dict[tuple[str, int], _Round]:
    """Per (business key, seq) among the rows in ``mask``: first position and the input's event ids."""
    bk = records["business_key"].astype(object).to_numpy()
    seq = records["seq"].to_numpy(dtype="float64", na_value=np.nan)
    root = records["is_root"].fillna(False).to_numpy(dtype=bool)
    ids = records["task_event_id"].astype(object).to_numpy()
    first: dict[tuple[str, int], int] = {}
    roots: dict[tuple[str, int], set[str]] = {}
    for i in np.flatnonzero(mask).tolist():
        if not isinstance(bk[i], str) or seq[i] != seq[i]:
            continue
        key = (bk[i], int(seq[i]))
        first.setdefault(key, i)
        if root[i] and isinstance(ids[i], str):
            roots.setdefault(key, set()).add(ids[i])
    return {key: _Round(pos, frozenset(roots.get(key, ()))) for key, pos in first.items()}


def restore_bounds(records: pd.DataFrame, line: Timeline, before: np.ndarray, after: np.ndarray,
                   span: np.ndarray) -> Bounds:
    """Bounds on the checkpoint a restore restored, from what it wrote (``after``) against the log before it.

    ``span``: the rows of the attempt the checkpoint was presumably taken in (between the previous restart and
    this one). A round the restore started from an input with a new event id had not begun at the checkpoint,
    nor had any later round of its key (T <= the first record in ``span`` of the first such round); a round whose
    input it re-submitted with the old event id was in flight (T > its first record); a state it resumed (first
    write not an initial record) was in the window (T <= its last write before the restore).
    """
    bounds = Bounds()
    old = _rounds(records, span)
    old_by_key: dict[str, list[tuple[int, int]]] = {}
    for (bk, seq), r in old.items():
        old_by_key.setdefault(bk, []).append((seq, r.first))
    for (bk, seq), row in _rounds(records, after).items():
        if not row.root_ids or bk not in old_by_key:
            continue
        mine = old.get((bk, seq))
        if mine is not None and row.root_ids & mine.root_ids:
            bounds.lower.append((int(line.ms[mine.first]), f"round ({bk}, {seq}) was in flight: the restore "
                                                            "re-submitted its input with the old event id (its first "
                                                            f"record before the restore: {line.where(mine.first)})"))
            continue
        later = [(f, s2) for s2, f in old_by_key[bk] if s2 >= seq]
        if later:
            first, s2 = min(later)
            bounds.upper.append((int(line.ms[first]), f"the restore started round ({bk}, {seq}) from an input with a "
                                                      f"new event id (at {line.where(row.first)}), so the key had not "
                                                      f"reached round {seq} at the checkpoint: round ({bk}, {s2}) "
                                                      f"began after it (at {line.where(first)})"))
    # states the restore resumed were in its rebuild window
    sk = records["state_key"].astype(object).to_numpy()
    done = records["completed"].fillna(False).to_numpy(dtype=bool)
    calls = records["call_count"].fillna(0).to_numpy()
    last_before: dict[Any, int] = {}
    for i in np.flatnonzero(before).tolist():
        if isinstance(sk[i], str):
            last_before[sk[i]] = i
    seen: set[Any] = set()
    for i in np.flatnonzero(after).tolist():
        k = sk[i]
        if not isinstance(k, str) or k in seen:
            continue
        seen.add(k)
        j = last_before.get(k)
        if j is not None and (done[i] or calls[i] > 0) and not done[j]:
            bounds.upper.append((int(line.ms[j]), f"the restore resumed the state written at {line.where(j)} "
                                                  f"(continued at {line.where(i)}), so it was in the window"))
    return bounds


# -- refresh rows ---------------------------------------------------------------------------------------------

def refresh_checkpoints(log: ActionStateLog, line: Timeline) -> tuple[list[tuple[int, int, int]], frozenset[int]]:
    """Checkpoints shown by 0.4+/main refresh rows: (instant ms, first position, rows) per run of refresh rows
    in write order (a checkpoint re-appends every retained state at once, addendum §2.2)."""
    from agent_inspect.recovery import refresh_positions

    try:
        runtime = log.runtime()
    except Exception:  # noqa: BLE001 - a log whose runtime cannot be read simply shows no refresh rows
        return [], frozenset()
    refresh = refresh_positions(log, runtime)
    if not refresh or not line.ok:
        return [], refresh
    index = log.records.index
    is_ref = np.zeros(len(index), dtype=bool)
    is_ref[index.get_indexer(sorted(refresh))] = True
    order = np.argsort(line.ms, kind="stable")
    runs: list[tuple[int, int, int]] = []
    start = None
    count = 0
    for i in order.tolist() + [-1]:
        if i >= 0 and is_ref[i]:
            if start is None:
                start, count = i, 0
            count += 1
        elif start is not None:
            runs.append((int(line.ms[start]), start, count))
            start = None
    return runs, refresh


# -- the trace ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TraceFacts:
    """What a trace says about its restore, read once: ``inputs`` (business key, input fingerprint) in order;
    ``reused`` and ``restored``: trigger event id -> business key of the tasks it shows reused, or restored
    from the checkpoint (their trigger event was never emitted); ``readable``: its records without an error;
    ``truncated``: its inputs whose attributes were cut (not matched)."""

    inputs: list[tuple[str, str]]
    reused: dict[str, str]
    restored: dict[str, str]
    readable: int = 0
    truncated: int = 0

    @classmethod
    def of(cls, trace: TraceFrame) -> TraceFacts:
        good = getattr(trace, "good", None)   # a fresh filter of the records at every access: read once
        if good is None or not len(good):
            return cls([], {}, {})
        is_input = ((good["entity_type"] == "event") & (good["entity_name"].astype(object) == "_input_event")).to_numpy()
        inputs = good.loc[is_input, ["business_key", "attributes", "truncated"]]
        cut = int(inputs["truncated"].fillna(False).astype(bool).sum())
        return cls(_trace_inputs(inputs), _trace_reused(good), _trace_restored(good), len(good), cut)


def trace_bounds(log: ActionStateLog, trace: TraceFacts, line: Timeline, before: np.ndarray, span: np.ndarray) -> Bounds:
    """Bounds from a Trace Log of the restore: every ``_input_event`` it shows was replayed from the source
    (its round started after the checkpoint); every task whose trigger event the trace never emitted was
    restored from the checkpoint (its round was in flight). Rounds are matched by key and input fingerprint
    (the event UUID of the input's attributes, spec §4.3.1) among the rows in ``span``."""
    records = log.records
    bounds = Bounds()
    first = _round_first(records, span)
    roots = span & records["is_root"].fillna(False).to_numpy(dtype=bool) & records["seq"].notna().to_numpy()
    bk_col = records["business_key"].astype(object).to_numpy()
    fp_col = records["event_uuid"].astype(object).to_numpy()
    seq_col = records["seq"].to_numpy(dtype="float64", na_value=np.nan)
    logged: dict[str, dict[int, set[str]]] = {}       # key -> seq -> input fingerprints in this attempt
    for i in np.flatnonzero(roots).tolist():
        logged.setdefault(str(bk_col[i]), {}).setdefault(int(seq_col[i]), set()).add(str(fp_col[i]))
    traced: dict[str, list[str]] = {}
    for bk, fp in trace.inputs:
        traced.setdefault(bk, []).append(fp)
    for bk, fps in traced.items():
        seq = _first_replayed(logged.get(bk, {}), fps)
        if seq is None or (bk, seq) not in first:
            continue
        at = first[(bk, seq)]
        bounds.upper.append((int(line.ms[at]), f"the trace shows the input of round ({bk}, {seq}) replayed, so the "
                                               f"round started after the checkpoint (its first record: "
                                               f"{line.where(at)})"))
    # a task the trace shows reused found its completed state in the window (spec §9.3 step 2)
    reused = trace.reused
    if reused:
        ids = records["task_event_id"].astype(object).to_numpy()
        done = records["completed"].fillna(False).to_numpy(dtype=bool)
        latest: dict[str, int] = {}
        for i in np.flatnonzero(before & done).tolist():
            if reused.get(str(ids[i])) == str(bk_col[i]):
                latest[str(ids[i])] = i
        for i in latest.values():
            bounds.upper.append((int(line.ms[i]), f"the trace shows the task of event {str(ids[i])[:8]}… reused, so its "
                                                  f"completed state ({line.where(i)}) was in the window"))
    restored = trace.restored
    if restored:
        ids = records["task_event_id"].astype(object).to_numpy()
        for i in np.flatnonzero(span & records["seq"].notna().to_numpy()).tolist():
            if restored.get(str(ids[i])) == str(bk_col[i]):
                key = (str(bk_col[i]), int(seq_col[i]))
                at = first.get(key, i)
                bounds.lower.append((int(line.ms[at]), f"the trace shows a task of round ({key[0]}, {key[1]}) restored "
                                                       "from the checkpoint (its trigger event was never emitted), so "
                                                       f"the round was in flight (its first record: {line.where(at)})"))
    return bounds


def _first_replayed(logged: Mapping[int, set[str]], fps: Sequence[str]) -> int | None:
    """The seq of the key's first replayed input: replayed inputs take the seqs after the restored one in order
    (spec §9.2), so the traced inputs line up with the logged rounds from that seq on. An input's fingerprint
    repeats when the same input comes again, so the alignment matching the most traced inputs in a row wins
    (the latest on a tie)."""
    best: tuple[int, int] | None = None
    for start in sorted(logged):
        n = 0
        while n < len(fps) and fps[n] in logged.get(start + n, ()):
            n += 1
        if n and (best is None or n >= best[0]):
            best = (n, start)
    return best[1] if best is not None else None


def _trace_inputs(inputs: pd.DataFrame) -> list[tuple[str, str]]:
    """(business key, fingerprint) of each untruncated ``_input_event`` the trace shows, in order."""
    from agent_inspect.codec import event_uuid

    out = []
    for bk, attrs, cut in zip(inputs["business_key"].astype(object), inputs["attributes"], inputs["truncated"]):
        if cut or not isinstance(attrs, dict):
            continue
        try:
            out.append((str(bk), event_uuid(attrs)))
        except Exception:  # noqa: BLE001 - an input whose fingerprint cannot be computed is not matched
            continue
    return out


def _trace_reused(good: pd.DataFrame) -> dict[str, str]:
    """Trigger event id -> business key of the action executions the trace shows reused (a ``reused`` record,
    addendum §3), read straight from the action records: building every execution (``TraceLog.executions``)
    costs far more than the inference."""
    acts = np.flatnonzero((good["entity_type"] == "action").to_numpy(dtype=bool))
    status = good["status"].to_numpy(dtype=object)[acts]
    execution = good["execution_id"].to_numpy(dtype=object)[acts]
    reused = set(execution[status == "reused"].tolist())
    if not reused:
        return {}
    trigger = good["trigger_event_id"].to_numpy(dtype=object)[acts]
    bk = good["business_key"].to_numpy(dtype=object)[acts]
    out: dict[str, str] = {}
    seen: set[Any] = set()
    for e, t, k in zip(execution.tolist(), trigger.tolist(), bk.tolist()):
        if e in reused and e not in seen and isinstance(t, str):   # an execution's first trigger, as executions()
            seen.add(e)
            out[t] = str(k)
    return out


def _trace_restored(good: pd.DataFrame) -> dict[str, str]:
    """Trigger event id -> business key of the traced tasks whose trigger the trace never emitted (restored)."""
    kind = good["entity_type"].to_numpy(dtype=object)
    emitted = set(map(str, good["event_id"].to_numpy(dtype=object)[(kind == "event")].tolist()))
    trigger = good["trigger_event_id"].to_numpy(dtype=object)
    bk = good["business_key"].to_numpy(dtype=object)
    acts = np.flatnonzero(kind == "action").tolist()
    return {str(trigger[i]): str(bk[i]) for i in acts if isinstance(trigger[i], str) and trigger[i] not in emitted}


def trace_notes(log: ActionStateLog, facts: TraceFacts) -> list[str]:
    """What of the trace could not be matched to the log, one sentence each."""
    if not facts.readable:
        return ["the trace holds no readable record"]
    notes = []
    cut = facts.truncated
    if cut:
        notes.append(f"{plural(cut, 'traced input')} {'is' if cut == 1 else 'are'} truncated (trace-log detail STANDARD): not matched to the log")
    records = log.records
    have = set(zip(map(str, records["business_key"].to_numpy(dtype=object).tolist()),
                   map(str, records["event_uuid"].to_numpy(dtype=object).tolist())))
    mine = facts.inputs
    unmatched = sum(1 for x in mine if x not in have)
    if mine and unmatched == len(mine):
        notes.append("no traced input matches a round of the log: the trace may be of another job")
    elif unmatched:
        notes.append(f"{plural(unmatched, 'traced input')} {'matches' if unmatched == 1 else 'match'} no round of the log (inputs this restore read first)")
    return notes


def _round_first(records: pd.DataFrame, mask: np.ndarray) -> dict[tuple[str, int], int]:
    """Position of the first record of each (business key, seq) among the rows in ``mask``."""
    out: dict[tuple[str, int], int] = {}
    bk = records["business_key"].astype(object).to_numpy()
    seq = records["seq"].to_numpy(dtype="float64", na_value=np.nan)
    ms_order = np.flatnonzero(mask)
    for i in ms_order.tolist():
        if isinstance(bk[i], str) and seq[i] == seq[i]:
            out.setdefault((bk[i], int(seq[i])), i)
    return out


def spans(line: Timeline, cuts: Sequence[int], upto: int | None) -> Iterator[np.ndarray]:
    """The rows of each attempt before instant ``upto`` (None: the whole log), latest first; ``cuts`` are restarts."""
    edges = [c for c in cuts if upto is None or c < upto]
    bounds = [None, *edges, upto]
    for lo, hi in reversed(list(zip(bounds[:-1], bounds[1:]))):
        m = np.ones(len(line.ms), dtype=bool)
        if lo is not None:
            m &= line.ms >= lo
        if hi is not None:
            m &= line.ms < hi
        yield m


def settle(bounds_of: Callable[[np.ndarray], Bounds], spans: Iterable[np.ndarray], line: Timeline) -> tuple[Bounds, int | None, int]:
    """The bounds from the latest attempt that places the checkpoint inside it: a restore that ran an attempt again
    from its very first record restored the same checkpoint as that attempt did (or an older one), so the older
    attempt is read instead. Returns the bounds, their instant and how many attempts were skipped so."""
    found: tuple[Bounds, int | None, int] | None = None
    for n, span in enumerate(spans):
        if not span.any():
            continue
        b = bounds_of(span)
        t = b.instant()
        if found is None or (found[1] is None and t is not None):
            found = (b, t, n)
        if t is not None and t > int(line.ms[span].min()):
            return b, t, n
    return found if found is not None else (Bounds(), None, 0)
