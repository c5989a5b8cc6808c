"""A replay plan is the same in every process: the keys a checkpoint's retained rounds add to
``restored_seq`` come in one order, not in the order of a set under the process's hash seed."""

from __future__ import annotations

from tests.support.seeds import outputs_under_hash_seeds

PLAN = """
import agent_inspect as ai
log = ai.load(ai.samples.path("production_v4"))
plan = ai.ReplayPlan.from_log(log, markers=ai.samples.markers("production_v4"))
print(list(plan.restored_seq.items()), [(i.key, i.seq) for i in plan.inputs], len(plan.pending))
"""


def test_restored_seq_order_does_not_depend_on_the_hash_seed() -> None:
    plans = set(outputs_under_hash_seeds(PLAN, ["1", "2", "3", "4"], timeout=120))
    assert len(plans) == 1, plans
