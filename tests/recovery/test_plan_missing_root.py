"""A round whose root record is missing from the log (compacted away, a damaged line): the plan built from the
log keeps the key's later rounds at their own seqNums (spec §9.2: the operator counts inputs, not records)."""

from __future__ import annotations

from pathlib import Path

import pytest

import agent_inspect as ai
from tests.support.huge_seq import n04_with_seq

KEY = "user-0008"


def _without_root(tmp_path: Path, seq: int) -> tuple[ai.ActionStateLog, ai.ActionStateLog]:
    src = ai.samples.path("production")
    log = ai.load(src)
    recs = log.records
    roots = recs[(recs["business_key"] == KEY) & (recs["seq"] == seq) & recs["is_root"].fillna(False).astype(bool)]
    assert len(roots)
    lines = Path(src).read_text().splitlines()
    dropped = set(roots.index.tolist())
    out = tmp_path / "missing-root.jsonl"
    out.write_text("".join(line + "\n" for i, line in enumerate(lines) if i not in dropped))
    return log, ai.load(out)


def _numbered(plan: ai.ReplayPlan) -> list[tuple[str, int]]:
    from agent_inspect.recovery.engine import PlanView

    view = PlanView(plan)
    list(view.restored_rounds())
    return [(i.display, view.next_seq(i.key, i.seq)) for i in plan.inputs if i.key == KEY]


@pytest.mark.parametrize("with_markers", [True, False])
def test_later_rounds_keep_their_seq_when_a_root_is_missing(tmp_path: Path, with_markers: bool) -> None:
    markers = ai.samples.markers("production") if with_markers else None
    full, damaged = _without_root(tmp_path, 1)
    expected = [(text, seq) for text, seq in _numbered(ai.ReplayPlan.from_log(full, markers=markers)) if seq != 1]
    plan = ai.ReplayPlan.from_log(damaged, markers=markers)
    assert _numbered(plan) == expected
    assert not [t for t in plan.pending if t.key == KEY]      # round 1 is no in-flight round of the checkpoint
    assert any(KEY in n and "no root" in n for n in plan.notes), plan.notes


def test_prediction_reads_the_later_rounds_own_records(tmp_path: Path) -> None:
    markers = ai.samples.markers("production")
    full, damaged = _without_root(tmp_path, 1)
    cols = ["seq", "input", "action", "outcome"]
    before = ai.predict(full, markers=markers).tasks
    after = ai.predict(damaged, markers=markers).tasks
    mine = before[(before["key"] == KEY) & (before["seq"] > 1) & (before["outcome"] != "NOT-DISPATCHED")]
    got = after[(after["key"] == KEY) & (after["seq"] > 1) & (after["outcome"] != "NOT-DISPATCHED")]
    assert got[cols].reset_index(drop=True).equals(mine[cols].reset_index(drop=True))


def test_a_damaged_seq_far_past_the_key_s_rounds_is_counted_not_listed(tmp_path: Path) -> None:
    # round 6 of N04 written with seq 2^40: the gap was listed seq by seq (MemoryError, or the kernel killed)
    out = n04_with_seq(tmp_path, 1 << 40)
    log = ai.load(out)
    plan = ai.ReplayPlan.from_log(log)
    gap = (1 << 40) - 6
    assert [n for n in plan.notes if "no root" in n] == [
        f"{gap:,} rounds (k@6, k@7, k@8 and {gap - 3:,} more) of the window have no root record in the log "
        "(compacted away or unreadable): not replayed, as its input is unknown; the key's later rounds keep "
        "their own seqNums"]
    assert sorted(ai.predict(log).tasks["seq"].unique().tolist()) == [5, 1 << 40]
