"""Regressions for spec-fidelity bugs of the recovery engine: the replay window of the default plan,
undecodable records in the rebuild, K2 restore failures."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from recovery_logs import LogBuilder, inp, work  # noqa: E402

from agent_inspect.executor import ReplayExecutor, StepKind  # noqa: E402
from agent_inspect.recovery import ReplayPlan, predict, reconstruct  # noqa: E402
from agent_inspect.rules import compare  # noqa: E402


def n04() -> LogBuilder:
    b = LogBuilder()
    (w,) = b.run("k", 5, "IA", inp("A", "a1"), outs=[work("a", "w1")])
    b.run("k", 5, "WA", w, upstream="a1")
    (w,) = b.run("k", 6, "IA", inp("B", "b1"), outs=[work("b", "w2")])
    b.run("k", 6, "WA", w, upstream="b1")
    return b


def _round6_marker(log) -> dict[int, int]:
    recs = log.records
    return {0: int(recs[recs["seq"] == 6]["offset"].min())}


def test_default_plan_replays_only_the_inputs_after_the_markers():
    log = n04().log()
    marker = _round6_marker(log)
    plan = ReplayPlan.from_log(log, markers=[marker])
    assert [i.display for i in plan.inputs] == ["B"] and plan.restored_seq == {"k": 5}
    assert [i.display for i in ReplayPlan.from_log(log).inputs] == ["A", "B"]
    assert [i.display for i in ReplayPlan.from_log(log, markers=[{1: 0}]).inputs] == []   # no marker partition
    p = predict(log, rule="fixed", markers=[marker])
    assert list(zip(p.tasks["seq"], p.tasks["outcome"])) == [(6, "REUSE"), (6, "REUSE")]
    ex = ReplayExecutor(log, rule="fixed", markers=[marker])
    ex.run()
    assert [(s.seq, s.outcome) for s in ex.step_list if s.kind is StepKind.LOOKUP] == [(6, "REUSE"), (6, "REUSE")]
    frame = compare(log, ["original", "fixed"], markers=[marker])
    assert len(frame) == 2 and (frame["reruns"] == 0).all()
    r = reconstruct(log, rule="fixed", markers=[marker])
    assert set(r.records.loc[r.records["seq"] == 5, "status"]) == {"outside"}
    assert r.records.loc[r.records["seq"] == 5, "outcome"].isna().all()
