"""Compare divergence rules side by side on a case matrix (or on a production log)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from agent_inspect.agents import AsRecordedAgent
from agent_inspect.cases._build import build_case
from agent_inspect.cases._format import Case, load_cases
from agent_inspect.cases._run import expectation_rules, run_case
from agent_inspect.recovery import ReplayPlan, predict

__all__ = ["compare"]

_COLUMNS = ["rule", "case", "category", "reruns", "evictions", "stale_reuses", "calls", "crashed", "passed",
            "expected"]


def compare(cases: str | Path | Case | Iterable[str | Path | Case] | Any, rules: Sequence[Any] | None = None, *, markers: Any = None, plan: Any = None,
            agent: Any = None) -> pd.DataFrame:
    """Run every case under every rule; one row per (rule, case), long form.

    ``cases`` may also be a loaded ``ActionStateLog`` (a production journal): each rule's recovery is
    then predicted (:func:`agent_inspect.recovery.predict` with ``markers``, ``plan`` and ``agent``;
    by default the plan inferred from the log and its as-recorded agent) and the rows are per
    (rule, key) with ``reruns``, ``evictions``, ``calls`` and ``crashed`` — there is no stale-reuse
    ground truth for a production log.

    ``cases`` are :class:`Case` objects or case-file paths/directories; ``rules`` are rule names or
    :class:`~agent_inspect.rules.DivergenceRule` instances (default: every rule the cases name).
    Columns: ``reruns`` (bodies that run again), ``evictions`` (cache entries removed),
    ``stale_reuses`` (reuses of records the case marks stale — correctness failures), ``calls``
    (durable calls executed again), ``crashed``, ``passed`` (the case's expectation for that rule
    when it has one, else "no stale reuse"; see ``expected``). Pivot with
    ``frame.pivot(index="rule", columns="case", values="reruns")``. Call-level cases are skipped.
    """
    if hasattr(cases, "records") and hasattr(cases, "value"):
        return _compare_log(cases, rules or ["original", "fixed"], markers=markers, plan=plan, agent=agent)
    loaded = _cases(cases)
    loaded = [c for c in loaded if c.log]
    if rules is None:
        rules = expectation_rules(loaded)
    rows = []
    for case in loaded:
        built = build_case(case)
        for rule in rules:
            res = run_case(case, rule, built=built)
            rows.append({"rule": res.rule, "case": case.id, "category": case.category, "reruns": res.reruns,
                         "evictions": res.evictions, "stale_reuses": len(res.stale),
                         "calls": sum(res.calls.values()), "crashed": res.crashed, "passed": res.passed,
                         "expected": res.expected_given})
    frame = pd.DataFrame(rows, columns=_COLUMNS)
    for col in ("reruns", "evictions", "stale_reuses", "calls"):
        frame[col] = frame[col].astype("int64")
    for col in ("crashed", "passed", "expected"):
        frame[col] = frame[col].astype(bool)
    frame["rule"] = pd.Categorical(frame["rule"], categories=list(dict.fromkeys(frame["rule"])))
    return frame


def _compare_log(log: Any, rules: Sequence[Any], *, markers: Any, plan: Any, agent: Any) -> pd.DataFrame:
    plan = plan if plan is not None else ReplayPlan.from_log(log, markers=markers)
    agent = agent if agent is not None else AsRecordedAgent(log)
    frames = []
    for rule in rules:
        pred = predict(log, plan=plan, agent=agent, rule=rule, markers=markers)
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
        calls = pred.ledger[pred.ledger["kind"] == "call"].groupby("key", observed=True)["count"].sum()
        frames.append(pd.DataFrame({
            "rule": pred.rule, "key": keys, "reruns": reruns.to_numpy().astype("int64"),
            "evictions": [removed.get(k, 0) for k in keys],
            "calls": calls.reindex(keys, fill_value=0).to_numpy().astype("int64"), "crashed": pred.crashed}))
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
