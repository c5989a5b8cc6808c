"""Compare divergence rules side by side on a case matrix."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from agent_inspect.rules._cases import Case, load_cases

__all__ = ["compare"]

_COLUMNS = ["rule", "case", "category", "reruns", "evictions", "stale_reuses", "calls", "crashed", "passed",
            "expected"]


def compare(cases: str | Path | Case | Iterable[str | Path | Case],
            rules: Sequence[Any] | None = None) -> pd.DataFrame:
    """Run every case under every rule; one row per (rule, case), long form.

    ``cases`` are :class:`Case` objects or case-file paths/directories; ``rules`` are rule names or
    :class:`~agent_inspect.rules.DivergenceRule` instances (default: every rule the cases name).
    Columns: ``reruns`` (bodies that run again), ``evictions`` (cache entries removed),
    ``stale_reuses`` (reuses of records the case marks stale — correctness failures), ``calls``
    (durable calls executed again), ``crashed``, ``passed`` (the case's expectation for that rule
    when it has one, else "no stale reuse"; see ``expected``). Pivot with
    ``frame.pivot(index="rule", columns="case", values="reruns")``. Call-level cases are skipped.
    """
    from agent_inspect.rules._cases_build import build_case
    from agent_inspect.rules._cases_run import expectation_rules, run_case

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
