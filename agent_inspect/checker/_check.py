"""The rule safety checker: judge a divergence rule on random recovery histories.

Definitions (the generator knows the true history, so it can judge):

- The **branch** of a task or record at (key k, seq s) is the inputs of k at seqs ``0..s`` in the
  attempt that ran it. A recovery's branch comes from the checkpoint it restored plus the inputs
  the source replays after it.
- A **stale reuse** is a REUSE of a record (or a RESUME of an incomplete record with recorded call
  results, which replays them) whose branch differs from the recovery's branch at that key and seq:
  a record written under a different input at seq s (a branch change, spec §10.2 items 1–2) or at a
  later seq of a round that depended on a different earlier input (§10.2 item 1, G01).
- A **tainted reuse** is a reuse of a record on the right branch that its own attempt wrote after
  that attempt had made a stale reuse itself (its memory was already wrong). No rule that reads only
  the log can see this (spec §10.3 "Tainted records"); it is counted, but not held against the rule.
- An **avoidable rerun** is a RERUN of a task whose state key holds, in the rebuild window read with
  plain last-write-wins (tombstones delete), a completed record on the recovery's branch that is not
  tainted and that no earlier task of this recovery has used: reusing it would have been safe.

Every failure kind gets a counterexample: the history shrunk (whole attempts, trailing rounds,
restored tasks, then single records, until removing any record makes the failure disappear) and
written as a case file (docs/cases.md), where stale and tainted records carry ``stale = true``.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from agent_inspect._errors import InspectError, RecoveryError
from agent_inspect.cases import executor_for
from agent_inspect.checker._generate import (
    History,
    HistoryOptions,
    RuleCheckError,
    event_notation,
    generate_history,
)
from agent_inspect.rules import resolve_rule
from agent_inspect.store import DivergenceRule

__all__ = ["check", "CheckReport", "Counterexample", "resolve_check_rule", "FAILURE_KINDS"]

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
        from agent_inspect.recovery import iter_entries, window_mask

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
    from agent_inspect.recovery import rebuild_records, simulate
    from agent_inspect.store import RecoverySession

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


# -- case files ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Line:
    data: Mapping[str, Any]
    in_window: bool


def _history_lines(h: History) -> tuple[list[_Line], list[dict[str, Any]], list[str]]:
    """The history as case-file log lines (event ids as labels), restored tasks and replayed inputs."""
    labels: dict[str, str] = {}

    def ev(e: Any) -> str:
        text = event_notation(e)
        if e.id is None:
            return text
        return f"{text}#{labels.setdefault(e.id, f'e{len(labels) + 1}')}"

    marker = h.markers[0].get(0, 0)
    lines = []
    for x in h.executions:
        line: dict[str, Any] = {"att": x.attempt, "key": x.key, "seq": x.seq, "action": x.action,
                                "event": ev(x.event), "status": x.status}
        if x.outputs:
            line["out"] = [ev(o) for o in x.outputs]
        if x.calls:
            line["calls"] = [{"fn": f, "args": d, "status": s} for f, d, s in x.calls]
        if x.status != "TOMB" and (x.tainted or x.branch != tuple(h.paths.get(x.key, ())[:x.seq + 1])):
            line["stale"] = True
        lines.append(_Line(line, x.positions[0] >= marker))
    pending = [{"key": p.key, "seq": p.seq, "action": p.action, "event": ev(p.event)} for p in h.plan.pending]
    replay = [f"{i.key}:{event_notation(i.event)}" for i in h.plan.inputs]
    return lines, pending, replay


def _assemble(base: Mapping[str, Any], lines: Sequence[_Line], replay: Sequence[str],
              pending: Sequence[Mapping[str, Any]], restored: Mapping[str, int]) -> dict[str, Any]:
    """A case-file mapping; attempts renumbered 1.., the marker before the first in-window line."""
    atts = {a: n for n, a in enumerate(sorted({ln.data["att"] for ln in lines}), start=1)}
    log = [{**ln.data, "att": atts[ln.data["att"]]} for ln in lines]
    first = next((i for i, ln in enumerate(lines) if ln.in_window), len(lines))
    used = {ln.data["key"] for ln in lines} | {r.split(":", 1)[0] for r in replay} | {p["key"] for p in pending}
    data = dict(base)
    data["replay"] = list(replay)
    if pending:
        data["pending"] = [dict(p) for p in pending]
    data["log"] = log
    data["setup"] = {**dict(base.get("setup", {})), "window_start": first + 1}
    data["keys"] = {k: {"restored_seq": int(restored.get(k, -1))} for k in sorted(used)}
    return data


def _parse(data: Mapping[str, Any]) -> Any:
    from agent_inspect.cases import parse_case

    return parse_case(data)[0]


def _judge_case(data: Mapping[str, Any], rule: DivergenceRule) -> _Eval | None:
    from agent_inspect.cases import build_case

    try:
        built = build_case(_parse(data))
    except InspectError:
        return None
    return _evaluate(_case_subject(built), rule)


def _shrink(kind: str, h: History, rule: DivergenceRule, case_id: str, summary: str) -> tuple[dict[str, Any], _Eval]:
    lines, pending, replay = _history_lines(h)
    restored = dict(h.plan.restored_seq)
    base = {"id": case_id, "name": f"rules-check-{kind}", "category": "genuine" if kind == "stale-reuse" else "normal",
            "summary": summary,
            "setup": {"key_format": h.options.key_format, "pipeline": "python", "tombstones": h.tombstones},
            "agent": dict(h.agent_spec)}
    error_type = None

    def fails(ls: Sequence[_Line], rp: Sequence[str], pd_: Sequence[Mapping[str, Any]]) -> _Eval | None:
        ev = _judge_case(_assemble(base, ls, rp, pd_, restored), rule)
        if ev is None or not ev.fails(kind):
            return None
        if kind == "error" and error_type is not None and not ev.error.startswith(error_type):
            return None
        return ev

    result = fails(lines, replay, pending)
    if result is None:
        # the collapsed case does not reproduce the failure; report the full history as it is
        return _assemble(base, lines, replay, pending, restored), _Eval()
    if kind == "error":
        error_type = result.error.split(":", 1)[0]

    def attempt(ls: list[_Line], rp: list[str], pd_: list[Mapping[str, Any]]) -> bool:
        nonlocal result
        ev = fails(ls, rp, pd_)
        if ev is not None:
            result = ev
            return True
        return False

    window = [ln for ln in lines if ln.in_window]
    if len(window) < len(lines) and attempt(window, replay, pending):
        lines = window
    for att in sorted({ln.data["att"] for ln in lines}):
        trial = [ln for ln in lines if ln.data["att"] != att]
        if trial and attempt(trial, replay, pending):
            lines = trial
    changed = True
    while changed:                                 # fewest rounds: drop each key's last input
        changed = False
        for key in sorted({r.split(":", 1)[0] for r in replay}):
            last = max(i for i, r in enumerate(replay) if r.split(":", 1)[0] == key)
            trial = replay[:last] + replay[last + 1:]
            if attempt(lines, trial, pending):
                replay, changed = trial, True
    for p in list(pending):
        trial = [q for q in pending if q is not p]
        if attempt(lines, replay, trial):
            pending = trial
    for group in sorted({(ln.data["key"], ln.data["seq"]) for ln in lines}):
        trial = [ln for ln in lines if (ln.data["key"], ln.data["seq"]) != group]
        if trial and attempt(trial, replay, pending):
            lines = trial
    changed = True
    while changed:                                 # fewest records: until every single removal fixes it
        changed = False
        for i in range(len(lines) - 1, -1, -1):
            trial = lines[:i] + lines[i + 1:]
            if attempt(trial, replay, pending):
                lines, changed = trial, True
    return _assemble(base, lines, replay, pending, restored), result


# -- results ----------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Counterexample:
    """A minimized history that shows one failure kind, as a case file (docs/cases.md).

    ``items`` are the failing tasks of the minimized case; ``case`` is the parsed case,
    :meth:`to_toml` / :meth:`save` write it, :meth:`executor` opens it in the replay stepper.
    """

    kind: str
    rule: str
    history_seed: int
    history: str
    items: tuple[str, ...]
    data: Mapping[str, Any] = field(repr=False)
    rule_object: Any = field(default=None, repr=False, compare=False)

    @property
    def case(self) -> Any:
        """The counterexample as a :class:`~agent_inspect.rules.Case`."""
        return _parse(self.data)

    @property
    def records(self) -> int:
        """Log lines (action executions and tombstones) of the minimized history."""
        return len(self.data["log"])

    @property
    def attempts(self) -> int:
        return len({ln["att"] for ln in self.data["log"]})

    @property
    def rounds(self) -> int:
        """Replayed inputs plus the restored in-flight round, if any."""
        return len(self.data["replay"]) + (1 if self.data.get("pending") else 0)

    def to_toml(self) -> str:
        """The case file text."""
        import tomli_w

        return tomli_w.dumps(_toml_ready(self.data))

    def save(self, path: str | Path) -> Path:
        """Write the case file: ``path`` ending in ``.toml``, or a directory (created if needed) that gets
        ``<case id>.toml``. Returns the path written."""
        path = Path(path)
        if path.suffix != ".toml":
            path.mkdir(parents=True, exist_ok=True)
            path = path / f"{self.data['id']}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_toml(), encoding="utf-8")
        return path

    def executor(self, **options: Any) -> Any:
        """A :class:`~agent_inspect.executor.ReplayExecutor` over the counterexample under the checked rule."""
        rule = self.rule_object if self.rule_object is not None else self.rule
        return executor_for(self.case, rule=rule, **options)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "rule": self.rule, "history_seed": self.history_seed, "history": self.history,
                "items": list(self.items), "records": self.records, "attempts": self.attempts,
                "rounds": self.rounds, "case": self.to_toml()}


def _toml_ready(data: Mapping[str, Any]) -> dict[str, Any]:
    order = ["id", "name", "category", "summary", "note", "replay", "pending", "log", "setup", "keys", "agent"]
    return {k: data[k] for k in order if k in data}


@dataclass(frozen=True, eq=False)
class CheckReport:
    """What :func:`check` found: one row per history in ``frame``, totals, and one minimized
    counterexample per failure kind (``counterexamples``)."""

    rule: str
    n: int
    seed: int
    options: HistoryOptions
    frame: pd.DataFrame = field(repr=False)
    counterexamples: tuple[Counterexample, ...] = ()

    def _sum(self, col: str) -> int:
        return int(self.frame[col].sum()) if len(self.frame) else 0

    @property
    def stale_reuses(self) -> int:
        return self._sum("stale_reuses")

    @property
    def avoidable_reruns(self) -> int:
        return self._sum("avoidable_reruns")

    @property
    def tainted_reuses(self) -> int:
        return self._sum("tainted_reuses")

    @property
    def errors(self) -> int:
        return int(self.frame["error"].notna().sum()) if len(self.frame) else 0

    @property
    def passed(self) -> bool:
        """No stale reuse and no raising rule."""
        return self.stale_reuses == 0 and self.errors == 0

    def counterexample(self, kind: str) -> Counterexample | None:
        """The counterexample of ``kind`` (one of ``FAILURE_KINDS``), or None."""
        return next((c for c in self.counterexamples if c.kind == kind), None)

    @property
    def totals(self) -> dict[str, int]:
        return {"histories": len(self.frame), "tasks": self._sum("tasks"), "reused": self._sum("reused"),
                "resumed": self._sum("resumed"), "rerun": self._sum("rerun"), "stale_reuses": self.stale_reuses,
                "histories_with_stale": int((self.frame["stale_reuses"] > 0).sum()) if len(self.frame) else 0,
                "tainted_reuses": self.tainted_reuses, "avoidable_reruns": self.avoidable_reruns,
                "errors": self.errors}

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return {"rule": self.rule, "n": self.n, "seed": self.seed, "passed": self.passed, **self.totals,
                "counterexamples": [c.to_dict() for c in self.counterexamples]}

    def summary(self) -> str:
        t = self.totals
        return (f"rule {self.rule}: {t['histories']} histories, {t['tasks']} tasks; {t['stale_reuses']} stale "
                f"reuses in {t['histories_with_stale']} histories, {t['avoidable_reruns']} avoidable reruns, "
                f"{t['tainted_reuses']} tainted reuses, {t['errors']} errors")

    def __repr__(self) -> str:
        return f"CheckReport({self.summary()})"

    def _repr_html_(self) -> str:
        from agent_inspect._html import escape, frame_html

        verdict = "no stale reuse" if self.passed else "<b>unsafe</b>"
        parts = [f"<p><b>Rule check</b> <code>{escape(self.rule)}</code> — {verdict}: {escape(self.summary())}</p>",
                 frame_html(pd.DataFrame([self.totals]), caption="totals")]
        bad = self.frame[(self.frame["stale_reuses"] > 0) | (self.frame["avoidable_reruns"] > 0)
                         | self.frame["error"].notna()]
        if len(bad):
            parts.append(frame_html(bad, caption="histories with findings", max_rows=10))
        for c in self.counterexamples:
            parts.append(f"<h4>{escape(c.kind)}: seed {escape(c.history_seed)}, {c.attempts} attempt(s), "
                         f"{c.rounds} round(s), {c.records} record(s)</h4><ul>"
                         + "".join(f"<li>{escape(i)}</li>" for i in c.items) + "</ul>"
                         f"<details><summary>case file</summary><pre>{escape(c.to_toml())}</pre></details>")
        return "".join(parts)


def check(rule: Any, *, n: int = 200, seed: int = 0, minimize: bool = True,
          options: HistoryOptions | Mapping[str, Any] | None = None, seeds: Sequence[int] | None = None,
          **generator_options: Any) -> CheckReport:
    """Judge ``rule`` on ``n`` random recovery histories (reproducible from ``seed``).

    ``rule`` is a built-in name, ``"module:ClassName"``, a :class:`DivergenceRule` subclass or
    instance. Generator options (:class:`HistoryOptions`: ``keys``, ``rounds``, ``attempts``,
    ``branch_changes``, ``tombstones``, ``savepoints``, ``production_rules``, …) come as ``options``
    or keywords. Returns a :class:`CheckReport` with stale reuses, avoidable reruns, raising rules
    and, unless ``minimize=False``, a minimized counterexample case per failure kind. ``seeds``
    re-checks given histories (the ``seed`` column of a report's frame) instead of ``n`` new ones::

        report = ai.checker.check("fixed", n=500, seed=1, tombstones=1.0)
        report.counterexample("stale-reuse").save("cases/")
    """
    if n < 0:
        raise RuleCheckError(f"n={n} must be 0 or more")
    todo = [int(s) for s in seeds] if seeds is not None else history_seeds(seed, n)
    opts = HistoryOptions.of(options, **generator_options)
    rule_obj = resolve_check_rule(rule)
    name = rule if isinstance(rule, str) else rule_obj.name
    rows: list[dict[str, Any]] = []
    first_of: dict[str, History] = {}
    for i, hseed in enumerate(todo):
        h = generate_history(hseed, opts)
        ev = _evaluate(_history_subject(h), rule_obj)
        rows.append({"history": i, "seed": hseed, "keys": len(h.paths), "rounds": sum(len(p) for p in h.paths.values()),
                     "attempts": len(h.attempts), "records": len(h.log), "tasks": ev.tasks, "reused": ev.reused,
                     "resumed": ev.resumed, "rerun": ev.rerun, "stale_reuses": len(ev.stale),
                     "tainted_reuses": len(ev.tainted), "avoidable_reruns": len(ev.avoidable),
                     "crashed": ev.crashed, "error": ev.error})
        for kind in FAILURE_KINDS:
            if ev.fails(kind) and (kind not in first_of or len(h.log) < len(first_of[kind].log)):
                first_of[kind] = h
    frame = pd.DataFrame(rows, columns=_FRAME_COLUMNS)
    cexs = []
    for kind in FAILURE_KINDS:
        h = first_of.get(kind)
        if h is None:
            continue
        case_id = f"CHK-{kind}-{h.seed}"
        summary = f"rules.check counterexample: {kind} under {name} (history seed {h.seed})"
        if minimize:
            data, ev = _shrink(kind, h, rule_obj, case_id, summary)
        else:
            lines, pending, replay = _history_lines(h)
            data = _assemble({"id": case_id, "name": f"rules-check-{kind}", "summary": summary,
                              "setup": {"key_format": h.options.key_format, "pipeline": "python",
                                        "tombstones": h.tombstones}, "agent": dict(h.agent_spec)},
                             lines, replay, pending, h.plan.restored_seq)
            ev = _judge_case(data, rule_obj) or _Eval()
        items = ev.stale if kind == "stale-reuse" else ev.avoidable if kind == "avoidable-rerun" else \
            [ev.error] if ev.error else []
        data = {**data, "note": f"history: {h.describe()}"}
        cexs.append(Counterexample(kind=kind, rule=name, history_seed=h.seed, history=h.describe(),
                                   items=tuple(str(i) for i in items), data=data, rule_object=rule_obj))
    return CheckReport(rule=name, n=len(todo), seed=seed, options=opts, frame=frame, counterexamples=tuple(cexs))


def history_seeds(seed: int, n: int) -> list[int]:
    """The history seeds a check with ``seed`` and ``n`` uses (``generate_history(s)`` rebuilds each)."""
    rng = random.Random(seed)
    return [rng.getrandbits(48) for _ in range(n)]
