"""``reconstruct``: what a recovery under one rule does with every record of a log, and why."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Unpack, cast

import numpy as np
import pandas as pd

from agent_inspect._bulk import gc_paused
from agent_inspect._errors import RecoveryError
from agent_inspect._glossary import define, plural
from agent_inspect._html import Code, HtmlPart, HtmlRepr, Strong, Table, Term, Text
from agent_inspect._types import RecoveryOverrides
from agent_inspect.agents import AsRecordedAgent
from agent_inspect.history import action_graph, build_history, subagent_tree
from agent_inspect.log import rule_label
from agent_inspect.recovery._lints import lint
from agent_inspect.recovery._predict import predict, simulate
from agent_inspect.recovery._prediction import RemovalCauses
from agent_inspect.recovery._rebuild import Markers, marker_warnings, rebuild_in_window, rebuild_start
from agent_inspect.recovery._refresh import refresh_positions, retained_rounds
from agent_inspect.recovery._settings import Recovery
from agent_inspect.store import Outcome, RecordStatus, RecoverySession

if TYPE_CHECKING:
    import networkx as nx

    from agent_inspect._types import LogLike
    from agent_inspect.agents import Agent
    from agent_inspect.codec import ActionState
    from agent_inspect.history import History
    from agent_inspect.log import RuntimeInfo
    from agent_inspect.recovery._prediction import Prediction
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

    ``records``: the log's columns plus ``status`` (:data:`STATUSES`), ``reason`` (for readers: what removed an
    evicted or invalidated record, and why), ``status_rule_note`` (the rule's own words), ``divergence_id``,
    ``outcome`` (of the record's task in the replay, None when not looked up), ``outcome_reason`` (as ``predict``'s
    ``reason``), ``rule_note``, ``attempt`` and ``execution``. ``divergences``: one row per divergence (with the
    attribute diff of conflicting roots). ``evictions``: every cache removal, with the ``trigger_pos`` of the
    record whose reading or lookup made it. ``warnings``: what the markers leave out of the log (a partition with
    no marker, a marker past its partition's end), as :attr:`Prediction.warnings` says it.

    For example::

        result = ai.reconstruct(log, markers=markers, rule="fixed")   # a labelled what-if
        result.divergences, result.evictions, result.summary()
    """

    log: LogLike | pd.DataFrame
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
    #: what the markers leave out of the log (:func:`agent_inspect.recovery.marker_warnings`)
    warnings: tuple[str, ...] = field(default=(), compare=False)

    @property
    def rule_label(self) -> str:
        """The rule's name, marked as a what-if when it is not the one the runtime ships (:func:`~agent_inspect.log.rule_label`)."""
        return self.recovery.rule_label if self.recovery is not None else rule_label(self.rule, self.runtime)

    @property
    def store(self) -> Any:
        """The simulated cache after the rebuild and the replay."""
        return self.session.store

    def value(self, pos: int) -> ActionState | None:
        """The decoded value of the record at ``pos`` (delegates to the log)."""
        return self.log.value(pos)

    def graph(self, key: str, seq: int | None = None, attempt: int | None = None, **options: Any) -> nx.DiGraph:
        """The action graph of ``key`` (one round / attempt) with this reconstruction's statuses; ``options`` go to
        :func:`agent_inspect.history.action_graph` (e.g. ``action_names=``)."""
        return action_graph(self, key, seq=seq, attempt=attempt, **options)

    def subagent_tree(self, key: str, seq: int, **options: Any) -> nx.DiGraph:
        """The sub-agent call tree of (key, seq) with this reconstruction's statuses (spec §11.5); ``options`` go to
        :func:`agent_inspect.history.subagent_tree` (``action_names=``, ``key_text=``)."""
        return subagent_tree(self, key, seq, **options)

    def predict(self, **overrides: Unpack[RecoveryOverrides]) -> Prediction:
        """The static prediction of a replay under this reconstruction's settings
        (:func:`agent_inspect.recovery.predict`; ``overrides`` by setting name, e.g. ``plan=``, ``agent=``)."""
        return predict(self, **overrides)

    @cached_property
    def lints(self) -> pd.DataFrame:
        """Format and identity hazards of the log (:func:`agent_inspect.recovery.lint`), read under this
        reconstruction's settings: without the refresh rows its runtime and ``kafka_pending`` find, and with the
        attempts its history shows."""
        refresh = None if self.recovery is None else refresh_positions(self.log, self.recovery.model)
        attempts = self.records["attempt"] if "attempt" in self.records else None
        return lint(self.log, refresh=refresh, attempts=attempts)

    def summary(self) -> dict[str, Any]:
        """Counts: records per status, divergences per kind, outcomes, cache events; the warnings, when any."""
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
            **({"warnings": list(self.warnings)} if self.warnings else {}),
        }

    def __repr__(self) -> str:
        s = self.summary()
        statuses = ", ".join(f"{k} {v:,}" for k, v in s["status"].items() if v)
        return (f"Reconstruction(rule={self.rule_label!r}, {plural(s['records'], 'record')}"
                + (f" ({statuses})" if statuses else "") + f", {plural(len(self.divergences), 'divergence')}"
                + (f", {plural(len(self.warnings), 'warning')}" if self.warnings else "") + ")")

    def _html_parts(self) -> Iterable[HtmlPart]:
        s = self.summary()
        counts = [span for i, (k, v) in enumerate(s["status"].items()) for span in (", " * bool(i), Term.of(k), f": {v:,}")]
        yield Text(Strong("Reconstruction"), " under rule ", Code(self.rule_label), f": {plural(s['records'], 'record')} (",
                   *counts, "); ", Term(plural(len(self.divergences), "divergence"), define("divergences")),
                   f", {plural(s['cache_events'], 'cache event')}.")
        cols = [c for c in ("business_key", "seq", "kind", "step", "explanation") if c in self.divergences.columns]
        table = self.divergences[cols]
        if "positions" in self.divergences.columns:   # a count, not a list of positions (they are in .divergences)
            table = table.assign(records=[len(p) if isinstance(p, (list, tuple)) else 0
                                          for p in self.divergences["positions"]])
        yield Table(table, caption="divergences")
        for warning in self.warnings:
            yield Text(Strong("Warning: "), warning)


def reconstruct(subject: LogLike | pd.DataFrame, *, recovery: Recovery | None = None, replay: bool = True,
                **overrides: Unpack[RecoveryOverrides]) -> Reconstruction:
    """Reconstruct what a restore does with ``subject``: an ``ActionStateLog`` (``log.select(mask)`` for a part,
    e.g. one partition: every step is partition-local, except the snapshot Kafka cross-key eviction, which spans
    whatever it is given), or a bare records frame with ``replay=False`` (the rebuild alone reads no values).

    The settings are ``recovery`` (a :class:`Recovery`) or its overrides by name, resolved once with
    :meth:`Recovery.resolve` (see :class:`Recovery`); the result carries them (:attr:`Reconstruction.recovery`).

    1. **Rebuild** (spec §6.5, §7.4, §8.4), as :func:`rebuild` does: ``markers`` select the window (None: the whole
       loaded log; ``[]``: a fresh start); a failed K2 restore is a "restore-failure" (every replayed task FAILs).
    2. **Replay** (``replay=True``): the replay plan runs on the recovery engine, as :func:`predict` runs it; each
       task's outcome lands on the cached record it looked up (or, when its own lookup removed that record, on the
       record the rebuild cached for its state key); a record no task looks up keeps no outcome.

    From 0.4 on (the runtime, default inferred), refresh rows (addendum §2) get the status ``refresh``, are left out
    of attempts, executions and durable calls, and are never a rule step nor new work, as
    :meth:`ReplayPlan.from_log` infers. Attempts and executions come from :func:`agent_inspect.history.build_history`.

    For example::

        result = ai.reconstruct(log, markers=ai.samples.markers("production"))
        result.records["status"].value_counts(), result.divergences
    """
    settings = Recovery.resolve(subject, recovery, **overrides)
    with gc_paused():  # millions of small acyclic objects
        return _reconstruct(subject, settings, replay)


def _reconstruct(log: Any, settings: Recovery, replay: bool) -> Reconstruction:
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
    causes = RemovalCauses(session.events)   # what removed each record, in words (the replay adds its lookups)
    outcomes = _replay(log, settings, session, causes, refresh) if replay and len(session.store) else {}
    idle = frozenset(e.pos for e in session.store.entries()
                     if e.pos is not None and (e.business_key, e.seq) in retained.finished)
    frame = _statuses(records, ann, in_window, session, outcomes, causes, refresh, idle)
    return Reconstruction(
        log=log, rule=rule_obj, markers=rebuild_start(markers),
        records=frame, divergences=_divergence_frame(session, log), evictions=_event_frame(session),
        session=session, history=history, runtime=runtime, recovery=settings,
        warnings=tuple(marker_warnings(markers, log)),
    )


def _history(records: pd.DataFrame, refresh: frozenset[int]) -> tuple[History, pd.DataFrame]:
    """The history of ``records`` and its per-record annotations (attempt, execution), read without refresh rows."""
    if not refresh:
        history = build_history(records)
        return history, history.records
    history = build_history(records.drop(index=sorted(refresh)))
    ann = history.records.reindex(records.index)
    ann["execution"] = ann["execution"].fillna(-1).astype("int64")
    return history, ann


def _replay(log: Any, settings: Recovery, session: RecoverySession, causes: RemovalCauses,
            refresh: frozenset[int]) -> dict[int, tuple[str, str | None, str]]:
    """The replay plan run on the recovery engine (``predict``'s run), each task's outcome on the cached record it
    looked up (or, when its lookups removed that record, on the record the rebuild cached for its state key)."""
    if not hasattr(log, "value"):
        raise RecoveryError("reconstruct's replay reads record values: pass an ActionStateLog (log.for_key(key) "
                            "for one key), or replay=False for the rebuild alone")
    cached = {e.state_key: e.pos for e in session.store.entries() if e.pos is not None}
    try:
        plan = settings.replay_plan(log, refresh=refresh)
    except RecoveryError:   # the window holds no input and nothing in flight: nothing replays
        return {}
    agent = cast("Agent", settings.agent) if settings.agent is not None else AsRecordedAgent.of(log)
    sim = simulate(plan, agent, session, log=log, call_matching=settings.call_matching, runtime=settings.model)
    outcomes: dict[int, tuple[str, str | None, str]] = {}
    for row, why in zip(sim.rows, causes.task_reasons(sim.rows)):
        pos = row["entry_pos"] if not pd.isna(row["entry_pos"]) else cached.get(row["state_key"])
        if pos is None and row["outcome"] == Outcome.FAIL.value:   # a failed restore: the key's identity may not match
            pos = min((e.pos for e in session.store.entries_at(row["business_key"], row["seq"]) if e.pos is not None),
                      default=None)
        if pos is not None and pos not in outcomes:
            outcomes[int(pos)] = (row["outcome"], why, row["reason"])
    return outcomes


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
        reason[i] = (f"the record did not decode: {records['error'].iat[i]}" if errors[i] else
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
    cols = ["event", "op", "step", "business_key", "seq", "removed", "positions", "reason", "divergence_id",
            "trigger_pos"]
    frame = pd.DataFrame([(e.index, e.op, e.step, e.business_key, e.seq, len(e.removed), e.positions, e.reason,
                           e.divergence_id, e.trigger_pos) for e in session.events], columns=cols)
    for c in ("seq", "divergence_id", "trigger_pos"):
        frame[c] = frame[c].astype("Int64")
    return frame


def _divergence_frame(session: RecoverySession, log: Any) -> pd.DataFrame:
    removed: dict[int, int] = {}
    for e in session.events:
        if e.divergence_id is not None:
            removed[e.divergence_id] = removed.get(e.divergence_id, 0) + len(e.removed)
    value = getattr(log, "value", None)
    diffs = {d.id: attribute_diff(value, d.positions) for d in session.divergences
             if d.kind in _INVALIDATING and value is not None}
    cols = ["id", "business_key", "seq", "kind", "step", "positions", "trigger_pos", "removed", "attribute_diff",
            "explanation"]
    frame = pd.DataFrame([(d.id, d.business_key, d.seq, d.kind, d.step, d.positions, d.trigger_pos,
                           removed.get(d.id, 0), diffs.get(d.id), d.explanation) for d in session.divergences],
                         columns=cols)
    frame["trigger_pos"] = frame["trigger_pos"].astype("Int64")
    return frame.set_index("id", drop=False).rename_axis(None)


def _attributes(value: Any, pos: int) -> Any:
    try:
        state = value(pos)
    except Exception:  # noqa: BLE001 - an undecodable record just has no diff
        return None
    event = getattr(state, "task_event", None)
    if event is None:
        return None
    attrs = getattr(event, "attrs", None)
    return attrs() if callable(attrs) else getattr(event, "attributes", None)


def attribute_diff(value: Any, positions: tuple[int, ...]) -> dict[str, tuple[Any, Any]] | None:
    """Flattened differences between the taskEvent attributes of the first and last conflicting roots."""
    if len(positions) < 2:
        return None
    a, b = _attributes(value, positions[0]), _attributes(value, positions[-1])
    if a is None or b is None:
        return None
    out: dict[str, tuple[Any, Any]] = {}
    _diff(a, b, "", out)
    return out


def _diff(a: Any, b: Any, path: str, out: dict[str, tuple[Any, Any]]) -> None:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for k in sorted(set(a) | set(b), key=str):
            _diff(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}" if path else str(k), out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, f"{path}[{i}]", out)
    elif a != b or type(a) is not type(b):
        out[path or "."] = (a, b)
