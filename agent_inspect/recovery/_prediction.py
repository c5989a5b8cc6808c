"""What ``predict`` returns: tasks, ledger and divergences of one predicted recovery, and how it reads."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from agent_inspect._glossary import plural
from agent_inspect._html import Code, Details, HtmlPart, HtmlRepr, Strong, Table, Term, Text
from agent_inspect.log import rule_label
from agent_inspect.store import CacheEvent, Divergence, RecoverySession

if TYPE_CHECKING:
    from agent_inspect.log import RuntimeInfo
    from agent_inspect.recovery._settings import Recovery


__all__ = ["Prediction", "removed_by", "user_reason", "RemovalCauses", "removal_reason",
           "lookup_words", "tasks_by_impact", "IMPACT_ORDER"]

IMPACT_ORDER = ("FAIL", "RERUN", "RESUME", "evicted", "NOT-DISPATCHED", "REUSE")
"""How much a task's decision costs the recovery, most first: the order of :meth:`Prediction.by_impact` (a lookup
that removed cached records ranks as an eviction, whatever it decided for its own task).
"""
#: cache ops that take records away from a later lookup ("supersede" is a rewrite of the same state key)
_REMOVING_OPS = frozenset({"evict", "invalidate", "remove", "cross-key", "delete"})


def removed_by(ops: Iterable[CacheEvent]) -> int:
    """How many cached records the cache events ``ops`` of one task removed (rewrites of its own key not counted)."""
    return sum(len(e.removed) for e in ops if e.op in _REMOVING_OPS)


def user_reason(outcome: str, rule_note: str | None, removed: int, gone: str | None = None) -> str | None:
    """The reason a reader sees: only where a decision removed or re-ran something (the rule's own words stay in
    ``rule_note``). A RERUN says its record is missing and, given ``gone``, what removed it.

    For example::

        ai.recovery.user_reason("REUSE", "5 cached records at (k, 1) > 1", removed=0)    # None: nothing to say
        ai.recovery.user_reason("RERUN", None, removed=0, gone="the rebuild")
    """
    note = rule_note or ""
    evicted = f"its lookup removed {plural(removed, 'cached record')}" if removed else ""
    if outcome == "REUSE":
        return f"reused, but {evicted} ({note})" if removed else None
    if outcome == "RESUME":
        base = "the cached record is incomplete: the body runs again with its recorded call results"
    elif outcome == "RERUN" and gone:
        base = f"no cached record for this task: {gone}"
    elif outcome == "RERUN" and not removed:
        trivial = not note or "miss" in note or note.startswith("no cached record")
        base = "no cached record for this task" + ("" if trivial else f" ({note})")
    else:
        return f"{note}; {evicted}" if removed else (note or None)
    return f"{base}; {evicted} ({note})" if removed else base


def lookup_words(action: object, key: object, seq: object) -> str:
    """A task's lookup named by what a reader sees of it: the one wording of every verb's reasons (a dispatch index
    or a record position would mean nothing outside its table).

    For example::

        ai.recovery.lookup_words("audit", "user-0019", 3)   # 'the lookup of audit (user-0019, seq 3)'
    """
    return f"the lookup of {action} ({key}, seq {seq})"


class RemovalCauses:
    """What removed each cached record, in words, for the reasons of later tasks: the rebuild (the step "rebuild"
    of ``events``), or the lookup of an earlier task (:meth:`removed`, in dispatch order).

    For example::

        events = ai.reconstruct(log, markers=markers).session.events   # the rebuild's and the replay's
        causes = ai.recovery.RemovalCauses(events)
        [causes.status_reason(e) for e in events[:2]]      # why each removed record has its status
    """

    def __init__(self, events: Iterable[CacheEvent] = ()) -> None:
        self._gone = {e.state_key: f"the rebuild removed it ({ev.reason})"
                      for ev in events if ev.step == "rebuild" and ev.op in _REMOVING_OPS for e in ev.removed}
        self._made_by: dict[int, str] = {}   # cache event index -> the lookup whose decision caused it

    def reason(self, outcome: str, rule_note: str | None, state_key: str, ops: Iterable[CacheEvent]) -> str | None:
        """:func:`user_reason` of a task whose lookups caused the cache events ``ops`` (call before
        :meth:`removed` of the same task)."""
        return user_reason(outcome, rule_note, removed_by(ops), self._gone.get(state_key))

    def task_reasons(self, rows: Iterable[Mapping[str, Any]]) -> list[str | None]:
        """:meth:`reason` of every task row (``predict``'s, in dispatch order), each row's lookups then
        :meth:`removed`: so a re-run task's reason names what removed its record."""
        out = []
        for row in rows:
            ops = row.get("cache_ops") or ()
            out.append(self.reason(str(row.get("outcome")), row.get("reason"), str(row.get("state_key")), ops))
            self.removed(ops, lookup_words(row.get("action"), row.get("business_key"), row.get("seq")))
        return out

    def removed(self, ops: Iterable[CacheEvent], lookup: str) -> None:
        """The cache events ``ops`` of the task ``lookup`` names ("the lookup of audit (user-0019, seq 3)") removed records."""
        for ev in ops:
            self._made_by[ev.index] = lookup
            if ev.op in _REMOVING_OPS:
                for e in ev.removed:
                    self._gone.setdefault(e.state_key, f"{lookup} evicted it")

    def status_reason(self, event: CacheEvent, kind: str | None = None) -> str:
        """Why a record ``event`` removed has its status (:func:`removal_reason` of that one record, naming what
        removed it). ``kind``: the kind of the event's divergence."""
        cause = self._made_by.get(event.index)
        if cause is None:
            at = f" (reading record {event.trigger_pos})" if event.trigger_pos is not None else ""
            cause = {"rebuild": f"the rebuild{at}", "prune": "a checkpoint's prune"}.get(event.step, "a replayed lookup")
        return removal_reason(event, kind, cause=cause)


#: why a cache event removed records, per divergence kind, in a reader's words
_REMOVAL_WHY = {
    "root-conflict": "two different inputs were recorded for this round",
    "count>1": "the lookup found more than one cached record for its round, which the original rule reads as "
               "a divergence",
    "miss-eviction": "a lookup found no cached record, so the rule treats the later rounds as stale",
    "identity-mismatch": "the replayed event is not the one the cached record was written for",
    "round-regression": "a record of this round was written after records of later rounds",
    "branch-change": "the records belong to another branch of this round",
    "cross-key": "a divergence of one key evicts every key's later rounds in this store",
}
_REMOVAL_WHAT = {"evict": "of {key}'s rounds after {seq}", "invalidate": "of {key} from round {seq} on",
                 "cross-key": "of every key's rounds after {seq}", "remove": "(the one the lookup found)",
                 "prune": "of {key}'s rounds up to {seq}", "delete": "deleted by a tombstone",
                 "supersede": "replaced by a later write of the same state key"}


def removal_reason(event: CacheEvent, kind: str | None = None, *, cause: str | None = None) -> str:
    """A cache event in a reader's words: how many cached records went, which, why (``kind``: its divergence's
    kind) and what that costs; the rule's own words stay in ``event.reason``. Given ``cause`` (what made the
    event: "the rebuild", :func:`lookup_words`), the words of one record it removed.

    For example::

        events = ai.reconstruct(log, markers=markers).session.events
        [ai.recovery.removal_reason(event) for event in events[:3]]
    """
    n = len(event.removed)
    what = _REMOVAL_WHAT.get(event.op, f"({event.op})").format(key=event.business_key, seq=event.seq)
    why = _REMOVAL_WHY.get(kind or "")
    costs = event.op in _REMOVING_OPS and event.op != "delete"
    if cause is not None:
        if n > 1:
            text = f"{cause} removed it and {plural(n - 1, 'other cached record')} {what}"
        elif what.startswith("of "):
            text = f"{cause} removed it, the one cached record {what}"
        else:   # "(the one the lookup found)", "deleted by a tombstone"
            text = f"{cause} removed it " + (what if what.startswith("(") else f"({what})")
        text += f": {why}" if why else ""
        return text + ("; its task runs again if the replay reaches it" if costs else "")
    text = f"{plural(n, 'cached record')} {what} removed" + (f": {why}" if why else "")
    if costs:
        text += "; their tasks run again if the replay reaches them" if n != 1 else \
            "; its task runs again if the replay reaches it"
    return text


@dataclass(frozen=True)
class Prediction(HtmlRepr):
    """What a recovery would do, per task, under one rule.

    ``tasks``: one row per action task in dispatch order (``outcome`` REUSE / RESUME / RERUN / FAIL), then
    NOT-DISPATCHED rows for cached records of replayed rounds that no task looked up; ``reason`` is for readers
    (empty on a REUSE that removed nothing), ``rule_note`` the rule's own words, ``removed`` the cached records the
    task's lookups removed, and ``calls_*`` the executor's counters of the same names.
    ``events`` / ``divergences``: every cache removal (rebuild and replay) and why.
    ``ledger``: one row per (key, kind, name) with a ``count``, a ``label`` (the name a reader sees) and the
    model-routing ``router`` (``route:<r>``, ``chat:<r>:<candidate>``, ``judge:<r>`` → ``r``); kind "body" (a body
    that runs again), "call" (a durable call executed for real), "subagent" (a sub-agent call sent again as a new
    call, no call that leaves the job), "replayed" (served from the journal), "reconciler", "resubmit" (main: a
    PENDING caller slot sent its call again with the same ids, addendum §1.1).
    ``crashed``: the replay hit a FAIL (the job would restart in a loop) and stopped there.
    ``warnings``: what the replay dropped or could not match; ``notes``: what the plan could not tell from the log
    and how it read it anyway (:attr:`ReplayPlan.notes`).

    For example::

        p = ai.predict(log, markers=markers)
        p.tasks["outcome"].value_counts(), p.ledger_totals()
        p.by_impact().head(), p.evictions
    """

    rule: str
    tasks: pd.DataFrame
    events: tuple[CacheEvent, ...]
    divergences: tuple[Divergence, ...]
    ledger: pd.DataFrame
    crashed: bool = False
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    session: RecoverySession | None = field(default=None, repr=False, compare=False)
    #: which upstream runtime the log was read as, and why (:class:`agent_inspect.log.RuntimeInfo`)
    runtime: RuntimeInfo | None = field(default=None, repr=False, compare=False)
    #: per sub-agent call (``<sessionId>#<callId>``): the ids of the result events its caller got
    #: (a reused child's stored ones, or fresh ones of a rerun), or "journal" (a terminal slot replayed)
    subagent_results: Mapping[str, tuple[str, ...] | str] = field(default_factory=dict, compare=False)
    #: the resolved settings the prediction ran under (rule, markers, runtime, plan, agent, …)
    recovery: Recovery | None = field(default=None, repr=False, compare=False)

    @property
    def rule_label(self) -> str:
        """The rule's name, marked as a what-if when it is not the one the runtime ships (:func:`~agent_inspect.log.rule_label`)."""
        return self.recovery.rule_label if self.recovery is not None else rule_label(self.rule, self.runtime)

    def outcomes(self, *, labels: Mapping[str, str] | None = None) -> list[str]:
        """Per-task outcomes in the spec's notation, e.g. ``["k:A.IA=REUSE", "k:A.WA#w1=REUSE"]``."""
        out = []
        for row in self.tasks.itertuples(index=False):
            eid = (labels or {}).get(row.event_id) if row.event_id else None
            out.append(f"{row.key}:{row.input}.{row.action}" + (f"#{eid}" if eid else "") + f"={row.outcome}")
        return out

    @property
    def evictions(self) -> pd.DataFrame:
        """Every cache removal, one row each: op, step (rebuild / lookup), key, seq, removed count and
        log positions (replay writes have none), reason, divergence id."""
        return pd.DataFrame(
            [{"op": e.op, "step": e.step, "business_key": e.business_key, "seq": e.seq, "removed": len(e.removed),
              "positions": e.positions, "reason": e.reason, "divergence_id": e.divergence_id} for e in self.events],
            columns=["op", "step", "business_key", "seq", "removed", "positions", "reason", "divergence_id"])

    def by_impact(self) -> pd.DataFrame:
        """``tasks`` with re-runs and evictions first (:data:`IMPACT_ORDER`), dispatch order within each group;
        the index keeps each task's dispatch position."""
        return tasks_by_impact(self.tasks)

    def reruns(self) -> int:
        """Number of action bodies that would run again (RESUME + RERUN)."""
        return int(self.tasks["body_ran"].sum()) if len(self.tasks) else 0

    def calls_executed(self) -> Counter[str]:
        """Durable calls a recovery would execute again, by function id (all keys); sub-agent calls (ledger kind
        "subagent") are not among them."""
        rows = self.ledger[self.ledger["kind"] == "call"]
        return Counter({str(n): int(c) for n, c in rows.groupby("name", observed=True)["count"].sum().items()})

    def ledger_totals(self) -> pd.DataFrame:
        """The ledger summed over keys: one row per (kind, name), with its ``label`` (the name a reader sees: a
        sub-agent call's is its sub-agent and caller) and ``router``."""
        if self.ledger.empty:
            return self.ledger.drop(columns=["key"])
        labels = {"label": ("label", "first")} if "label" in self.ledger else {}
        return self.ledger.groupby(["kind", "name"], as_index=False, observed=True, dropna=False).agg(
            **labels, router=("router", "first"), count=("count", "sum"))

    def by_router(self) -> pd.DataFrame:
        """Model-routing calls grouped under their router: one row per (router, kind, name), summed over keys."""
        rows = self.ledger[self.ledger["router"].notna()] if "router" in self.ledger else self.ledger.iloc[:0]
        if rows.empty:
            return pd.DataFrame(columns=["router", "kind", "name", "count"])
        return rows.groupby(["router", "kind", "name"], as_index=False, observed=True, sort=True)["count"].sum()

    def _outcome_counts(self) -> dict[str, int]:
        return {str(k): int(v) for k, v in self.tasks["outcome"].value_counts().items()} if len(self.tasks) else {}

    def __repr__(self) -> str:
        counts = ", ".join(f"{k} {v:,}" for k, v in self._outcome_counts().items())
        return (f"Prediction(rule={self.rule_label!r}, {plural(len(self.tasks), 'task')}"
                + (f" ({counts})" if counts else "") + f", {plural(len(self.divergences), 'divergence')}"
                + (", crashed" if self.crashed else "") + ")")

    def _html_parts(self) -> Iterable[HtmlPart]:
        counts = self._outcome_counts()
        listed = [span for i, (k, v) in enumerate(counts.items()) for span in (", " * bool(i), Term.of(k), f" {v:,}")]
        yield Text(Strong("Prediction"), " under rule ", Code(self.rule_label), ": ", *listed,
                   *((" — ", Strong("the job crashes (restart loop)")) if self.crashed else ()))
        cols = ["key", "seq", "input", "action", "outcome", "reason"]
        yield Table(self.by_impact()[cols], max_rows=50, caption="tasks, re-runs and evictions first "
                                                                "(first column: dispatch order)")
        yield Table(self.ledger_totals(), caption="ledger")
        for warning in self.warnings:
            yield Text(Strong("Warning: "), warning)
        if self.notes:
            yield Details(f"what the log cannot tell ({plural(len(self.notes), 'note')})",
                          "\n\n".join(self.notes))


def tasks_by_impact(tasks: pd.DataFrame, limit: int | None = None) -> pd.DataFrame:
    """A tasks frame (``Prediction.tasks``, or a slice of it) ordered by :data:`IMPACT_ORDER`, stable; only the
    first ``limit`` rows when given (a view showing 50 rows of a million does not reorder them all).

    For example::

        p = ai.predict(log, markers=markers)
        ai.recovery.tasks_by_impact(p.tasks, limit=5)   # re-runs and evictions first
    """
    if tasks.empty or "outcome" not in tasks.columns:
        return tasks if limit is None else tasks.head(limit)
    codes = pd.Categorical(tasks["outcome"].astype(str), categories=IMPACT_ORDER).codes.astype(np.int64)
    codes[codes < 0] = len(IMPACT_ORDER) - 1
    if "removed" in tasks.columns:
        evicting = (codes == IMPACT_ORDER.index("REUSE")) & (tasks["removed"].fillna(0).to_numpy() > 0)
        codes[evicting] = IMPACT_ORDER.index("evicted")
    order = codes.argsort(kind="stable")
    return tasks.iloc[order if limit is None else order[:limit]]
