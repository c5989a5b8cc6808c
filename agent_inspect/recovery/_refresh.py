"""Checkpoint-time refresh rows (0.4+ pending states kept across checkpoints; addendum §2).

From #1158 / #1175 on, a checkpoint re-appends every retained (not yet pruned) action state: a refresh row is
one whose bytes equal the latest earlier value of its state key in its partition (a tombstone ends the chain).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import msgspec
import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from agent_inspect._types import LogLike, RuntimeLike
    from agent_inspect.codec import ActionState, Event

from agent_inspect._bulk import once_per_log
from agent_inspect._errors import RecoveryError
from agent_inspect._glossary import count_words, first_few, plural
from agent_inspect.agents import OUTPUT_EVENT, SUBAGENT_EVENT
from agent_inspect.codec import event_uuid
from agent_inspect.history import refresh_rows, subagent_result_events
from agent_inspect.recovery._rebuild import normalize_markers, source_kind_of, window_mask
from agent_inspect.store import runtime_model

__all__ = ["refresh_positions", "subagent_result_events", "Queued", "RetainedRounds", "retained_rounds", "queued_event",
           "output_identities", "check_moved_marker"]


def refresh_positions(log: LogLike | pd.DataFrame, runtime: str | RuntimeLike | None = None, *, kafka_pending: str | None = None) -> frozenset[int]:
    """Positions of the refresh rows of ``log`` when ``runtime`` writes them (``0.4`` and ``main``;
    for Kafka only with ``kafka_pending="refresh"``, the default — see :mod:`agent_inspect.store`'s
    runtime table); empty for ``0.3`` or without the raw bytes (a records frame alone).

    For example::

        v4 = ai.load(ai.samples.path("production_v4"))   # written by main, which refreshes at each checkpoint
        sorted(ai.recovery.refresh_positions(v4, "main"))[:5]   # positions of refresh rows (none under 0.3)
    """
    return refresh_rows(log, runtime_model(runtime, kafka_pending=kafka_pending))


def check_moved_marker(log: LogLike | pd.DataFrame | None, runtime: str | RuntimeLike | None, markers: Any) -> None:
    """Refuse ``kafka_pending="marker"`` over a Kafka log whose records after ``markers`` repeat their state key's
    last value byte for byte: checkpoint-time refresh rows (addendum §2.2), which a writer that moves the marker
    back never writes (§2.3), so the log itself shows its writer refreshes. Read under "marker" those rows would be
    new writes and their rounds replayed and reused, a recovery no upstream runtime runs."""
    model = runtime_model(runtime, kafka_pending="marker")
    raw = getattr(log, "raw", None)
    if log is None or raw is None or not model.keeps_pending or model.refresh_rows(source_kind_of(log)):
        return
    found = _refresh_rows_after(cast("LogLike", log), runtime, model.name, markers)
    if found:
        raise RecoveryError(f"kafka_pending='marker' does not fit this log: it holds {plural(found, 'refresh row')} "
                            "after the markers (a state key's last value repeated byte for byte, addendum §2.2), which "
                            "a writer that moves the marker back never writes (§2.3); its writer refreshes, so use "
                            "kafka_pending='refresh' (the default)")


def _refresh_rows_after(log: LogLike, runtime: str | RuntimeLike | None, name: str, markers: Any) -> int:
    """How many refresh rows ``log`` holds in the rebuild window of ``markers`` (anywhere without markers), worked
    out once per log, runtime and markers (settings and plan both ask)."""
    start = normalize_markers(markers)
    asked = (name, None if start is None else tuple(sorted(start.items())))
    counts = once_per_log(_MOVED_MARKER_CHECKS, log, dict)
    if asked not in counts:
        found = refresh_positions(log, runtime, kafka_pending="refresh")
        if found and start is not None:
            found = found & set(log.records.index[window_mask(log.records, markers)].tolist())
        counts[asked] = len(found)
    return counts[asked]


#: per log: the refresh rows after each (runtime, markers) the kafka_pending="marker" check was asked about
_MOVED_MARKER_CHECKS: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], int]] = weakref.WeakKeyDictionary()


class Queued(NamedTuple):
    """A task the restored checkpoint holds queued with no state yet: the listener ``action_uuid`` of output
    event number ``output`` of the state recorded at ``pos`` (routed when that state completed, not started),
    or with ``output`` -1 of that state's own trigger (a round's input, queued for another root action)."""

    pos: int
    output: int
    action_uuid: str


@dataclass(frozen=True)
class RetainedRounds:
    """The rounds a restore brings back through refresh rows alone: their states first appear in the window as
    refresh rows and no input of theirs arrives after the marker (consumed before the checkpoint)."""

    #: rounds complete at the checkpoint, nothing queued, only refresh rows after the marker: nothing replays them
    finished: frozenset[tuple[str, int]] = frozenset()
    #: per in-flight round, the refresh rows of its incomplete states (RESUMEd); empty when only queued tasks remain
    pending: Mapping[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)
    #: state keys of in-flight rounds complete at the checkpoint (their tasks are not sent again)
    settled: frozenset[str] = frozenset()
    #: per in-flight round, its tasks queued without a state, re-submitted with their original events
    queued: Mapping[tuple[str, int], tuple[Queued, ...]] = field(default_factory=dict)
    #: what the log cannot tell about these rounds and how they were read anyway (the plan and predict pass them on)
    notes: tuple[str, ...] = ()
    #: per in-flight round, its incomplete states and queued tasks in the order the restore re-submits them
    order: Mapping[tuple[str, int], tuple[int | Queued, ...]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.finished or self.pending)


def retained_rounds(records: pd.DataFrame, refresh: Collection[int], window: np.ndarray | pd.Series,
                    value: Callable[[int], Any] | None = None) -> RetainedRounds:
    """:class:`RetainedRounds` of ``records`` (``window``: one bool per row). A round complete at the checkpoint but
    written again after it is left to the as-logged reading, unless a task of it was still queued there.
    ``value`` (``log.value``) matches queued tasks by fingerprint as the store does; without it, by event id."""
    if not refresh:
        return RetainedRounds()
    mask = np.asarray(window, dtype=bool)
    ok = mask & records["error"].isna().to_numpy() & records["seq"].notna().to_numpy()
    if "tombstone" in records:
        ok &= ~records["tombstone"].fillna(False).to_numpy(dtype=bool)
    sub = records[ok]
    first: set[str] = set()
    at_checkpoint: dict[tuple[str, int], list[tuple[int, str, bool]]] = {}
    new_input: set[tuple[str, int]] = set()
    written: set[tuple[str, int]] = set()     # rounds with a write after the marker that is no refresh row
    completed = sub["completed"].fillna(False).to_numpy(dtype=bool).tolist()
    roots = sub["is_root"].fillna(False).to_numpy(dtype=bool).tolist()
    for pos, sk, bk, seq, done, root in zip(sub.index.tolist(), sub["state_key"].astype(object), sub["business_key"],
                                            sub["seq"], completed, roots):
        rnd = (str(bk), int(seq))
        if int(pos) not in refresh:
            written.add(rnd)
        if sk in first:
            continue
        first.add(sk)
        if int(pos) in refresh:
            at_checkpoint.setdefault(rnd, []).append((int(pos), str(sk), done))
        elif root:
            new_input.add(rnd)
    for rnd in new_input:
        at_checkpoint.pop(rnd, None)
    queued, notes = _queued(records, at_checkpoint, value)
    finished: set[tuple[str, int]] = set()
    pending: dict[tuple[str, int], tuple[int, ...]] = {}
    settled: set[str] = set()
    for rnd, states in at_checkpoint.items():
        open_ = tuple(p for p, _, done in states if not done)
        if open_ or rnd in queued:
            pending[rnd] = open_
            settled.update(sk for _, sk, done in states if done)
        elif rnd not in written:
            finished.add(rnd)
    done = sorted(rnd for rnd in (*finished, *pending) if any(d for _, _, d in at_checkpoint[rnd]))
    if done:
        notes.insert(0, f"{_listed(done)}: a state complete at the checkpoint is read as not sent again; but after "
                        "an earlier restore its task may not have run again before the checkpoint (a reuse writes "
                        "nothing, so the log cannot show it): then it was still queued there, or its input not yet "
                        "replayed, and the restore REUSEs it, sending its outputs again (spec §9.3 step 2, §9.5)")
    writes = _writes_of(records, refresh, [p for rnd, open_ in pending.items()
                                           for p in (*open_, *(q.pos for q in queued.get(rnd, ())))])
    order = {rnd: _resubmit_order(open_, queued.get(rnd, ()), writes) for rnd, open_ in pending.items()}
    unsure = sorted(rnd for rnd, (_, guessed) in order.items() if guessed)
    if unsure:
        notes.append(f"{_listed(unsure)}: a queued task was routed while an incomplete task had started; a suspended "
                     "task is re-queued behind the tasks queued before it (actionTasks is FIFO), but the log does not "
                     "show when it last suspended: read as at its last write")
    return RetainedRounds(frozenset(finished), pending, frozenset(settled), queued, tuple(notes),
                          {rnd: tasks for rnd, (tasks, _) in order.items()})


def _writes_of(records: pd.DataFrame, refresh: Collection[int], positions: list[int]) -> dict[int, list[int]]:
    """Per position in ``positions``: the positions of the writes (no refresh rows) of its state key before it."""
    if not positions:
        return {}
    keys = records["state_key"].astype(object)
    wanted = set(keys.loc[positions])
    rows = keys[keys.isin(wanted).to_numpy() & ~records.index.isin(list(refresh))]
    by_key: dict[object, list[int]] = {}
    for pos, sk in zip(rows.index.tolist(), rows.tolist()):
        by_key.setdefault(sk, []).append(int(pos))
    return {p: [w for w in by_key.get(keys.at[p], ()) if w < p] for p in positions}


def _resubmit_order(open_: tuple[int, ...], queued: tuple[Queued, ...],
                    writes: Mapping[int, list[int]]) -> tuple[tuple[int | Queued, ...], bool]:
    """An in-flight round's tasks in re-submit order, and whether that order is a guess. ``actionTasks`` is FIFO
    (upstream ``addActionTask``), so each task sorts by when it was last queued: a queued one by its trigger's
    completion, an incomplete one by its last write; a guess when a task was routed between an incomplete one's
    first and last write (it may have suspended later without writing)."""
    def routed(q: Queued) -> int:
        mine = writes.get(q.pos, [])
        return max(mine) if q.output >= 0 and mine else -1

    spans = {p: (min(w), max(w)) if (w := writes.get(p)) else (p, p) for p in open_}
    timed: list[tuple[int, int | Queued]] = [(spans[p][1], p) for p in open_] + [(routed(q), q) for q in queued]
    guessed = any(lo < routed(q) < hi for lo, hi in spans.values() for q in queued)
    return tuple(t for _, t in sorted(timed, key=lambda x: x[0])), guessed


def _listed(rounds: Collection[tuple[str, int]], most: int = 3) -> str:
    """``round (k, 1)`` / ``rounds (k, 1), (k, 2) and 3 more``."""
    return f"{count_words(len(rounds), 'round')} {first_few((f'({bk}, {seq})' for bk, seq in rounds), most)}"


def _queued(records: pd.DataFrame, at_checkpoint: Mapping[tuple[str, int], list[tuple[int, str, bool]]],
            value: Callable[[int], Any] | None) -> tuple[dict[tuple[str, int], tuple[Queued, ...]], list[str]]:
    """Per retained round, the tasks queued at the checkpoint with no state yet, and notes on what the log cannot
    tell. A task is queued per listener of an event's type when its trigger arrives or completes (§9.3 step 4) and
    writes its first state when dequeued; checkpoints fall between mailbox actions, so a trigger whose listener has
    no record in the round was still queued (§9.5 step 2). Outputs and sub-agent envelopes queue nothing (§11.4).
    """
    # What the log cannot tell is said in the notes rather than guessed silently. Facts (apache/flink-agents
    # @8ad3a32b, runtime/.../operator/ActionExecutionOperator.java): a re-submitted task whose state is complete
    # is reused — outputs routed again, nothing written (L434-456) — so a task still queued behind a reused
    # trigger leaves the same log as one that ran before the checkpoint; a suspended task is re-queued at the
    # tail of actionTasks (L551), polled FIFO (utils/StateUtil.java L76), behind the tasks queued before it
    # suspended (_resubmit_order). From a log alone an action that never ran is not known to listen; a Java
    # action under K1–K1.6 (a hash-based action UUID per JVM, spec §4.4) shows up as one listener per attempt,
    # whose UUIDs never meet in a round since every listener of a type gets a task per event (L314-319).
    # Runtime-made events are in no state: an AgentRunBeginEvent is routed before the input's own actions are
    # queued (L310), so its tasks write a state before any root does; memory observations are not followed here.
    cols = ["is_root", "task_event_type", "task_event_id", "event_uuid", "output_event_types", "output_event_ids"]
    rows = records[cols].loc[[pos for states in at_checkpoint.values() for pos, _, _ in states]]
    rows["is_root"] = rows["is_root"].fillna(False)
    row = dict(zip(rows.index.tolist(), zip(*(rows[c] for c in cols))))
    sent: dict[tuple[str, int], list[tuple[int, int, str, str, str | None]]] = {}
    for rnd, states in at_checkpoint.items():
        events = sent.setdefault(rnd, [])
        for pos, _, done in states:
            root, etype, eid, fp, types, ids = row[pos]
            if root and not any(o < 0 for _, o, *_ in events):
                events.append((pos, -1, str(etype), str(eid), str(fp)))       # the input, sent to every root
            if done and types:
                fps = [fp for _, fp, _ in output_identities(value, pos)] if value is not None else []
                events += [(pos, i, str(t), str(x), fps[i] if i < len(fps) else None)
                           for i, (t, x) in enumerate(zip(types, ids or ()))]
    types = {etype for events in sent.values() for _, _, etype, _, _ in events} - {OUTPUT_EVENT, SUBAGENT_EVENT}
    if not types:
        return {}, []
    ok = records["error"].isna().to_numpy()
    triggered = records[["task_event_type", "action_uuid", "business_key", "seq"]][
        ok & records["task_event_type"].isin(types).to_numpy()]
    listeners: dict[str, list[str]] = {}
    for etype, au in zip(*(triggered[["task_event_type", "action_uuid"]].drop_duplicates()[c].astype(str)
                           for c in ("task_event_type", "action_uuid"))):
        listeners.setdefault(etype, []).append(au)
    notes = [f"no action in the log ran for {etype!r} (emitted in {_listed(rnds)}): a listener that never ran is "
             "not known, so a task of it queued at the checkpoint is not inferred (pass a ReplayPlan)"
             for etype in sorted(types - set(listeners))
             if (rnds := sorted(r for r, evs in sent.items() if any(e[2] == etype for e in evs)))]
    # a listener with any record of the round was no queued task without a state (one written after the marker
    # makes the round one left to the as-logged reading)
    near = ok & records["seq"].isin({s for _, s in at_checkpoint}).to_numpy(dtype=bool, na_value=False) \
        & records["business_key"].isin({b for b, _ in at_checkpoint}).to_numpy()
    mine = records[["business_key", "seq", "event_uuid", "task_event_id", "action_uuid"]][near]
    started: dict[tuple[str, int], set[tuple[str | None, str]]] = {}
    for bk, seq, fp, eid, au in zip(mine["business_key"].astype(str), mine["seq"], mine["event_uuid"].astype(str),
                                    mine["task_event_id"].astype(str), mine["action_uuid"].astype(str)):
        if (bk, int(seq)) in at_checkpoint:
            started.setdefault((bk, int(seq)), set()).update(((fp, au), (eid, au)))
    # every listener of a type gets a task for every event of it, so listeners of one type that never ran in one
    # round are one action under several UUIDs (a Java action's hash-based UUID changes per JVM under K1–K1.6,
    # spec §4.4): one of them with a record answers for all, and a task still queued is inferred once, under the
    # UUID the log shows last
    one = {etype: str(rows["action_uuid"].iloc[-1]) for etype, uuids in listeners.items() if len(uuids) > 1
           and _never_together(rows := triggered[(triggered["task_event_type"] == etype).to_numpy()])}
    out: dict[tuple[str, int], tuple[Queued, ...]] = {}
    for rnd, events in sent.items():
        seen = started.get(rnd, set())
        tasks = []
        for pos, i, etype, eid, fp in events:
            missing = [au for au in listeners.get(etype, ()) if (eid, au) not in seen and (fp, au) not in seen]
            if etype in one:
                missing = [one[etype]] if len(missing) == len(listeners[etype]) else []
            tasks += [Queued(pos, i, au) for au in missing]
        if tasks:
            out[rnd] = tuple(tasks)
    inferred = {q.action_uuid for qs in out.values() for q in qs}
    notes += [f"the actions {', '.join(sorted(listeners[etype]))} that ran for {etype!r} never ran in one round: read "
              "as one Java action whose hash-based action UUID changed with the attempt (K1–K1.6, spec §4.4), so its "
              f"queued task is inferred once, as {au}" for etype, au in sorted(one.items()) if au in inferred]
    return out, notes


def _never_together(rows: pd.DataFrame) -> bool:
    """True when no (business key, seq) of ``rows`` has records of two of their action UUIDs."""
    per_round = rows.drop_duplicates(["business_key", "seq", "action_uuid"]).groupby(
        ["business_key", "seq"], observed=True, sort=False)["action_uuid"].size()
    return bool((per_round <= 1).all())


def output_identities(value: Callable[[int], Any], pos: int) -> list[tuple[str | None, str | None, str | None]]:
    """(type, fingerprint, id) of each output event of the state at ``pos`` (empty or None when it does not decode)."""
    try:
        state = value(pos)
    except Exception:  # noqa: BLE001 - an undecodable state simply emits nothing to match
        return []
    out = []
    for ev in getattr(state, "output_events", ()) or ():
        try:
            fp = event_uuid(ev.attrs())
        except Exception:  # noqa: BLE001 - same: no match by fingerprint
            fp = None
        out.append((ev.type, fp, ev.id))
    return out


def queued_event(value: Callable[[int], Any], task: Queued) -> Any:
    """The event a queued task was routed with (``agent_inspect.codec.Event``, its original id kept)."""
    state = value(task.pos)
    return state.task_event if task.output < 0 else state.output_events[task.output]


def with_subagent_result_events(state: ActionState, events: Iterable[Event]) -> ActionState:
    """``state`` (an ``agent_inspect.codec.ActionState``) carrying ``events`` as its ``subagentResultEvents`` (V4),
    for writers of synthetic logs.

    For example::

        state = log.value(log.records.index[log.records["completed"].fillna(False).astype(bool)][0])
        ai.recovery.with_subagent_result_events(state, [])   # the same state, carrying subagentResultEvents
    """
    return msgspec.structs.replace(state, subagent_result_events=tuple(events))
