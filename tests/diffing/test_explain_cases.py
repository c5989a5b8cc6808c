"""Every case file: each predicted RERUN's explanation ends in the cause the case implies.

The implied cause is read from the case file itself, not from the store's events: the case lines
whose records carry the task's state key say whether a record was ever written (no → a miss), whether
any lay in the rebuild window (`window_start`, or the marker of the checkpoint `[setup] restore` names; none →
the window), whether the last one in the window
is a tombstone; otherwise the record was loaded and something removed it — and when an earlier item of
the case's expectation names an eviction or invalidation covering the task's round, made at a lookup,
it is that one (same kind, same bound). A record whose last write in the window is a tombstone was
deleted by it, or removed earlier in the rebuild (then the tombstone finds nothing to delete).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect.cases import build_case, load_cases, run_case

ROOT = Path(__file__).resolve().parents[2]
CASES = [c for c in load_cases(ROOT / "cases") if c.log]
RUNS = [(c, r) for c in CASES for r in sorted(set(c.rules) | {"original", "fixed"})]
_REMOVALS = {"evict", "invalidate", "remove", "prune"}


def _implied(case, built, pred, i, expectation):
    row = pred.tasks.iloc[i]
    records = built.log.records
    positions = records.index[(records["state_key"] == row["state_key"]).fillna(False).to_numpy(bool)].tolist()
    lines = sorted({built.line_of_pos[p] for p in positions})
    by_n = {ln.n: ln for ln in case.log}
    if not lines:
        return {"miss"}, None
    if case.setup.restore is not None:
        # the window is a checkpoint line's marker (issue #12): read it from the markers, refresh rows included
        mask = ai.recovery.window_mask(records, list(built.markers))
        at = {p: i for i, p in enumerate(records.index)}
        inside = sorted({built.line_of_pos[p] for p in positions if mask[at[p]]})
    else:
        inside = [n for n in lines if n >= case.setup.window_start]
    if not inside:
        return {"window"}, None
    if by_n[inside[-1]].status == "TOMB":
        # deleted by the tombstone, or already removed earlier in the rebuild (then the tombstone finds nothing)
        return {"tombstone", "rebuild-removal"}, None
    covering = None
    if expectation is not None:
        dispatched = [x for x in expectation.items if x.outcome != "NOT-DISPATCHED"]
        for item in dispatched[:i]:
            for op in item.ops:
                if op.key not in (None, row["key"]):
                    continue
                if (op.kind == "evict" and row["seq"] > op.bound) or (op.kind == "invalidate" and row["seq"] >= op.bound):
                    covering = op
    return _REMOVALS, covering


@pytest.mark.parametrize(("case", "rule"), RUNS, ids=[f"{c.id}-{r}" for c, r in RUNS])
def test_every_rerun_is_explained_by_the_cause_the_case_implies(case, rule):
    built = build_case(case)
    result = run_case(case, rule, built=built)
    pred = result.prediction
    expectation = case.expect.get(rule) if result.passed and result.expected_given else None
    reruns = [i for i, o in enumerate(pred.tasks["outcome"]) if o == "RERUN"]
    for i in reruns:
        why = ai.diffing.explain(pred, task=i, log=built.log, markers=built.markers)
        cause = why.cause
        assert why.outcome == "RERUN" and why.steps[0].kind == "outcome"
        allowed, covering = _implied(case, built, pred, i, expectation)
        label = result.predicted[i]
        kind = "rebuild-removal" if cause.kind in _REMOVALS and cause.rule_step == "rebuild" and \
            "rebuild-removal" in allowed else cause.kind
        assert kind in allowed, f"{case.id}/{rule} {label}: {why.story()}"
        if cause.kind in _REMOVALS:
            # the chain names the records it removed, and the event really removed this state key
            removed = {e.state_key for e in pred.events[cause.event].removed}
            assert pred.tasks.iloc[i]["state_key"] in removed
            if covering is not None and cause.rule_step == "lookup" and cause.trigger != label.split("=")[0]:
                assert (cause.kind, cause.bound) == (covering.kind, covering.bound), f"{case.id} {label}: {why.story()}"
        if cause.kind == "miss":
            assert "differs in" in cause.detail or "never" in cause.title


def test_the_suite_sees_every_kind_of_cause():
    kinds = set()
    for case, rule in RUNS:
        built = build_case(case)
        pred = run_case(case, rule, built=built).prediction
        for i, o in enumerate(pred.tasks["outcome"]):
            if o == "RERUN":
                kinds.add(ai.diffing.explain(pred, task=i, log=built.log, markers=built.markers).cause.kind)
    assert {"evict", "invalidate", "remove", "miss", "tombstone"} <= kinds
