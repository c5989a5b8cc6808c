"""Compare divergence rules side by side on a case matrix (or on a production log)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from agent_inspect._glossary import define_column
from agent_inspect.agents import AsRecordedAgent
from agent_inspect.cases._build import build_case
from agent_inspect.cases._format import Case, load_cases
from agent_inspect.cases._run import expectation_rules, run_case
from agent_inspect.recovery import ReplayPlan, predict
from agent_inspect.rules import BrokenRuleError, GuardedRule, resolve_rule
from agent_inspect.store import DivergenceRule

if TYPE_CHECKING:
    from agent_inspect._types import MarkersLike, RuleLike
    from agent_inspect.agents import Agent
    from agent_inspect.log import ActionStateLog

__all__ = ["compare", "COLUMN_MEANINGS"]

_COLUMNS = ["rule", "case", "category", "reruns", "evictions", "stale_reuses", "calls", "calls_subagent", "crashed",
            "passed", "expected", "broken"]
#: the ledger kind each call column counts: a sub-agent call sent again is no durable call (as predict's tasks,
#: the executor and a fleet scan count them)
_CALL_KINDS = {"calls": "call", "calls_subagent": "subagent"}

# the comparison's "calls" are the calls run again, not the calls an action recorded
_CALL_TERMS = {"calls": "calls run again"}
COLUMN_MEANINGS = {c: define_column(c, aliases=_CALL_TERMS)
                   for c in ("reruns", "evictions", "stale_reuses", "calls", "calls_subagent", "crashed", "passed",
                             "expected", "broken")}
"""What each column of :func:`compare`'s frame means (the comparison view shows it beside the metric)."""


def compare(cases: str | Path | Case | Iterable[str | Path | Case] | ActionStateLog, rules: Sequence[RuleLike] | None = None, *,
            markers: MarkersLike = None, plan: ReplayPlan | None = None, agent: Agent | None = None) -> pd.DataFrame:
    """Run every case under every rule; one row per (rule, case), long form.

    ``cases`` may also be a loaded ``ActionStateLog`` (a production journal): each rule's recovery is
    then predicted (:func:`agent_inspect.recovery.predict` with ``markers``, ``plan`` and ``agent``;
    by default the plan inferred from the log and its as-recorded agent) and the rows are per
    (rule, key) with ``reruns``, ``evictions``, ``calls``, ``calls_subagent`` and ``crashed`` — there is no stale-reuse
    ground truth for a production log.

    ``cases`` are :class:`Case` objects or case-file paths/directories; ``rules`` are rule names or
    :class:`~agent_inspect.rules.DivergenceRule` instances (default: every rule the cases name).
    Columns: ``reruns`` (bodies that run again), ``evictions`` (cache entries removed),
    ``stale_reuses`` (reuses of records the case marks stale — correctness failures), ``calls``
    (durable calls executed again), ``calls_subagent`` (sub-agent calls sent again as new calls, which
    ``calls`` leaves out: no call that leaves the job), ``crashed``, ``passed`` and ``expected``: when the case states an
    expected outcome for the rule (``expected`` True), ``passed`` says the rule gives exactly that; for
    a rule the case does not name (``expected`` False, e.g. your own) ``passed`` only means "no stale
    reuse". ``broken`` holds the rule's first error in one line (a hook raised or returned the wrong
    type, with ``file:line`` in the rule's code) and the row counts nothing (``passed`` False); the
    other rules still run. ``COLUMN_MEANINGS`` says the same per column. Pivot with
    ``frame.pivot(index="rule", columns="case", values="reruns")``. Call-level cases are skipped.

    For example::

        table = ai.cases.compare("cases/G01.toml", rules=["original", "fixed"])   # one row per (rule, case)
        table[["rule", "case", "passed", "reruns"]]
    """
    if hasattr(cases, "records") and hasattr(cases, "value"):
        return _compare_log(cases, rules or ["original", "fixed"], markers=markers, plan=plan, agent=agent)
    loaded = _cases(cases)
    loaded = [c for c in loaded if c.log]
    if rules is None:
        rules = expectation_rules(loaded)
    rows = []
    resolved = [_own(rule) for rule in rules]
    for case in loaded:
        built = build_case(case)
        for rule in resolved:
            guard = GuardedRule(rule) if isinstance(rule, DivergenceRule) else None
            try:
                res = run_case(case, guard or rule, built=built)
            except BrokenRuleError:
                res = None
            if guard is not None and guard.broken is not None:
                rows.append({"rule": guard.name, "case": case.id, "category": case.category, "reruns": 0,
                             "evictions": 0, "stale_reuses": 0, "calls": 0, "calls_subagent": 0, "crashed": False,
                             "passed": False,
                             "expected": guard.name in case.expect, "broken": str(guard.broken)})
                continue
            assert res is not None and res.prediction is not None  # only a broken rule raises BrokenRuleError
            ledger = res.prediction.ledger
            calls = {col: int(ledger.loc[ledger["kind"] == kind, "count"].sum()) for col, kind in _CALL_KINDS.items()}
            rows.append({"rule": res.rule, "case": case.id, "category": case.category, "reruns": res.reruns,
                         "evictions": res.evictions, "stale_reuses": len(res.stale), **calls,
                         "crashed": res.crashed, "passed": res.passed, "expected": res.expected_given,
                         "broken": None})
    frame = pd.DataFrame(rows, columns=_COLUMNS)
    for col in ("reruns", "evictions", "stale_reuses", "calls", "calls_subagent"):
        frame[col] = frame[col].astype("int64")
    for col in ("crashed", "passed", "expected"):
        frame[col] = frame[col].astype(bool)
    frame["rule"] = pd.Categorical(frame["rule"], categories=list(dict.fromkeys(frame["rule"])))
    return frame


def _own(rule: Any) -> Any:
    """A rule of the user's (an instance, a class, ``"module:Class"``) resolved, to run guarded; built-in names stay."""
    if isinstance(rule, str) and ":" not in rule:
        return rule
    obj = resolve_rule(rule)
    return obj if not type(obj).__module__.startswith("agent_inspect.") else rule


def _compare_log(log: Any, rules: Sequence[Any], *, markers: Any, plan: Any, agent: Any) -> pd.DataFrame:
    plan = plan if plan is not None else ReplayPlan.from_log(log, markers=markers)
    agent = agent if agent is not None else AsRecordedAgent(log)
    frames = []
    for rule in rules:
        own = _own(rule)
        guard = GuardedRule(own) if isinstance(own, DivergenceRule) else None
        pred = predict(log, plan=plan, agent=agent, rule=guard or rule, markers=markers)
        if guard is not None and guard.broken is not None:
            raise guard.broken     # a swallowed failure (a sub-agent call journals exceptions) still breaks it
        tasks = pred.tasks
        keys = pd.Index(sorted(set(tasks["key"].astype(str)) | set(map(str, plan.restored_seq))), name="key")
        reruns = tasks.groupby("key", observed=True)["body_ran"].sum().reindex(keys, fill_value=0)
        removed: dict[str, int] = {}
        names = {i.business_key: k for k, i in plan.keys.items()}
        for e in pred.events:
            if e.op not in ("delete", "supersede"):
                for entry in e.removed:
                    k = names.get(entry.business_key, entry.business_key)
                    removed[k] = removed.get(k, 0) + 1
        ledger = pred.ledger
        calls = {col: ledger[ledger["kind"] == kind].groupby("key", observed=True)["count"].sum()
                 .reindex(keys, fill_value=0).to_numpy().astype("int64") for col, kind in _CALL_KINDS.items()}
        frames.append(pd.DataFrame({
            "rule": pred.rule, "key": keys, "reruns": reruns.to_numpy().astype("int64"),
            "evictions": [removed.get(k, 0) for k in keys], **calls, "crashed": pred.crashed}))
    frame = pd.concat(frames, ignore_index=True)
    frame["rule"] = pd.Categorical(frame["rule"], categories=list(dict.fromkeys(frame["rule"])))
    return frame


def _cases(cases: Any) -> list[Case]:
    if isinstance(cases, (str, Path)):
        return load_cases(cases)
    if isinstance(cases, Case):
        return [cases]
    out: list[Case] = []
    paths = []
    for c in cases:
        if isinstance(c, Case):
            out.append(c)
        else:
            paths.append(c)
    if paths:
        out.extend(load_cases(paths))
    return out
