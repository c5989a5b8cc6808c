"""``exposed_1301`` is issue #1301's pattern (a round with more than one state before a later round: the upstream
rule evicts the later rounds' saved completions); ``branch_change`` is the conflicting roots its fix must keep
catching. N04 is #1301's own reproduction; G01 is a branch change."""

from __future__ import annotations

import pytest

import agent_inspect as ai
from agent_inspect.fleet import key_frame


@pytest.mark.parametrize(("name", "exposed", "branch"), [("N04", 1, 0), ("G01", 1, 1), ("N08", 0, 0)])
def test_the_scan_marks_1301s_pattern_and_branch_changes_apart(name: str, exposed: int, branch: int) -> None:
    frame = key_frame(ai.load(ai.samples.path(name)) if name in ai.samples.SAMPLES else _case_log(name),
                      rules=["original"])
    assert (int(frame["exposed_1301"].sum()), int(frame["branch_change"].sum())) == (exposed, branch)


def _case_log(case_id: str) -> ai.ActionStateLog:
    case = next(c for c in ai.cases.builtin() if c.id == case_id)
    return ai.cases.build_case(case).log


def test_n04s_reproduction_is_exposed_and_its_later_round_reruns() -> None:
    frame = key_frame(ai.load(ai.samples.path("N04")), markers=ai.samples.markers("N04"))
    row = frame.iloc[0]
    # the upstream rule re-runs the second input's two tasks; the fixed rule reuses them
    assert bool(row["exposed_1301"]) and not bool(row["branch_change"])
    assert (row["original_rerun"], row["fixed_rerun"]) == (2, 0)
