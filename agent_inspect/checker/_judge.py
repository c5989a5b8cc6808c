"""Judging one replay: the rule under test guarded, a history (or case) as a subject, stale and avoidable outcomes."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_inspect._errors import RecoveryError
from agent_inspect.agents import DeclaredCalls
from agent_inspect.checker._generate import (
    History,
    RuleCheckError,
)
from agent_inspect.recovery import NOT_DISPATCHED, iter_entries, rebuild_records, simulate, window_mask
from agent_inspect.rules import GuardedRule, resolve_rule
from agent_inspect.store import DivergenceRule, RecoverySession

if TYPE_CHECKING:
    from agent_inspect._types import RuleLike

__all__ = ["resolve_check_rule", "FAILURE_KINDS"]

FAILURE_KINDS = ("stale-reuse", "avoidable-rerun", "error")
"""Failure kinds a check reports (each gets one minimized counterexample)."""

_FRESH = "00000000-0000-4000-8000-"   # event ids the judged recovery makes (a body that ran again)

_FRAME_COLUMNS = ["history", "seed", "keys", "rounds", "attempts", "records", "tasks", "reused", "resumed",
                  "rerun", "stale_reuses", "stale_beyond_reference", "tainted_reuses", "avoidable_reruns", "crashed",
                  "error", "case"]


# -- rules -------------------------------------------------------------------------------------------


def resolve_check_rule(rule: RuleLike) -> DivergenceRule:
    """:func:`agent_inspect.rules.resolve_rule`, with its errors as :class:`RuleCheckError`.

    For example::

        ai.checker.resolve_check_rule("fixed")         # a bad name raises RuleCheckError, not a plain error
    """
    try:
        return resolve_rule(rule)
    except RecoveryError as exc:
        raise RuleCheckError(str(exc)) from None


class _CachedAgent:
    """The agent with its action UUIDs memoised: checking runs thousands of lookups per second."""

    def __init__(self, agent: Any) -> None:
        self._agent = agent
        self._uuids: dict[tuple[str, str, int], str] = {}
        self.listeners = agent.listeners
        self.run_action = agent.run_action
        self.begin_event = getattr(agent, "begin_event", lambda _event: None)
        #: the wrapped agent's (agents.DeclaredCalls): predict makes declared calls, never others
        self.calls_declared = isinstance(agent, DeclaredCalls) and agent.calls_declared

    @property
    def actions(self) -> Any:
        return self._agent.actions

    def action_uuid(self, action: str, key_format: str, *, attempt: int = 0) -> str:
        key = (action, key_format, attempt)
        found = self._uuids.get(key)
        if found is None:
            found = self._uuids[key] = self._agent.action_uuid(action, key_format, attempt=attempt)
        return found


# -- what is judged ----------------------------------------------------------------------------------


@dataclass
class _Subject:
    """A log, its rebuild window, the recovery plan and agent, and the truth per log position.

    ``describe(pos)`` names a record for a reader, ``compact(pos)`` in the case notation, and
    ``why(pos)`` says why reusing an off-branch record is wrong.
    """

    log: Any
    markers: Sequence[Mapping[int, int]]
    plan: Any
    agent: Any
    branch_ok: Sequence[bool]
    tainted: Sequence[bool]
    describe: Callable[[int], str]
    compact: Callable[[int], str]
    why: Callable[[int], str]
    #: stale only for some tasks (a case's ``stale = { keys = [...], events = [...] }``): (pos, task row) -> bool
    stale_for: Callable[[int, Mapping[str, Any]], bool] = lambda _pos, _row: False
    #: an event id as a reader knows it (a case's ``#label``)
    event_name: Callable[[str], str] = lambda event_id: event_id[:8]
    #: the upstream runtime the recovery runs (0.4+ restores pending rounds and reads refresh rows)
    runtime: str = "0.3"
    rows: list[Any] = field(default_factory=list)
    entries: dict[int, Any] = field(default_factory=dict)
    lww: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.agent = _CachedAgent(self.agent)
        recs = self.log.records
        mask = window_mask(recs, list(self.markers), start_offsets=self.log.source.start_offsets)
        self.rows = list(iter_entries(recs, mask)) if mask.any() else []
        for pos, entry, sk in self.rows:
            if entry is None:
                if sk is not None:
                    self.lww.pop(sk, None)
                continue
            self.entries[pos] = entry
            self.lww[entry.state_key] = pos


@dataclass
class _Eval:
    tasks: int = 0
    reused: int = 0
    resumed: int = 0
    rerun: int = 0
    stale: list[str] = field(default_factory=list)
    #: per stale reuse, the task and the record it took: ``(key, input, action, seq, position)``
    stale_at: list[tuple[str, str, str, int, int]] = field(default_factory=list)
    tainted: list[str] = field(default_factory=list)
    avoidable: list[str] = field(default_factory=list)
    crashed: bool = False
    error: str | None = None
    error_key: str | None = None    # hook and exception type of ``error`` (a shrunk case keeps failing alike)
    siblings: int = 0               # stale reuses of a sibling's record (#1084)
    siblings_unevidenced: int = 0   # ... by a task no reused parent emitted here (a restored pending task)
    stale_compact: list[str] = field(default_factory=list)
    avoidable_compact: list[str] = field(default_factory=list)

    def fails(self, kind: str) -> bool:
        if kind == "stale-reuse":
            return bool(self.stale)
        if kind == "avoidable-rerun":
            return bool(self.avoidable)
        return self.error is not None


def _evaluate(subject: _Subject, rule: DivergenceRule) -> _Eval:
    guard = GuardedRule(rule)
    counter = itertools.count(1)
    ev = _Eval()
    failed: Exception | None = None
    try:
        session = RecoverySession(guard, source_kind="kafka")
        rebuild_records(session, subject.rows)
        sim = simulate(subject.plan, subject.agent, session, log=subject.log,
                       new_id=lambda: f"{_FRESH}{next(counter):012x}", runtime=subject.runtime)
        ev.crashed = sim.crashed
    except Exception as exc:  # noqa: BLE001 - a broken rule is a finding, reported with its history
        failed = exc
    broken = guard.broken
    if broken is not None:
        ev.error = str(broken)
        ev.error_key = f"{broken.hook}:{type(broken.error).__name__ if broken.error is not None else 'returned'}"
        return ev
    if failed is not None:
        # not raised by a hook of the rule (the replay itself failed): reported, but not blamed on a hook
        ev.error = f"the replay failed outside the rule's hooks: {type(failed).__name__}: {failed}".splitlines()[0]
        ev.error_key = f"replay:{type(failed).__name__}"
        return ev
    used: set[int] = set()
    evidence: set[str] = set()      # output ids of the records this recovery reused so far
    # the events each state key was dispatched for in this recovery: a record written for one of them
    # is that task's execution, never another's (#1084 siblings share the state key)
    dispatched: dict[str, set[str]] = {}
    for r in sim.rows:
        if r["outcome"] != NOT_DISPATCHED and r["event_id"] is not None:
            dispatched.setdefault(r["state_key"], set()).add(r["event_id"])
    for r in sim.rows:
        out, pos = r["outcome"], r["entry_pos"]
        ev.tasks += 1
        if out == "REUSE" or out == "RESUME":
            if out == "REUSE":
                ev.reused += 1
            else:
                ev.resumed += 1
            if pos is None:
                continue
            pos = int(pos)
            used.add(pos)
            entry = subject.entries.get(pos)
            replays = out == "REUSE" or (entry is not None and entry.call_count > 0)
            if not replays:
                continue
            sibling = _sibling_of(r, entry, dispatched, subject.event_name)
            evidenced_here = r["event_id"] in evidence
            if out == "REUSE" and entry is not None:
                evidence.update(entry.output_event_ids)
            off_branch = not subject.branch_ok[pos]
            if off_branch or sibling is not None or subject.stale_for(pos, r):
                ev.stale.append(_story(r, out, subject.describe(pos),
                                       sibling if sibling is not None and not off_branch else subject.why(pos)))
                ev.stale_compact.append(f"{_label(r)}={out} of {subject.compact(pos)}")
                ev.stale_at.append((str(r["key"]), str(r["input"]), str(r["action"]), int(r["seq"]), pos))
                if not off_branch and sibling is not None:
                    ev.siblings += 1
                    ev.siblings_unevidenced += not evidenced_here
            elif subject.tainted[pos]:
                ev.tainted.append(_story(r, out, subject.describe(pos), "its attempt had already reused a stale "
                                         "record, so the memory it was written with was wrong (tainted)"))
        elif out == "RERUN":
            ev.rerun += 1
            p = subject.lww.get(r["state_key"])
            if p is None or p in used:
                continue
            entry = subject.entries[p]
            if entry.completed and subject.branch_ok[p] and not subject.tainted[p]:
                used.add(p)
                ev.avoidable.append(f"{_task(r)} ran its body again (RERUN) although {subject.describe(p)} was "
                                    "written on this recovery's branch and no other task used it: reusing it was safe")
                ev.avoidable_compact.append(f"{_label(r)}=RERUN although {subject.compact(p)} was on this branch")
    return ev


def _sibling_of(row: Mapping[str, Any], entry: Any, dispatched: Mapping[str, set[str]],
                name: Callable[[str], str]) -> str | None:
    """Why reusing ``entry`` for ``row`` takes another task's execution (#1084, G09), or None when it does not.

    Only when the record was written for another event this recovery also dispatches: the ids prove it.
    Siblings that get new ids (their parent ran again) share the record as in a failure-free run (#1084
    is open, spec §10.3), which is no recovery's fault.
    """
    written_for = entry.task_event_id if entry is not None else None
    if written_for is not None and written_for != row["event_id"] and written_for in dispatched.get(row["state_key"], ()):
        return (f"it was written for event {name(written_for)}, a sibling with identical attributes that this "
                f"recovery also dispatches, not for this task's event {name(str(row['event_id']))}: its body never ran "
                "(#1084: identical attributes share a state key)")
    return None


def _task(row: Mapping[str, Any]) -> str:
    where = "of the in-flight round the checkpoint restored" if row["input"] == "pending" else f"input {row['input']}"
    return f"task {row['action']} at {row['key']}@{row['seq']} ({where})"


def _story(row: Mapping[str, Any], outcome: str, record: str, why: str) -> str:
    verb = "reused" if outcome == "REUSE" else "resumed (replaying the recorded calls of)"
    return f"{_task(row)} {verb} {record}; wrong because {why}"


def _label(row: Mapping[str, Any]) -> str:
    return f"{row['key']}:{row['input']}.{row['action']}@{row['seq']}"


def _history_subject(h: History) -> _Subject:
    found = h.memo.get("subject")
    if found is None:
        found = h.memo["subject"] = _make_history_subject(h)
    return found


def _make_history_subject(h: History) -> _Subject:
    owner: dict[int, Any] = {}
    for x in h.executions:
        for p in x.positions:
            owner[p] = x

    def describe(pos: int) -> str:
        x = owner.get(pos)
        if x is None:
            return f"record {pos}"
        return f"record {pos} (attempt {x.attempt}'s {x.action} at {x.key}@{x.seq}, after inputs {'>'.join(x.branch)})"

    def compact(pos: int) -> str:
        x = owner.get(pos)
        if x is None:
            return f"record {pos}"
        return (f"record {pos} (att{x.attempt} {x.action} at {x.key}@{x.seq}, branch {'>'.join(x.branch)}; "
                f"recovery branch {'>'.join(h.paths.get(x.key, ())[:x.seq + 1])})")

    def why(pos: int) -> str:
        x = owner.get(pos)
        if x is None:
            return "it was written on another branch"
        if x.tainted and x.branch == tuple(h.paths.get(x.key, ())[:x.seq + 1]):
            return "its attempt had already reused a stale record, so it was written from wrong memory"
        return branch_difference(x.key, x.branch, tuple(h.paths.get(x.key, ())[:x.seq + 1]))

    return _Subject(h.log, h.markers, h.plan, h.agent, h.branch_ok, h.tainted, describe, compact, why,
                    runtime=h.runtime)


def branch_difference(key: str, written: Sequence[str], replayed: Sequence[str]) -> str:
    """Why a record written after inputs ``written`` is stale for a recovery that replays ``replayed``."""
    for seq, (a, b) in enumerate(zip(written, replayed)):
        if a != b:
            return (f"its attempt had input {a} at {key}@{seq} where this recovery has {b}: its result and memory "
                    f"follow the other input")
    if len(replayed) < len(written):
        return f"this recovery has no input at {key}@{len(replayed)}, where its attempt had {written[len(replayed)]}"
    return "it was written on another branch"


def _case_subject(built: Any) -> _Subject:
    lines = {ln.n: ln for ln in built.case.log}
    n = len(built.log)
    line_of = built.line_of_pos
    marks = [lines[line_of[p]].stale if p in line_of else None for p in range(n)]
    stale = [m is not None and m.always for m in marks]
    labels = built.id_labels
    keys = built.key_of_business_key

    def stale_for(pos: int, row: Mapping[str, Any]) -> bool:
        mark = marks[pos]
        if mark is None or mark.always:
            return False
        key_labels = keys.get(row["business_key"], (row["key"],))
        return any(mark.applies(k, labels.get(row["event_id"])) for k in key_labels)

    def describe(pos: int) -> str:
        ln = lines.get(line_of.get(pos, -1))
        if ln is None:
            return f"record {pos}"
        return f"log line {ln.n} (attempt {ln.attempt}'s {ln.action} at {ln.key}@{ln.seq})"

    def compact(pos: int) -> str:
        ln = lines.get(line_of.get(pos, -1))
        if ln is None:
            return f"record {pos}"
        mark = ", marked stale" if ln.stale is not None else ""
        return f"line {ln.n} (att{ln.attempt} {ln.action} at {ln.key}@{ln.seq}{mark})"

    case = built.case
    written: dict[tuple[int, str, int], str] = {}
    for ln in case.log:
        if ln.status != "TOMB" and ln.event.type == "_input_event" and "input" in ln.event.attributes:
            written.setdefault((ln.attempt, ln.key, ln.seq), str(ln.event.attributes["input"]))
    replayed: dict[tuple[str, int], str] = {}
    for r in case.replay:
        k = r.key
        seq = case.keys[k].restored_seq + 1 + sum(1 for (kk, _) in replayed if kk == k) if k in case.keys else -1
        replayed[(k, seq)] = str(r.event.attributes.get("input", r.event.text))

    def why(pos: int) -> str:
        ln = lines.get(line_of.get(pos, -1))
        if ln is not None and ln.stale is not None and not ln.stale.always:
            if ln.stale.events:
                return (f"the case marks it stale for event {', '.join('#' + e for e in ln.stale.events)}: it was "
                        "written for a sibling with the same attributes, so this task's body never ran (#1084)")
            return (f"the case marks it stale for key {', '.join(ln.stale.keys)}: it was written for another key's "
                    "task whose key text collides")
        if ln is not None:
            for seq in range(ln.seq + 1):
                a, b = written.get((ln.attempt, ln.key, seq)), replayed.get((ln.key, seq))
                if a is not None and b is not None and a != b:
                    return (f"attempt {ln.attempt} had input {a} at {ln.key}@{seq} where this recovery replays {b}: "
                            "the record follows the other input")
        return "the case marks it stale: written after a different earlier input, or from wrong memory"

    return _Subject(built.log, list(built.markers), built.plan, built.agent, [not s for s in stale], [False] * n,
                    describe, compact, why, stale_for, lambda i: f"#{labels[i]}" if i in labels else i[:8],
                    runtime=built.case.setup.runtime)
