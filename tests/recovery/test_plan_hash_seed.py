"""A replay plan is the same in every process: the keys a checkpoint's retained rounds add to
``restored_seq`` come in one order, not in the order of a set under the process's hash seed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PLAN = """
import agent_inspect as ai
log = ai.load(ai.samples.path("production_v4"))
plan = ai.ReplayPlan.from_log(log, markers=ai.samples.markers("production_v4"))
print(list(plan.restored_seq.items()), [(i.key, i.seq) for i in plan.inputs], len(plan.pending))
"""


def _plan_under(seed: int) -> str:
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", PLAN], env=env, capture_output=True, text=True, timeout=120,
                          check=True)
    return done.stdout


def test_restored_seq_order_does_not_depend_on_the_hash_seed() -> None:
    plans = {_plan_under(seed) for seed in (1, 2, 3, 4)}
    assert len(plans) == 1, plans
