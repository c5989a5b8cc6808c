"""``reconstruct``: what a recovery under one rule does with every record of a log, and why."""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from agent_inspect._bulk import gc_paused
from agent_inspect._errors import RecoveryError
from agent_inspect._html import Code, HtmlPart, HtmlRepr, Strong, Table, Text
from agent_inspect.recovery._attribute_diff import attribute_diff
from agent_inspect.recovery._children import ChildDispatch
from agent_inspect.recovery._core import TaskFailed, TaskLookups
from agent_inspect.recovery._plan import queued_tasks
from agent_inspect.recovery._prediction import RemovalCauses
from agent_inspect.recovery._rebuild import Markers, normalize_markers, rebuild_in_window
from agent_inspect.recovery._refresh import output_identities
from agent_inspect.recovery._settings import Recovery
from agent_inspect.store import Entry, Outcome, RecordStatus, RecoverySession, Task

if TYPE_CHECKING:
    import networkx as nx

    from agent_inspect.history import History
    from agent_inspect.log import RuntimeInfo
    from agent_inspect.recovery._refresh import RetainedRounds
    from agent_inspect.store import DivergenceRule

__all__ = ["Reconstruction", "reconstruct", "STATUSES"]

STATUSES = tuple(status.value for status in RecordStatus)
"""Record statuses in ``Reconstruction.records["status"]``."""

_OP_STATUS = {"invalidate": "invalidated", "evict": "evicted", "cross-key": "evicted", "remove": "evicted",
              "delete": "pruned", "prune": "pruned"}
_INVALIDATING = {"root-conflict", "branch-change"}


@dataclass(frozen=True, eq=False)
class Reconstruction(HtmlRepr):
    """What recovery under ``rule`` does with every record of ``log`` (see :func:`reconstruct`).

    ``records``: the log's columns plus ``status`` (:data:`STATUSES`), ``reason`` (for readers: for an evicted
    or invalidated record, what removed it — the rebuild or which replayed lookup —, why, and that its task runs
    again if the replay reaches it), ``status_rule_note`` (the rule's own words behind such a status),
    ``divergence_id``, ``outcome`` (REUSE / RESUME / RERUN / FAIL of the record's task in the as-logged replay, None
    when not looked up), ``outcome_reason`` (for readers, like ``predict``'s ``reason``: only where a lookup
    removed or re-ran something), ``rule_note`` (the rule's own words), ``attempt`` and ``execution``.
    ``divergences``: one row per divergence (key, seq, kind, step, positions, explanation, removed, attribute
    diff of conflicting roots). ``evictions``: every cache removal (op, rule step, key, seq, removed positions, reason).

    For example::

        result = ai.reconstruct(log, markers=markers, rule="fixed")   # a labelled what-if
        result.divergences, result.evictions, result.lints
    """

    log: Any
    rule: DivergenceRule
    markers: Markers
    records: pd.DataFrame
    divergences: pd.DataFrame
    evictions: pd.DataFrame
    session: RecoverySession = field(repr=False)
    history: History = field(repr=False)
    #: which upstream runtime the log was read as, and why (:class:`agent_inspect.log.RuntimeInfo`)
    runtime: RuntimeInfo | None = field(default=None, repr=False, compare=False)
    #: the resolved settings the reconstruction ran under (rule, markers, runtime, restore checks)
    recovery: Recovery | None = field(default=None, repr=False, compare=False)

    @property
    def rule_label(self) -> str:
        """The rule's name, marked as a what-if when it is not the one the runtime ships."""
        return self.recovery.rule_label if self.recovery is not None else self.rule.name

    @property
    def store(self) -> Any:
        """The simulated cache after the rebuild and the as-logged replay."""
        return self.session.store

    def value(self, pos: int) -> Any:
        """The decoded value of the record at ``pos`` (delegates to the log)."""
        return self.log.value(pos)

    def graph(self, key: str, seq: int | None = None, attempt: int | None = None, **options: Any) -> nx.DiGraph:
        """The action graph of ``key`` (one round / attempt) with this reconstruction's statuses.

        ``options`` go to :func:`agent_inspect.history.action_graph` (e.g. ``action_names=``).
        """
        from agent_inspect.history import action_graph

        return action_graph(self, key, seq=seq, attempt=attempt, **options)

    def subagent_tree(self, key: str, seq: int, **options: Any) -> nx.DiGraph:
        """The sub-agent call tree of (key, seq) with this reconstruction's statuses (spec §11.5).

        ``options`` go to :func:`agent_inspect.history.subagent_tree` (``action_names=``, ``key_text=``).
        """
        from agent_inspect.history import subagent_tree

        return subagent_tree(self, key, seq, **options)

    def predict(self, **overrides: Any) -> Any:
        """The static prediction of a replay under this reconstruction's settings
        (:func:`agent_inspect.recovery.predict`; ``overrides`` by setting name, e.g. ``plan=``, ``agent=``)."""
        from agent_inspect.recovery._predict import predict

        return predict(self, **overrides)

    @cached_property
    def lints(self) -> pd.DataFrame:
        """Format and identity hazards of the log (:func:`agent_inspect.recovery.lint`)."""
        from agent_inspect.recovery._lints import lint

        return lint(self.log)

    def summary(self) -> dict[str, Any]:
        """Counts: records per status, divergences per kind, outcomes, cache events."""
        return {
            "rule": self.rule.name,
            "records": len(self.records),
            "status": {k: int(v) for k, v in self.records["status"].value_counts().items()},
            "outcomes": {k: int(v) for k, v in self.records["outcome"].value_counts().items()},
            "divergences": {k: int(v) for k, v in self.divergences["kind"].value_counts().items()},
            "cache_events": len(self.evictions),
            "evicted": int((self.records["status"] == "evicted").sum()),
            "invalidated": int((self.records["status"] == "invalidated").sum()),
            **({"runtime": self.runtime.as_dict()} if self.runtime is not None else {}),
        }

    def __repr__(self) -> str:
        s = self.summary()
        return (f"Reconstruction(rule={s['rule']!r}, {s['records']} records, {s['status']}, "
                f"{len(self.divergences)} divergences)")

    def _html_parts(self) -> Iterable[HtmlPart]:
        s = self.summary()
        counts = ", ".join(f"{k}: {v}" for k, v in s["status"].items())
        yield Text(Strong("Reconstruction"), " under rule ", Code(s["rule"]),
                   f": {s['records']} records ({counts}); {len(self.divergences)} divergences, "
                   f"{s['cache_events']} cache events.")
        cols = [c for c in ("business_key", "seq", "kind", "step", "positions", "explanation")
                if c in self.divergences.columns]
        yield Table(self.divergences[cols], caption="divergences")


def reconstruct(subject: Any, *, recovery: Recovery | None = None, replay: bool = True,
                **overrides: Any) -> Reconstruction:
    """Reconstruct what a restore does with ``subject`` (an ``ActionStateLog`` or a records frame — e.g.
    one partition's rows: every step is partition-local, except the snapshot Kafka cross-key eviction,
    which spans whatever it is given).

    The settings are ``recovery`` (a :class:`Recovery`) or its overrides by name (``rule``, ``markers``,
    ``runtime``, ``store_flavour``, ``kafka_pending``, ``expected_fingerprint``, …), resolved once with
    :meth:`Recovery.resolve`; the result carries them (:attr:`Reconstruction.recovery`).

    1. **Rebuild** (spec §6.5, §7.4, §8.4): ``markers`` (``{partition: offset}`` maps) select the
       window — minimum offset per partition, marker partitions only, to the end. ``markers=None``
       takes the whole loaded log as the window; ``[]`` is a fresh start (nothing is read).
       Tombstones delete; the rule's rebuild hook runs per record; last write wins. Undecodable
       records are skipped ("undecodable" divergences); a K2 window with a malformed key, a key
       group out of range or a fingerprint other than ``expected_fingerprint`` (default: the
       most common) fails the restore ("restore-failure"; every replayed task FAILs).
    2. **As-logged replay** (``replay=True``): every task whose record survived the rebuild is
       dispatched again, per key in round order (across keys by log position; where a round holds
       roots of several inputs, only the last-written input's roots), with the operator's
       get / write sequence of spec §9.3: roots arrive with fresh event ids; a child carries the id
       its reused parent's stored output has (ids are kept on reuse), or a fresh id when the parent
       reran (the "deterministic rerun" assumption of spec §15.6); reruns write simulated records. This is where the original rule's count > 1 and miss evictions happen.

    ``runtime`` ("0.3", "0.4", "main"; default "auto": inferred from the records, see
    :func:`agent_inspect.log.infer_runtime`) is the upstream runtime the log is read as; ``rule=None``
    takes the rule that runtime ships (the original rule for all three; "fixed" is a what-if). It also
    selects that runtime's recovery behaviours (:func:`agent_inspect.store.runtime_model`): from 0.4 on,
    checkpoint-time refresh rows (a state key re-appended with byte-identical bytes, addendum §2) get the
    status ``refresh``, are left out of attempts, executions and durable calls, and are never a rule step
    (``kafka_pending`` picks the Kafka mechanism: "refresh", the default, or "marker"). They are never new work:
    a round held only by refresh rows of states complete at the checkpoint is not dispatched; in one in flight
    there, only its incomplete states and queued tasks are (the rest NOT-DISPATCHED), as :meth:`ReplayPlan.from_log` infers.

    Returns a :class:`Reconstruction`. Attempts and executions come from
    :func:`agent_inspect.history.build_history`.

    For example::

        result = ai.reconstruct(log, markers=ai.samples.markers("production"))
        result.records["status"].value_counts(), result.divergences
    """
    settings = Recovery.resolve(subject, recovery, **overrides)
    with gc_paused():  # millions of small acyclic objects
        return _reconstruct(subject, settings, replay)


def _reconstruct(log: Any, settings: Recovery, replay: bool) -> Reconstruction:
    from agent_inspect.recovery._refresh import refresh_positions, retained_rounds

    records = log.records if hasattr(log, "records") else log
    if not isinstance(records, pd.DataFrame):
        raise RecoveryError(f"reconstruct needs an ActionStateLog or its records frame, got {type(log).__name__}")
    rule_obj, markers, runtime, model = settings.rule, settings.markers, settings.runtime, settings.model
    refresh = refresh_positions(log, model)
    history, ann = _history(records, refresh)
    attempts = ann["attempt"].astype(object).tolist()
    session, in_window = rebuild_in_window(log, rule_obj, markers, expected_fingerprint=settings.expected_fingerprint,
                                           max_parallelism=settings.max_parallelism, attempts=attempts,
                                           refresh=refresh)
    retained = retained_rounds(records, refresh, in_window, getattr(log, "value", None))
    outcomes: dict[int, tuple[str, str | None, str]] = {}
    causes = RemovalCauses(session.events)   # what removed each record, in words (the replay adds its lookups)
    if replay and len(session.store):
        keys = records["state_key"].astype(object).tolist() if "state_key" in records else [None] * len(records)
        children = ChildDispatch(model, records, getattr(log, "value", None))
        _replay_as_logged(session, keys, records.index, outcomes, causes, getattr(log, "value", None), children,
                          retained)
    idle = {e.pos for e in session.store.entries() if (e.business_key, e.seq) in retained.finished}
    frame = _statuses(records, ann, in_window, session, outcomes, causes, refresh,
                      frozenset(p for p in idle if p is not None))
    return Reconstruction(
        log=log, rule=rule_obj, markers=markers if markers is None else normalize_markers(markers),
        records=frame, divergences=_divergence_frame(session, log), evictions=_event_frame(session),
        session=session, history=history, runtime=runtime, recovery=settings,
    )


def _history(records: pd.DataFrame, refresh: frozenset[int]) -> tuple[History, pd.DataFrame]:
    """The history of ``records`` and its per-record annotations (attempt, execution) on the records' index.

    Refresh rows are not attempts or executions: the history is read without them.
    """
    from agent_inspect.history import build_history

    if not refresh:
        history = build_history(records)
        return history, history.records
    history = build_history(records.drop(index=sorted(refresh)))
    ann = history.records.reindex(records.index)
    ann["execution"] = ann["execution"].fillna(-1).astype("int64")
    return history, ann


def _replay_as_logged(session: RecoverySession, state_keys: list[Any], index: pd.Index,
                      outcomes: dict[int, tuple[str, str | None, str]], causes: RemovalCauses, value: Any = None,
                      children: Any = None, retained: RetainedRounds | None = None) -> None:
    # Dispatch order within a round is the order in which each state key was first written: a
    # parent re-executed in a later attempt still comes before the child it triggered.
    first_write: dict[str, int] = {}
    for sk, p in zip(state_keys, index.tolist()):
        if sk is not None and sk not in first_write:
            first_write[sk] = p
    per_key: dict[str, dict[int, list[tuple[int, Entry]]]] = {}
    for entry in session.store.entries():
        start = first_write.get(entry.state_key, entry.pos if entry.pos is not None else 0)
        per_key.setdefault(entry.business_key, {}).setdefault(entry.seq, []).append((start, entry))
    streams = []
    for key, by_seq in per_key.items():
        rounds = []
        for seq in sorted(by_seq):
            tasks = sorted(by_seq[seq], key=lambda t: (t[0], t[1].pos or 0))
            roots = [e for _, e in tasks if e.is_root]
            if len({e.event_uuid for e in roots}) > 1:
                # one input arrives per round: the branch written last is the one replayed
                latest = max(roots, key=lambda e: e.pos or -1).event_uuid
                tasks = [t for t in tasks if not t[1].is_root or t[1].event_uuid == latest]
            rounds.append((tasks[0][0], key, seq, [e for _, e in tasks]))
        streams.append(rounds)
    order = heapq.merge(*streams, key=lambda r: r[0]) if len(streams) > 1 else iter(streams[0] if streams else [])
    emitted: dict[int, list[tuple[str | None, str | None, str | None]]] = {}
    finished, settled = (retained.finished, retained.settled) if retained is not None else ((), ())
    for _, _key, _seq, entries in order:
        if (_key, _seq) in finished:
            continue   # finished before the checkpoint, only refreshed since: no input replays it (addendum §2.2)
        reused: list[Entry] = []
        reused_ids: set[str] = set()
        if children is not None:
            children.start_round()
        # an in-flight round's queued tasks (no record yet) and incomplete states, in the order the restore re-submits
        rank: dict[object, int] = {t: i for i, t in enumerate(retained.order.get((_key, _seq), ()))} if retained else {}
        work: list[tuple[int, Entry | Task]] = [(rank.get(e.pos, len(rank)), e) for e in entries]
        work += [(rank.get(q, -1), task) for q, task in queued_tasks(retained, value, entries)]
        for _, item in sorted(work, key=lambda w: w[0]):
            if isinstance(item, Task):
                n_events = len(session.events)
                if _dispatch(session, item, None)[0] is Outcome.FAIL:
                    return
                causes.removed(session.events[n_events:], f"the replayed lookup of a queued task ({_key}, seq {_seq})")
                continue
            entry = item
            if entry.state_key in settled:   # complete at the restored checkpoint: not re-submitted
                if entry.pos is not None:
                    why = "complete at the restored checkpoint; the restore re-submits only its round's in-flight tasks"
                    outcomes[entry.pos] = ("NOT-DISPATCHED", why, why)
                continue
            skip = children.skip(entry) if children is not None else None
            if skip is not None:      # a child task nothing sends again under this runtime (addendum §1.1)
                if entry.pos is not None:
                    outcomes[entry.pos] = ("NOT-DISPATCHED", skip, skip)
                children.done(entry, None)
                continue
            task = Task.for_entry(entry, event_id=_event_id(entry, reused, reused_ids, value, emitted))
            n_events = len(session.events)
            outcome, note = _dispatch(session, task, entry.pos)
            ops = session.events[n_events:]          # what this task's lookups removed
            if entry.pos is not None:
                outcomes[entry.pos] = (outcome.value, causes.reason(outcome.value, note, entry.state_key, ops), note)
            causes.removed(ops, f"the replayed lookup of record {entry.pos} ({_key}, seq {_seq})")
            if children is not None:
                children.done(entry, outcome.value)
            if outcome is Outcome.FAIL:
                return
            if outcome is Outcome.REUSE and entry.output_event_ids:
                reused.append(entry)
                reused_ids.update(entry.output_event_ids)


def _event_id(entry: Entry, reused: list[Entry], reused_ids: set[str], value: Any,
              emitted: dict[int, list[tuple[str | None, str | None, str | None]]]) -> str:
    """The id the replayed event carries: a fresh one for an input; for a child, the id of the reused
    parent output with its type and attributes (ids are kept on reuse), else a fresh one (a rerun
    parent emits new ids). A reused parent whose outputs carry other ids than the child's record
    gives the identity check of spec §10.3 something to find (its "false mismatch" limit)."""
    fresh = f"replay:{entry.pos}"
    if entry.is_root:
        return fresh
    if entry.task_event_id in reused_ids:
        return entry.task_event_id
    if value is None:
        return fresh
    for parent in reversed(reused):
        if parent.pos is None:
            continue
        outs = emitted.get(parent.pos)
        if outs is None:
            outs = emitted[parent.pos] = output_identities(value, parent.pos)
        for etype, fp, eid in outs:
            if etype == entry.task_event_type and fp == entry.event_uuid and eid is not None:
                return eid
    return fresh


def _dispatch(session: RecoverySession, task: Task, pos: int | None) -> tuple[Outcome, str]:
    """The operator's gets and writes for one task (spec §9.3), with a deterministic rerun (no body)."""
    core = TaskLookups(session, task)
    try:
        first = core.get(pos=pos)
        if first.outcome is Outcome.REUSE:
            return first.outcome, first.reason
        if first.entry is None:
            core.start(lambda: _replay_entry(task, completed=False))
        core.complete(_replay_entry(task, completed=True))
    except TaskFailed as failed:
        reason = "lookup after the initial write failed" if failed.stage == "bind" else failed.decision.reason
        return Outcome.FAIL, reason
    return first.outcome, first.reason


def _replay_entry(task: Task, *, completed: bool) -> Entry:
    return Entry(state_key=task.state_key, business_key=task.business_key, seq=task.seq,
                 event_uuid=task.event_uuid, action_uuid=task.action_uuid, key_format=task.key_format,
                 key_text=task.key_text, is_root=task.is_root, completed=completed, task_event_id=task.event_id,
                 task_event_type=task.event_type)


def _statuses(records: pd.DataFrame, ann: pd.DataFrame, in_window: np.ndarray, session: RecoverySession,
              outcomes: dict[int, tuple[str, str | None, str]], causes: RemovalCauses,
              refresh: frozenset[int] = frozenset(), idle: frozenset[int] = frozenset()) -> pd.DataFrame:
    n = len(records)
    index = records.index.tolist()
    where = {p: i for i, p in enumerate(index)}
    status = np.full(n, "superseded", dtype=object)
    reason: list[Any] = [None] * n
    note: list[Any] = [None] * n      # the rule's own words where a cache event of the rule set the status
    div_id = np.full(n, -1, dtype="int64")
    state_keys = records["state_key"].astype(object).tolist() if "state_key" in records else [None] * n
    seqs = records["seq"].isna().to_numpy() if "seq" in records else np.ones(n, dtype=bool)
    errors = records["error"].notna().to_numpy() if "error" in records else np.zeros(n, dtype=bool)
    tomb = records["tombstone"].fillna(False).to_numpy(dtype=bool) if "tombstone" in records else np.zeros(n, bool)
    next_write: dict[str, int] = {}
    for i in range(n - 1, -1, -1):
        sk = state_keys[i]
        if sk is not None and in_window[i] and not errors[i]:
            if status[i] == "superseded" and sk in next_write:
                reason[i] = f"overwritten by the later write at pos {next_write[sk]} (same state key)"
            next_write[sk] = index[i]
    divergences = session.divergences
    for event in session.events:
        kind = divergences[event.divergence_id].kind if event.divergence_id is not None else None
        st = "invalidated" if kind in _INVALIDATING else _OP_STATUS.get(event.op, "evicted")
        words = None      # the same for every record of the event: worded once
        for entry in event.removed:
            at = where.get(entry.pos) if entry.pos is not None else None
            if at is None:
                continue
            words = words or causes.status_reason(event, kind)
            status[at], reason[at], note[at] = st, words, event.reason
            div_id[at] = -1 if event.divergence_id is None else event.divergence_id
    for entry in session.store.entries():
        at = where.get(entry.pos) if entry.pos is not None else None
        if at is not None:
            status[at], reason[at], note[at], div_id[at] = "live", "cached when the recovery has run", None, -1
    for p, (outcome, *_) in outcomes.items():
        i = where[p]
        if outcome in ("REUSE", "RESUME") and status[i] == "superseded" and reason[i] is None:
            status[i], reason[i] = "live", f"{outcome.lower()}d by the recovery"
    status[~in_window] = "outside"
    for i in np.flatnonzero(~in_window).tolist():
        reason[i], note[i] = "before the recovery markers (not read by the rebuild)", None
    if refresh:
        brought = set(session.refreshed)
        for p in sorted(refresh):
            i = where[p]
            brings = in_window[i] and p in brought
            status[i], note[i], div_id[i] = "refresh", None, -1
            reason[i] = ("checkpoint-time refresh of a retained state (byte-identical to the earlier write of its "
                         "state key); " + ("it brings the pending state back into the rebuild window"
                                           if brings else "collapsed into the earlier write")
                         + ("; its round finished before the checkpoint, so nothing replays it" if p in idle else ""))
    status[tomb & in_window] = "tombstone"
    bad = (errors | seqs) & ~tomb
    status[bad] = "error"
    for i in np.flatnonzero(bad).tolist():
        note[i] = None
        reason[i] = ("the record did not decode; see log.errors" if errors[i] else
                     "the key has no seqNum (K0): no recovery lookup can address it")
    for d in session.divergences:
        if d.kind in ("undecodable", "restore-failure"):
            for p in d.positions:
                at = where.get(p)
                if at is not None:
                    div_id[at] = d.id
    frame = records.copy()
    frame["status"] = pd.Categorical(status, categories=list(STATUSES))
    frame["reason"] = pd.Series(reason, index=records.index, dtype="object")
    frame["status_rule_note"] = pd.Series(note, index=records.index, dtype="object")
    frame["divergence_id"] = pd.arrays.IntegerArray(div_id, div_id < 0)
    out = [outcomes.get(p) for p in index]
    frame["outcome"] = pd.Categorical([o[0] if o else None for o in out],
                                      categories=[o.value for o in Outcome])
    for i, column in ((1, "outcome_reason"), (2, "rule_note")):
        frame[column] = pd.Series([o[i] if o else None for o in out], index=records.index, dtype="object")
    frame["attempt"] = ann["attempt"].array
    frame["execution"] = ann["execution"].to_numpy()
    return frame


def _event_frame(session: RecoverySession) -> pd.DataFrame:
    rows = [{
        "event": e.index, "op": e.op, "step": e.step, "business_key": e.business_key, "seq": e.seq,
        "removed": len(e.removed), "positions": e.positions, "reason": e.reason,
        "divergence_id": e.divergence_id, "trigger_pos": e.trigger_pos,
    } for e in session.events]
    cols = ["event", "op", "step", "business_key", "seq", "removed", "positions", "reason", "divergence_id",
            "trigger_pos"]
    frame = pd.DataFrame(rows, columns=cols)
    for c in ("seq", "divergence_id", "trigger_pos"):
        frame[c] = frame[c].astype("Int64")
    return frame


def _divergence_frame(session: RecoverySession, log: Any) -> pd.DataFrame:
    removed: dict[int, int] = {}
    for e in session.events:
        if e.divergence_id is not None:
            removed[e.divergence_id] = removed.get(e.divergence_id, 0) + len(e.removed)
    value = getattr(log, "value", None)
    rows = []
    for d in session.divergences:
        diff = attribute_diff(value, d.positions) if d.kind in _INVALIDATING and value is not None else None
        rows.append({"id": d.id, "business_key": d.business_key, "seq": d.seq, "kind": d.kind, "step": d.step,
                     "positions": d.positions, "trigger_pos": d.trigger_pos, "removed": removed.get(d.id, 0),
                     "attribute_diff": diff, "explanation": d.explanation})
    cols = ["id", "business_key", "seq", "kind", "step", "positions", "trigger_pos", "removed", "attribute_diff",
            "explanation"]
    frame = pd.DataFrame(rows, columns=cols)
    frame["trigger_pos"] = frame["trigger_pos"].astype("Int64")
    return frame.set_index("id", drop=False).rename_axis(None)
