"""Judging one replay: the rule under test guarded, a history (or case) as a subject, stale and avoidable outcomes."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_inspect._errors import RecoveryError
from agent_inspect.checker._generate import (
    History,
    RuleCheckError,
)
from agent_inspect.recovery import iter_entries, rebuild_records, simulate, window_mask
from agent_inspect.rules import resolve_rule
from agent_inspect.store import DivergenceRule, RecoverySession

__all__ = ["resolve_check_rule", "FAILURE_KINDS"]

#: Failure kinds a check reports (each gets one minimized counterexample).
FAILURE_KINDS = ("stale-reuse", "avoidable-rerun", "error")

_FRAME_COLUMNS = ["history", "seed", "keys", "rounds", "attempts", "records", "tasks", "reused", "resumed",
                  "rerun", "stale_reuses", "tainted_reuses", "avoidable_reruns", "crashed", "error"]


# -- rules -------------------------------------------------------------------------------------------


def resolve_check_rule(rule: Any) -> DivergenceRule:
    """:func:`agent_inspect.rules.resolve_rule`, with its errors as :class:`RuleCheckError`."""
    try:
        return resolve_rule(rule)
    except RecoveryError as exc:
        raise RuleCheckError(str(exc)) from None


class _Guarded(DivergenceRule):
    """Delegates to the rule under test and remembers the first exception any hook raised.

    The predictor runs sub-agent calls as durable calls and journals their exceptions as FAILED
    results; the guard makes a raising rule visible however deep the hook was called.
    """

    def __init__(self, inner: DivergenceRule) -> None:
        self.inner = inner
        self.name = inner.name  # type: ignore[misc]
        self.error: BaseException | None = None
        self.hook: str | None = None

    def _failed(self, hook: str, exc: BaseException) -> None:
        if self.error is None:
            self.error, self.hook = exc, hook

    def new_state(self) -> Any:
        try:
            return self.inner.new_state()
        except Exception as exc:
            self._failed("new_state", exc)
            raise

    def rebuild(self, session: Any, entry: Any) -> Any:
        try:
            return self.inner.rebuild(session, entry)
        except Exception as exc:
            self._failed("rebuild", exc)
            raise

    def lookup(self, session: Any, task: Any) -> Any:
        try:
            return self.inner.lookup(session, task)
        except Exception as exc:
            self._failed("lookup", exc)
            raise

    def on_reuse(self, session: Any, task: Any, entry: Any) -> None:
        try:
            self.inner.on_reuse(session, task, entry)
        except Exception as exc:
            self._failed("on_reuse", exc)
            raise

    def on_write(self, session: Any, entry: Any) -> Any:
        try:
            return self.inner.on_write(session, entry)
        except Exception as exc:
            self._failed("on_write", exc)
            raise

    def prune(self, session: Any, business_key: str, seq: int, key_text: str | None) -> Any:
        try:
            return self.inner.prune(session, business_key, seq, key_text)
        except Exception as exc:
            self._failed("prune", exc)
            raise


class _CachedAgent:
    """The agent with its action UUIDs memoised: checking runs thousands of lookups per second."""

    def __init__(self, agent: Any) -> None:
        self._agent = agent
        self._uuids: dict[tuple[str, str, int], str] = {}
        self.listeners = agent.listeners
        self.run_action = agent.run_action
        self.begin_event = getattr(agent, "begin_event", lambda _event: None)

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
    """A log, its rebuild window, the recovery plan and agent, and the truth per log position."""

    log: Any
    markers: Sequence[Mapping[int, int]]
    plan: Any
    agent: Any
    branch_ok: Sequence[bool]
    tainted: Sequence[bool]
    describe: Callable[[int], str]
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
    tainted: list[str] = field(default_factory=list)
    avoidable: list[str] = field(default_factory=list)
    crashed: bool = False
    error: str | None = None

    def fails(self, kind: str) -> bool:
        if kind == "stale-reuse":
            return bool(self.stale)
        if kind == "avoidable-rerun":
            return bool(self.avoidable)
        return self.error is not None


def _evaluate(subject: _Subject, rule: DivergenceRule) -> _Eval:
    guard = _Guarded(rule)
    counter = itertools.count(1)
    ev = _Eval()
    try:
        session = RecoverySession(guard, source_kind="kafka")
        rebuild_records(session, subject.rows)
        sim = simulate(subject.plan, subject.agent, session, log=subject.log,
                       new_id=lambda: f"00000000-0000-4000-8000-{next(counter):012x}")
        ev.crashed = sim.crashed
    except Exception as exc:  # noqa: BLE001 - a raising rule is a finding, reported with its history
        guard.error = guard.error or exc
    if guard.error is not None:
        where = f" in {guard.hook}()" if guard.hook else ""
        ev.error = f"{type(guard.error).__name__}{where}: {guard.error}"
        return ev
    used: set[int] = set()
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
            if not subject.branch_ok[pos]:
                ev.stale.append(f"{_label(r)}={out} of {subject.describe(pos)}")
            elif subject.tainted[pos]:
                ev.tainted.append(f"{_label(r)}={out} of {subject.describe(pos)}")
        elif out == "RERUN":
            ev.rerun += 1
            p = subject.lww.get(r["state_key"])
            if p is None or p in used:
                continue
            entry = subject.entries[p]
            if entry.completed and subject.branch_ok[p] and not subject.tainted[p]:
                used.add(p)
                ev.avoidable.append(f"{_label(r)}=RERUN although {subject.describe(p)} was on this branch")
    return ev


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
        return (f"record {pos} (att{x.attempt} {x.action} at {x.key}@{x.seq}, branch {'>'.join(x.branch)}; "
                f"recovery branch {'>'.join(h.paths.get(x.key, ())[:x.seq + 1])})")

    return _Subject(h.log, h.markers, h.plan, h.agent, h.branch_ok, h.tainted, describe)


def _case_subject(built: Any) -> _Subject:
    lines = {ln.n: ln for ln in built.case.log}
    n = len(built.log)
    line_of = built.line_of_pos
    stale = [lines[line_of[p]].stale is not None if p in line_of else False for p in range(n)]

    def describe(pos: int) -> str:
        ln = lines.get(line_of.get(pos, -1))
        if ln is None:
            return f"record {pos}"
        mark = ", marked stale" if ln.stale is not None else ""
        return f"line {ln.n} (att{ln.attempt} {ln.action} at {ln.key}@{ln.seq}{mark})"

    return _Subject(built.log, list(built.markers), built.plan, built.agent, [not s for s in stale], [False] * n,
                    describe)
