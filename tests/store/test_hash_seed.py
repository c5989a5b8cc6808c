"""Results never follow Python's string hash seed: the same log gives the same answer in every process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# every sample, markers and whole log, both rules: the divergences (with their positions), evictions and outcomes
DIGEST = """
import agent_inspect as ai
for name in ai.samples.SAMPLES:
    log = ai.load(ai.samples.path(name))
    for markers in (None, ai.samples.markers(name)):
        for rule in ("original", "fixed"):
            r = ai.reconstruct(log, markers=markers, rule=rule)
            p = ai.predict(log, markers=markers, rule=rule)
            print(name, rule, r.divergences[["kind", "positions"]].to_dict("records"),
                  r.evictions.to_dict("records"), p.tasks["outcome"].tolist())
"""


def _digest(seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", DIGEST], env=env, capture_output=True, text=True, check=True,
                          cwd=ROOT, timeout=600).stdout


def test_every_sample_answers_alike_under_two_hash_seeds() -> None:
    # the fixed rule's root-conflict positions on the production sample were (81, 79, 196) under some seeds
    first, second = _digest("1"), _digest("2")
    assert "root-conflict" in first and first == second
