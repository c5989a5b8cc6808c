"""Recovery markers inferred from a log (and a trace) when no checkpoint is at hand (spec §6.4, §8.4; addendum §2).

A marker is the end offset of every partition at one checkpoint, and a restore rebuilds from it (the minimum
over subtasks). A checkpoint is one instant of the job, so a marker is "the first offset written at or after
instant T" in every partition: each inference below bounds T by what the log (or the trace) shows, and
turns the latest consistent instant into a ``{partition: offset}`` map.

The log shows a checkpoint directly only through the refresh rows 0.4+/main write at it (addendum §2.2);
otherwise through the restore that followed: a restore re-runs from the source every input consumed after
the checkpoint (with fresh event ids, spec §9.5) and re-submits the tasks in flight at it (with their
original ids). A round it ran again from a new input started after the checkpoint; a state it resumed was
in the rebuild window; a task it re-submitted was in flight. Rounds it reused write nothing (spec §9.3), so
from the log alone the checkpoint may lie earlier than inferred; a Trace Log shows those rounds too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from agent_inspect._errors import InspectError
from agent_inspect._glossary import plural
from agent_inspect.markers._bounds import (
    Bounds,
    Restart,
    Timeline,
    TraceFacts,
    TraceFrame,
    refresh_checkpoints,
    restarts,
    restore_bounds,
    settle,
    spans,
    trace_bounds,
    trace_notes,
)

if TYPE_CHECKING:
    from agent_inspect.log import ActionStateLog

__all__ = ["MarkerCandidate", "MARKER_SOURCES", "CONFIDENCE_MEANS", "infer_markers"]

MARKER_SOURCES = (
    "checkpoint",                        # read from the job's Flink checkpoint (agent-inspect markers --checkpoint)
    "trace",                             # the inputs a Trace Log shows replayed and the tasks it shows restored
    "refresh rows at a checkpoint",      # 0.4+/main re-append retained states at every checkpoint
    "first record a restore re-wrote",   # the rounds a restore in the log ran again, resumed or re-submitted
    "attempt boundary",                  # where the restore's own writes begin (nothing re-read)
    "whole log",                         # the checkpoint before the first loaded record
    "fresh start",                       # no checkpoint: nothing rebuilt
)
"""Where a candidate comes from, strongest evidence first."""

CONFIDENCE_MEANS = ("how likely this is the restore's window given the evidence: 1.0 read from the checkpoint, "
                    "0.9 the trace pins it, "
                    "0.7 a checkpoint the log shows, 0.5 bounded by what a restore did, 0.3 or less a guess")
"""What ``MarkerCandidate.confidence`` means."""


@dataclass(frozen=True)
class MarkerCandidate:
    """One guess at a restore's recovery markers, with where it came from.

    ``markers``: the list of ``{partition: offset}`` maps every verb accepts (``markers=``). ``source``: one of
    :data:`MARKER_SOURCES`. ``evidence``: what in the log or trace points here, in plain words with positions
    (partition and offset). ``confidence``: a number in [0, 1] (see :data:`CONFIDENCE_MEANS`). ``restore``:
    which restore of the log it describes (1 = the first restart seen, the job's attempt 2), or None for the next
    restore (of the log's latest checkpoint) or a window that is no restore of the log. ``notes``: what could not
    be read or does not fit, one sentence each.

    For example::

        best = ai.markers.infer_markers(log)[0]        # candidates, most likely first
        best.markers, best.source, best.confidence, best.evidence
        ai.predict(log, markers=best)                  # a candidate is a marker source
    """

    markers: list[dict[int, int]]
    source: str
    evidence: str
    confidence: float
    restore: int | None = None
    notes: tuple[str, ...] = field(default=())

    def recovery_markers(self) -> list[dict[int, int]]:
        """The ``{partition: offset}`` maps (a marker source, like a read checkpoint)."""
        return [dict(m) for m in self.markers]

    @property
    def provenance(self) -> str:
        """Where these markers come from, in a few words."""
        return f"inferred from the {self.source} (confidence {self.confidence:.2f})"

    def to_dict(self) -> dict[str, object]:
        """Plain JSON-ready data (partition keys as strings, as in a markers file)."""
        return {"source": self.source, "markers": [{str(p): int(o) for p, o in m.items()} for m in self.markers],
                "confidence": round(float(self.confidence), 3), "restore": self.restore,
                "evidence": self.evidence, "notes": list(self.notes)}


def infer_markers(log: ActionStateLog, trace: TraceFrame | None = None) -> list[MarkerCandidate]:
    """Candidate recovery markers for a restore of ``log``, best first, each with its evidence and confidence.

    From the log: the checkpoints its refresh rows show (0.4+/main), the bounds the last restore in it puts on
    its checkpoint (rounds it ran again, states it resumed, tasks it re-submitted), where that restore's own
    writes begin, and the whole log / a fresh start as fallbacks. With ``trace`` (a :class:`~agent_inspect.trace.
    TraceLog` of the restore), the inputs it shows replayed and the tasks it shows restored bound the checkpoint
    too, reused rounds included. Timestamps order the job's writes across partitions; without them only the
    fallbacks are given. Pure: nothing is read but ``log`` and ``trace``.

    A candidate is the *latest* instant the evidence allows, so it can lie after the true checkpoint and still be
    right: markers are the store's end offsets captured at the checkpoint (spec §6.4), but a record written
    after that instant by a round the restore then reused, or by a task the checkpoint held in flight, is never
    written again (a reuse writes nothing, spec §9.3), so nothing tells the two instants apart. On the production
    sample the checkpoint fell mid-round (``{0: 248, 1: 245, 2: 215, 3: 444}``): from the log alone the first
    candidate lands after round (user-0034, 3), which the restore reused, and after user-0009's in-flight
    round 4 (``{2: 229, 3: 451}``: an upper bound, as its evidence says); with the trace, which shows that round
    replayed, it lands after the in-flight task's own incomplete writes (``{2: 215, 3: 447}``), and the restore
    predicted from it is the true one task for task. A task restored from the checkpoint is no tighter bound: it
    may have suspended mid-body and been queued again (spec §9.3), its earlier writes before the checkpoint.

    For example::

        candidates = ai.infer_markers(log, trace=ai.load_trace("sample_logs/production.trace.log"))
        best = candidates[0]
        best.markers, best.source, best.confidence
        ai.predict(log, markers=best)                  # a candidate is a marker source
    """
    from agent_inspect.recovery import whole_log_markers

    if trace is not None and not hasattr(trace, "good"):     # a path read as no trace at all, silently
        raise InspectError(f"infer_markers takes a loaded Trace Log, not a {type(trace).__name__}: pass "
                           f"ai.load_trace({str(trace)[:80]!r})" if isinstance(trace, str | os.PathLike) else
                           f"infer_markers takes a Trace Log (ai.load_trace(PATH)), not a {type(trace).__name__}")
    records: pd.DataFrame = log.records if hasattr(log, "records") else log
    whole = whole_log_markers(log)
    candidates: list[MarkerCandidate] = []
    notes: list[str] = []
    if not len(records):
        return [MarkerCandidate([], "fresh start", "the log is empty: nothing to rebuild", 0.5)]
    ends = dict(getattr(getattr(log, "source", None), "end_offsets", None) or {})
    for p, off in records.groupby("partition", observed=True)["offset"].max().items():
        ends[int(p)] = max(int(ends.get(int(p), 0)), int(off) + 1)
    line = Timeline(records, list(ends), ends)
    if not line.ok:
        notes.append("the records carry no usable timestamps, so restarts and checkpoints cannot be placed across "
                     "partitions: only the whole log and a fresh start are offered")
    checkpoints, refresh = refresh_checkpoints(log, line) if hasattr(log, "raw") else ([], frozenset())
    found = restarts(records, line, refresh)
    cuts = [r.at for r in found]
    last = found[-1] if found else None
    if trace is not None and line.ok:
        traced, tnotes = _from_trace(log, trace, line, last, cuts, checkpoints)
        candidates += traced
        if not traced:
            notes += tnotes or ["the trace shows no replayed input or restored task of this log"]
    if checkpoints:
        ct, pos, rows = checkpoints[-1]
        candidates.append(MarkerCandidate(
            [line.markers_at(ct)], "refresh rows at a checkpoint",
            f"the latest checkpoint the log shows: {plural(rows, 'refresh row')} from {line.where(pos)} re-append the states "
            "it retained (addendum §2.2); the next restore restores it", 0.7, None))
    if last is not None:
        candidates += _from_restore(records, line, last, cuts, checkpoints)

    # fallbacks
    no_restore = line.ok and not found and not checkpoints
    candidates.append(MarkerCandidate(
        whole, "whole log",
        ("no restart and no checkpoint in the log: a restore of the checkpoint before its first record re-reads it "
         "all" if no_restore else f"every loaded record in the rebuild window: each partition from its first loaded "
                                  f"offset, {_offsets(whole)}, the window no markers give"), 0.5 if no_restore else 0.1,
        None, tuple(notes)))
    partial = _partial(log, records)
    if partial:
        candidates = [replace(c, notes=(*c.notes, partial)) for c in candidates]
    candidates.append(MarkerCandidate([], "fresh start", "no checkpoint restored: the cache starts empty (markers=[])",
                                      0.05))
    return _ranked(candidates)


def _offsets(maps: list[dict[int, int]]) -> str:
    """The window ``maps`` open, as every verb reads them (their minimum per partition): ``{0: 248, 1: 245}``."""
    from agent_inspect.recovery import rebuild_start

    start = rebuild_start(maps) or {}
    return "{" + ", ".join(f"{p}: {o}" for p, o in sorted(start.items())) + "}"


def _partial(log: ActionStateLog, records: pd.DataFrame) -> str | None:
    """A note when ``log`` holds only part of the job's writes: its pauses are then no restarts of the job."""
    source = getattr(log, "source", None)
    keys = (getattr(source, "options", None) or {}).get("business_keys")
    if keys:
        part = f"the records of business_keys={list(keys)!r}"
    else:
        start = dict(getattr(source, "start_offsets", None) or {})
        written = {int(p) for p, end in (getattr(source, "end_offsets", None) or {}).items() if end > start.get(p, 0)}
        have = {int(p) for p in records["partition"].dropna().unique()}
        if not written or written <= have:
            return None
        part = f"the records of {len(have & written)} of {plural(len(written), 'partition')} with records"
    return (f"the log holds only part of the job's writes ({part}): a pause between its writes need not be a restart "
            "of the job, so the restores and attempts named here are guesses; infer from every partition's records, "
            "or pass the restore's Trace Log")


def _from_trace(log: ActionStateLog, trace: TraceFrame, line: Timeline, last: Restart | None, cuts: list[int],
                checkpoints: list[tuple[int, int, int]]) -> tuple[list[MarkerCandidate], list[str]]:
    """The checkpoint the trace's restore restored: the log's last restore, or else the restore after the log."""
    facts = TraceFacts.of(trace)
    tnotes = trace_notes(log, facts)
    target = last
    upto = line.ms < last.at if last is not None else np.ones(len(line.ms), dtype=bool)
    b, t, skipped = settle(lambda span: trace_bounds(log, facts, line, upto, span),
                           spans(line, cuts, last.at if last is not None else None), line)
    if target is not None and t is None:
        target = None
        everything = np.ones(len(line.ms), dtype=bool)
        b, t, skipped = settle(lambda span: trace_bounds(log, facts, line, everything, span),
                               spans(line, cuts, None), line)
    which = f"restore {target.number} (attempt {target.number + 1})" if target is not None else \
        "the restore after the log's last record"
    number = target.number if target is not None else None
    floor = max((lo for lo, _ in b.lower), default=None)
    fit = [c for c in checkpoints if floor is not None and c[0] > floor
           and (target is None or c[0] < target.at)] if t is None else []
    if fit:
        # a restore that replays no input: the trace shows only tasks restored in flight, the refresh rows show
        # which checkpoints came after their round began
        ct, pos, rows = fit[-1]
        return [MarkerCandidate(
            [line.markers_at(ct)], "trace",
            f"{which}: the trace shows no input replayed; {max(b.lower)[1]}; the latest checkpoint after that: "
            f"{plural(rows, 'refresh row')} from {line.where(pos)}", 0.8, number, tuple(tnotes))], tnotes
    if t is None:
        return [], tnotes
    conflicts = b.conflicts()
    return [MarkerCandidate([line.markers_at(t)], "trace", f"{which}: " + _evidence(b, skipped),
                            0.9 if not conflicts else 0.5, number,
                            tuple(tnotes) + tuple(f"conflicting: {c}" for c in conflicts))], tnotes


def _from_restore(records: pd.DataFrame, line: Timeline, last: Restart, cuts: list[int],
                  checkpoints: list[tuple[int, int, int]]) -> list[MarkerCandidate]:
    """The checkpoint the log's last restore restored, as what it wrote bounds it; and where its writes begin."""
    out = []
    first = line.markers_at(last.at)
    before = line.ms < last.at
    b, t, skipped = settle(lambda span: restore_bounds(records, line, before, ~before, span),
                           spans(line, cuts, last.at), line)
    start = f"restore {last.number} (attempt {last.number + 1}: writes resume after a {last.pause_ms / 1000:.1f} s pause)"
    fit = [c for c in checkpoints if c[0] < last.at and (t is None or c[0] <= t)]
    if fit:
        ct, pos, rows = fit[-1]
        out.append(MarkerCandidate(
            [line.markers_at(ct)], "refresh rows at a checkpoint",
            f"{start}: the latest checkpoint before it that fits what it ran again: {plural(rows, 'refresh row')} from "
            f"{line.where(pos)}", 0.7 if t is not None else 0.6, last.number))
    if t is not None:
        conflicts = b.conflicts()
        out.append(MarkerCandidate(
            [line.markers_at(t)], "first record a restore re-wrote",
            f"{start}: {_evidence(b, skipped)}; rounds it reused wrote nothing, so the checkpoint may lie earlier",
            0.5 if not conflicts else 0.3, last.number, tuple(f"conflicting: {c}" for c in conflicts)))
    out.append(MarkerCandidate(
        [first], "attempt boundary",
        f"{start}: its first writes ({_places(first)}); right when the restored checkpoint came just before "
        "the failure and the failed attempt wrote nothing after it", 0.3, last.number))
    return out


def _evidence(bounds: Bounds, skipped: int) -> str:
    binding = min(bounds.upper, key=lambda u: u[0])[1] if bounds.upper else ""
    more = len(bounds.upper) - 1
    lower = max(bounds.lower, key=lambda u: u[0])[1] if bounds.lower else ""
    parts = [f"the latest checkpoint consistent with it: {binding}"]
    if skipped:
        ran = ("the attempt before it again from its first record" if skipped == 1 else
               f"the {plural(skipped, 'attempt')} before it again from their first records")
        parts.insert(0, f"it ran {ran}, so it restored the checkpoint an earlier restore did")
    if more > 0:
        parts.append(f"{plural(more, 'more bound')} {'agrees' if more == 1 else 'agree'}")
    if lower:
        parts.append(f"after: {lower}")
    return "; ".join(parts)


def _places(first: Mapping[int, int]) -> str:
    return ", ".join(f"partition {p} offset {o}" for p, o in sorted(first.items()))


def _ranked(candidates: Sequence[MarkerCandidate]) -> list[MarkerCandidate]:
    """Best first (confidence, then source strength); the same markers are listed once, under the better evidence."""
    strength = {s: i for i, s in enumerate(MARKER_SOURCES)}
    ordered = sorted(candidates, key=lambda c: (-c.confidence, strength.get(c.source, len(strength))))
    out: list[MarkerCandidate] = []
    seen: list[list[dict[int, int]]] = []
    for c in ordered:
        if c.markers in seen:
            continue
        seen.append(c.markers)
        out.append(c)
    return out
