""""Why did this run?": the chain of store decisions behind one task's reuse, resume or rerun.

The chain reads from the effect back to its cause: the task's outcome, the lookup, the record the
rebuild did or did not load, and last the decisive step — the eviction, invalidation, removal,
tombstone or prune that took the record out of the cache, the rebuild window that never held it,
or a miss (no record of that state key was ever written; the nearest record's differing state-key
fields are named). Everything comes from a prediction's recorded cache events and the log's rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Unpack

import numpy as np
import pandas as pd

from agent_inspect._controls import show_controls
from agent_inspect._glossary import count_words, define, plural
from agent_inspect._html import Bullets, Code, HtmlPart, HtmlRepr, Strong, Term, Text
from agent_inspect._types import LogLike, PredictionLike, ReconstructionLike, RecoveryOverrides
from agent_inspect.diffing._find import find_task
from agent_inspect.diffing._selectors import SelectorError, read_selected
from agent_inspect.diffing._task_index import task_index
from agent_inspect.log import RuleMark, RuntimeInfo, rule_label, rule_mark
from agent_inspect.store import Outcome

if TYPE_CHECKING:
    from agent_inspect._types import RuleLike
    from agent_inspect.log import ActionStateLog
    from agent_inspect.recovery import Recovery

__all__ = ["Explanation", "ExplainStep", "explain", "CAUSE_KINDS"]

CAUSE_KINDS = ("evict", "invalidate", "remove", "tombstone", "prune", "window", "miss", "undecodable", "fail")
"""Kinds of the decisive (last) step of a RERUN's chain."""
_OP_KIND = {"evict": "evict", "cross-key": "evict", "invalidate": "invalidate", "remove": "remove",
            "delete": "tombstone", "prune": "prune"}
EMPTY_DIGEST = '""'
_STATE_KEY_FIELDS = (("seq", "seq (a different round)"), ("event_uuid", "event UUID (the task event's attributes)"),
                     ("action_uuid", "action UUID (the action's identity or code)"), ("key_format", "key format"),
                     ("business_key", "business key"))


@dataclass(frozen=True)
class ExplainStep:
    """One step of the chain: ``kind`` (outcome, lookup, record, rebuild, calls, dispatch — a task no lookup
    reached —, or a cause of :data:`CAUSE_KINDS`), a one-line ``title``, a ``detail`` sentence and the log ``positions`` it links to.
    ``rule_step`` is the rule hook that acted (rebuild / lookup / prune), ``divergence`` the kind of
    divergence recorded with it, ``event`` the index of the cache event, ``bound`` the seq bound of an
    eviction (seq > bound) or invalidation (seq >= bound).

    For example::

        e = ai.explain(log, "user-0001", 1, "chat", markers=markers)
        step = e.steps[-1]                             # the steps run from the effect back to the cause
        step.kind, step.title, step.positions
    """

    kind: str
    title: str
    detail: str = ""
    positions: tuple[int, ...] = ()
    rule_step: str | None = None
    divergence: str | None = None
    event: int | None = None
    business_key: str | None = None
    bound: int | None = None
    trigger: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class Explanation(HtmlRepr):
    """Why one task was reused, resumed or rerun: ``steps`` from the effect back to the cause
    (``cause`` is the last), what the cause cost downstream (``cost``: action bodies and durable calls
    that ran again because of it; empty for a NOT-DISPATCHED task, which nothing runs or reuses) and what other rules would have done (``alternatives``).

    For example::

        e = ai.explain(log, "user-0001", 1, "chat", markers=markers, also=["fixed"])
        e.outcome, e.cause.title, e.cost, e.alternatives
        print(e.story())
    """

    key: str
    seq: int
    action: str
    outcome: str
    reason: str
    state_key: str
    rule: str
    steps: tuple[ExplainStep, ...]
    cost: dict[str, int] = field(default_factory=dict)
    alternatives: dict[str, str] = field(default_factory=dict)
    task: int | None = None
    #: the rule the log's runtime ships (None: unknown, e.g. a prediction explained as given)
    shipped_rule: str | None = None
    #: the runtime the chain ran as (names the what-if in :attr:`rule_label`; None: unknown)
    runtime: RuntimeInfo | None = field(default=None, repr=False, compare=False)

    @property
    def what_if(self) -> bool:
        """True when ``rule`` is not the one the runtime ships: the chain is hypothetical."""
        return self._mark.what_if

    @property
    def rule_label(self) -> str:
        """``rule``, marked as a what-if when it is one."""
        return self._mark.label

    @property
    def _mark(self) -> RuleMark:
        return rule_mark(self.rule, self.runtime if self.shipped_rule is not None else None)

    @property
    def cause(self) -> ExplainStep:
        """The decisive step (the last of the chain)."""
        return self.steps[-1]

    def story(self) -> str:
        """The chain as plain text, one step a line."""
        # a what-if says so first: the chain below is not what the job does
        lines = [f"rule {self.rule_label}: not what the job does"] if self.what_if else []
        for n, s in enumerate(self.steps):
            at = f" [records {', '.join(map(str, s.positions))}]" if s.positions else ""
            lines.append(("" if n == 0 else "  ← ") + s.title + at + (f": {s.detail}" if s.detail else ""))
        return "\n".join(lines + self._after())

    def _after(self) -> list[str]:
        """The lines after the chain: the cost, then each ``also=`` rule's outcome (text and HTML alike)."""
        lines = [f"cost of this decision downstream: {plural(self.cost.get('bodies', 0), 'action body', 'action bodies')}, "
                 f"{plural(self.cost.get('calls', 0), 'durable call')} run again"] if self.cost else []
        runtime = self.runtime if self.shipped_rule is not None else None
        return lines + [f"under rule {rule_label(rule, runtime)}: {outcome}" for rule, outcome in self.alternatives.items()]

    def __str__(self) -> str:
        # what print() writes to a terminal: the key's and the action's control characters shown, never obeyed
        return show_controls(self.story())

    def __repr__(self) -> str:
        # one line: the chain (kilobytes of steps) is in str() and the HTML
        return show_controls(f"Explanation({self.action} ({self.key}, seq {self.seq}) → {self.outcome} under rule "
                             f"{self.rule_label!r}, cause: {self.cause.kind})")

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return {"key": self.key, "seq": self.seq, "action": self.action, "outcome": self.outcome,
                "reason": self.reason, "state_key": self.state_key, "rule": self.rule, "what_if": self.what_if,
                "steps": [s.to_dict() for s in self.steps], "cause": self.cause.kind, "cost": dict(self.cost),
                "alternatives": dict(self.alternatives)}

    def _html_parts(self) -> Iterable[HtmlPart]:
        yield Text(Strong("Why"), f" {self.action} ({self.key}, seq {self.seq}) → ", Term.of(self.outcome), " (",
                   Term.of("rule"), " ", Code(self.rule_label), ")")
        yield Bullets([s.title + (f" — {s.detail}" if s.detail else "")
                       + (f" (records {', '.join(map(str, s.positions))})" if s.positions else "") for s in self.steps])
        for line in self._after():      # the cost and the also= answers: the HTML had neither
            yield Text(line)


# -- resolving what to explain -------------------------------------------------------------------------


def _prediction_of(obj: Any, recovery: Recovery | None, overrides: RecoveryOverrides,
                   log: Any, timeout: float | None = None) -> tuple[Any, Any, Any, Recovery | None]:
    """(prediction, log, markers, the resolved settings: None for a prediction given as it is) for ``obj``."""
    from agent_inspect.recovery import Recovery, predict

    given: dict[str, Any] = {k: v for k, v in overrides.items() if v is not None}
    if isinstance(obj, str):
        # the selector's settings as a diff side reads them (its markers file too), keywords winning
        sel, own, obj = read_selected(obj, timeout=timeout)
        if sel.key is not None:
            obj = obj.for_key(sel.key)
        for name, value in own.items():
            if name in ("rule", "markers", "runtime"):
                given.setdefault(name, value)
    if isinstance(obj, PredictionLike):
        if recovery is not None or given.get("rule") is not None:
            raise SelectorError("a prediction is already under one rule; explain its log to choose another rule")
        return obj, log, given.get("markers"), None
    if isinstance(obj, ReconstructionLike):
        log = obj.log
        given.setdefault("rule", obj.rule)
        given.setdefault("markers", obj.markers)
        given.setdefault("runtime", getattr(obj, "runtime", None))
    elif isinstance(obj, LogLike):
        log = obj
    else:
        raise SelectorError(f"cannot explain a {type(obj).__name__}; pass a log, a reconstruction, a prediction "
                            "(with log=) or a source")
    settings = Recovery.resolve(log, recovery, **given)
    return predict(log, recovery=settings), log, settings.markers, settings


def explain(subject: str | LogLike | ReconstructionLike | PredictionLike, key: object = None, seq: int | None = None,
            action: str | None = None, *,
            recovery: Recovery | None = None, task: int | None = None, event: str | None = None,
            occurrence: int = 0, log: ActionStateLog | None = None, also: Sequence[RuleLike] = (),
            timeout: float | None = None, **overrides: Unpack[RecoveryOverrides]) -> Explanation:
    """Why task (``key``, ``seq``, ``action``) was reused, resumed or rerun, as a chain of store decisions (or,
    for a task ``predict`` lists as NOT-DISPATCHED, why no lookup reached it).

    ``subject`` is a log or source (predicted under ``recovery`` / the settings given as keywords, the
    same as every verb takes: by default the rule the log's runtime ships, with the whole loaded log as
    the rebuild window), a reconstruction (its rule and markers) or a prediction (pass ``log=`` and
    ``markers=`` it was made with, so the chain can name the records and the window). ``task`` picks a
    row of ``prediction.tasks`` directly; ``event`` narrows by event id, type or the replay input's
    label; ``occurrence`` picks among several matches. ``also`` names other rules to report the same
    task's outcome under ("what would the fixed rule have done here?"), each labelled a what-if when
    it is one. ``action`` is a name or the action UUID the log and a diff show. ``timeout``: seconds a source
    string's Kafka broker, Fluss cluster or ``@markers=`` checkpoint storage has to answer (as in ``ai.diff``).

    For example::

        print(ai.explain(log, "user-0001", 1, "chat", markers=markers, also=["fixed"]))
    """
    pred, log, markers, settings = _prediction_of(subject, recovery, overrides, log, timeout)
    tasks = pred.tasks
    i = find_task(tasks, key, seq, action, event, occurrence, log, task)
    row = tasks.iloc[i]
    steps = _chain(pred, tasks, i, log, markers)
    ran = settings if settings is not None else getattr(pred, "recovery", None)   # a prediction knows its settings
    alternatives: dict[str, str] = {}
    if also:
        if settings is None:
            raise SelectorError("also= needs a log or a reconstruction to predict under other rules")
        from agent_inspect.recovery import predict

        for other in also:
            alt_settings = settings.replace(log, rule=other)
            alt = predict(log, recovery=alt_settings)
            alternatives[alt_settings.rule.name] = _same_task_outcome(alt.tasks, tasks, i)
    return Explanation(key=str(row["key"]), seq=int(row["seq"]), action=str(row["action"]),
                       outcome=str(row["outcome"]), reason=_reason(row), state_key=str(row["state_key"]),
                       # the rule's name as every label has it (a given store flavour included: original:kafka-k1)
                       rule=str(pred.rule) if ran is None else rule_label(ran.rule, None), shipped_rule=None if ran is None else ran.runtime.default_rule,
                       runtime=None if ran is None else ran.runtime,
                       steps=tuple(steps), cost=_cost(tasks, i, steps[-1], pred.events),
                       alternatives=alternatives, task=i)


def _same_task_outcome(other: pd.DataFrame, tasks: pd.DataFrame, i: int) -> str:
    row = tasks.iloc[i]
    same = ((other["state_key"] == row["state_key"]) & (other["outcome"] != Outcome.NOT_DISPATCHED)).to_numpy(dtype=bool)
    n = int(((tasks["state_key"] == row["state_key"]).to_numpy(dtype=bool)[:i]).sum())
    hits = np.flatnonzero(same)
    if len(hits) <= n:
        return "not dispatched"
    return str(other.iloc[int(hits[n])]["outcome"])


# -- the chain --------------------------------------------------------------------------------------------


def _reason(row: pd.Series) -> str:
    """The task's reason for readers, or the rule's own words where there is none (a REUSE that removed nothing)."""
    for col in ("reason", "rule_note"):
        value = row.get(col)
        if isinstance(value, str) and value:
            return value
    return ""


def _label(tasks: pd.DataFrame, j: int) -> str:
    """A task in words: its action, round and key, and the input it ran on."""
    r = tasks.iloc[j]
    text = f"{r['action']} at round {r['seq']} of {r['key']}"
    given = r.get("input")
    return text + (f" (input “{given}”)" if isinstance(given, str) and given and given != r["key"] else "")


def _chain(pred: Any, tasks: pd.DataFrame, i: int, log: Any, markers: Any) -> list[ExplainStep]:
    row = tasks.iloc[i]
    outcome, sk = str(row["outcome"]), row["state_key"]
    steps = [ExplainStep("outcome", f"{_label(tasks, i)}: {outcome}", _reason(row))]
    entry_pos = None if pd.isna(row["entry_pos"]) else int(row["entry_pos"])
    if outcome == Outcome.NOT_DISPATCHED:
        held = _records_of(log, sk) if log is not None else [entry_pos] if entry_pos is not None else []
        steps.append(ExplainStep("dispatch", "no task of this replay looked its cached record up",
                                 "so no store decision applies: nothing ran, nothing was reused", positions=tuple(held)))
        return steps
    if outcome == Outcome.FAIL:
        fail = next((d for d in reversed(pred.divergences) if d.kind in ("restore-failure", "parser-crash")), None)
        steps.append(ExplainStep("fail", "the lookup fails upstream (the job restarts)", _reason(row),
                                 positions=tuple(fail.positions) if fail else (),
                                 divergence=fail.kind if fail else None))
        return steps
    if outcome in (Outcome.REUSE, Outcome.RESUME):
        found = f"record {entry_pos}" if entry_pos is not None else "a record written earlier in this replay"
        state = "completed" if outcome == Outcome.REUSE else "incomplete"
        steps.append(ExplainStep("lookup", f"lookup hit: {found} ({state})", f"state key {sk}",
                                 positions=(entry_pos,) if entry_pos is not None else ()))
        if entry_pos is not None:
            steps.append(ExplainStep("rebuild", f"the rebuild loaded record {entry_pos}",
                                     "it lies in the rebuild window and nothing removed it before this lookup",
                                     positions=(entry_pos,), rule_step="rebuild"))
        if outcome == Outcome.RESUME:
            steps.append(_calls_step(row, log, entry_pos))
        return steps
    steps.append(ExplainStep("lookup", "lookup missed: the state key is not cached", f"state key {sk}",
                             rule_step="lookup"))
    removal = task_index(tasks, pred.events).last_removal(pred.events, i, sk)
    records = _records_of(log, sk)
    if removal is not None:
        gone = next(e for e in removal.removed if e.state_key == sk)
        if gone.pos is not None:
            steps.append(ExplainStep("rebuild", f"the rebuild loaded record {gone.pos}",
                                     "last write of this state key in the rebuild window", positions=(gone.pos,),
                                     rule_step="rebuild"))
        else:
            steps.append(ExplainStep("record", "an earlier task of this replay wrote the state key",
                                     "a replay write (no log position)"))
        steps.append(_removal_step(removal, pred.divergences, tasks, pred.events))
        return steps
    if log is None:
        steps.append(ExplainStep("miss", "no record of this state key was cached",
                                 "pass log= to see whether one was written and where"))
        return steps
    if not len(records):
        steps.append(_miss_step(log, row))
        return steps
    if _fresh_start(markers):
        steps.append(ExplainStep("window", "a fresh start: no checkpoint was restored, so the cache started empty",
                                 f"the rebuild loaded nothing; {count_words(len(records), 'record')} "
                                 f"{', '.join(map(str, records))} of this state key came from an earlier run "
                                 "(spec §6.5 step 1: no markers, no rebuild)", positions=tuple(records),
                                 rule_step="rebuild"))
        return steps
    window = _window(log, markers)
    inside = [p for p in records if window[log.records.index.get_loc(p)]]
    if not inside:
        steps.append(ExplainStep("window", f"{count_words(len(records), 'record')} {', '.join(map(str, records))} "
                                 f"{'lies' if len(records) == 1 else 'lie'} before the recovery "
                                 "markers", "the rebuild did not load them (spec §6.5, §8.4: records before the "
                                 "marker are never reloaded)", positions=tuple(records), rule_step="rebuild"))
        return steps
    recs = log.records.loc[inside]
    last = inside[-1]
    if "tombstone" in recs and bool(recs["tombstone"].fillna(False).iloc[-1]):
        steps.append(ExplainStep("tombstone", f"record {last} is a tombstone of this state key",
                                 "the rebuild deleted the key (spec §6.5 step 4, §6.6)", positions=(last,),
                                 rule_step="rebuild"))
        return steps
    if "error" in recs and recs["error"].notna().all():
        steps.append(ExplainStep("undecodable", f"{count_words(len(inside), 'record')} {', '.join(map(str, inside))} did not decode",
                                 "the rebuild skipped them", positions=tuple(inside), rule_step="rebuild"))
        return steps
    steps.append(ExplainStep("miss", "the window's record of this state key was not cached at this lookup",
                             "no recorded removal explains it", positions=tuple(inside)))
    return steps


def _removal_step(ev: Any, divergences: Sequence[Any], tasks: pd.DataFrame, events: Sequence[Any]) -> ExplainStep:
    kind = _OP_KIND.get(ev.op, "remove")
    if kind == "remove" and ev.seq is not None and all(e.seq > ev.seq for e in ev.removed):
        kind = "evict"      # a flavour that evicts seq > s entry by entry (snapshot Fluss, spec §8.2)
    div = divergences[ev.divergence_id] if ev.divergence_id is not None and ev.divergence_id < len(divergences) \
        else None
    rounds = {"evict": "rounds after", "invalidate": "rounds from", "prune": "rounds up to"}.get(kind, "")
    scope = "every key's" if ev.op == "cross-key" else f"{ev.business_key}'s"
    verb = {"evict": "evicted", "invalidate": "invalidated", "prune": "pruned"}.get(kind, "")
    title = (f"the {ev.step} {verb} {scope} {rounds} {ev.seq}" if rounds
             else f"the {ev.step} removed the state key ({ev.op})")
    if div is not None:
        meaning = define(div.kind)
        title += f" ({div.kind}" + (f": {meaning})" if meaning else ")")
    from agent_inspect.recovery import lookup_words

    trigger = made_by = None
    j = task_index(tasks, events).task_of_event.get(ev.index)
    if j is not None:
        trigger, by = _label(tasks, j), tasks.iloc[j]
        made_by = lookup_words(by["action"], by["business_key"], by["seq"])
    detail = ev.reason + (f"; made by {made_by}" if made_by else "")
    if ev.step == "rebuild" and ev.trigger_pos is not None:
        detail += f"; while the rebuild applied record {ev.trigger_pos}"
    positions = tuple(dict.fromkeys([*(div.positions if div is not None else ()), *ev.positions]))
    return ExplainStep(kind, title, detail, positions=positions, rule_step=ev.step,
                       divergence=div.kind if div is not None else None, event=ev.index,
                       business_key=ev.business_key, bound=ev.seq, trigger=trigger)


def _records_of(log: Any, sk: Any) -> list[int]:
    if log is None or sk is None:
        return []
    col = log.records["state_key"]
    return [int(p) for p in log.records.index[(col == sk).fillna(False).to_numpy(dtype=bool)]]


def _fresh_start(markers: Any) -> bool:
    """Markers that restore no checkpoint (``[]``, ``{}``): None is the whole log, not a fresh start."""
    from agent_inspect.recovery import rebuild_start

    return rebuild_start(markers) == {}


def _window(log: Any, markers: Any) -> np.ndarray:
    from agent_inspect.recovery import whole_log_markers, window_mask

    source = getattr(log, "source", None)
    return window_mask(log.records, whole_log_markers(log) if markers is None else markers,
                       start_offsets=getattr(source, "start_offsets", None), source=source)


def _miss_step(log: Any, row: pd.Series) -> ExplainStep:
    """No record of the state key exists: name the nearest record and the state-key fields that differ."""
    r = log.records
    same_key = (r["business_key"].astype(str) == str(row["business_key"])).to_numpy(dtype=bool)
    cand = r[same_key & r["state_key"].notna().to_numpy(dtype=bool)]
    want = {"seq": int(row["seq"]), "event_uuid": row["fingerprint"], "business_key": row["business_key"]}
    if cand.empty:
        return ExplainStep("miss", "no record of this state key was ever written",
                           f"business key {row['business_key']} has no record in the log")
    score = ((cand["seq"] == want["seq"]).fillna(False).astype(int) * 4
             + (cand["event_uuid"] == want["event_uuid"]).fillna(False).astype(int) * 2
             + (cand["task_event_type"] == row["event_type"]).fillna(False).astype(int))
    best = cand.loc[score[score == score.max()].index]
    pos = int(best.index[-1])
    near = best.iloc[-1]
    from agent_inspect.codec import parse_state_key

    try:
        parsed = parse_state_key(str(row["state_key"]))
        want.update(action_uuid=parsed.action_uuid, key_format=parsed.format)
    except Exception:  # noqa: BLE001 - an unparsable task key simply names fewer fields
        pass
    differ = [label for name, label in _STATE_KEY_FIELDS
              if name in want and name in near and str(near[name]) != str(want[name])]
    return ExplainStep("miss", "no record of this state key was ever written",
                       f"the nearest record {pos} differs in: {', '.join(differ) or 'nothing named (same fields)'}",
                       positions=(pos,))


def _calls_step(row: pd.Series, log: Any, entry_pos: int | None) -> ExplainStep:
    value = log.value(entry_pos) if log is not None and entry_pos is not None else None
    slots = list(getattr(value, "call_results", ()) or ())
    replayed = int(row["calls_replayed"]) if not pd.isna(row["calls_replayed"]) else 0
    executed = int(row["calls_executed"]) if not pd.isna(row["calls_executed"]) else 0
    described = [f"slot {n} {s.function_id}/{s.args_digest or EMPTY_DIGEST} {s.status or 'no status'}"
                 for n, s in enumerate(slots)]
    if replayed >= len(slots):
        why = "past the end of the journal: the next calls executed and were recorded"
    else:
        nxt = slots[replayed]
        why = (f"slot {replayed} is PENDING: a completion-only call runs again, a reconcilable one runs its "
               "reconciler" if nxt.status == "PENDING" else
               f"slot {replayed} did not match the body's call (function id or args digest, by position): the "
               "journal is cut there and the call runs again (spec §9.4)")
    return ExplainStep("calls", f"durable calls: {replayed} served from the journal, {executed} executed",
                       "; ".join(described) + ("; " if described else "") + why,
                       positions=(entry_pos,) if entry_pos is not None else ())


def _cost(tasks: pd.DataFrame, i: int, cause: ExplainStep, events: Sequence[Any]) -> dict[str, int]:
    """Bodies and durable calls that ran again because of the cause: for a cache event, every task whose
    record it removed; otherwise the task itself. None (``{}``) for a task that is not dispatched: nothing runs
    and nothing is reused, so there is no decision to cost (its chain says why it is not sent again)."""
    if tasks.iloc[i]["outcome"] == Outcome.NOT_DISPATCHED.value:
        return {}
    if cause.event is None:
        row = tasks.iloc[i]
        ran = bool(row["body_ran"])
        return {"tasks": 1, "bodies": int(ran),
                "calls": int(row["calls_executed"]) if ran and not pd.isna(row["calls_executed"]) else 0}
    return task_index(tasks, events).cost({e.state_key for e in events[cause.event].removed})
