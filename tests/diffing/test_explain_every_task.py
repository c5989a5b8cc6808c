"""Explaining every task of a prediction (``ai.to_otel`` does, for each span's events) costs the same per task on a
small and a large log: the chain's look-ups across tasks are indexed once per tasks frame, not scanned per task
(a 500-key fleet's export took 33 s, 7.5 s now)."""

from __future__ import annotations

import cProfile
import pstats
from pathlib import Path

import agent_inspect as ai


def _calls_per_task(path: Path, keys: int) -> float:
    log = ai.load(ai.samples.write_fleet(path, keys, partitions=2))
    prediction = ai.predict(log)
    profile = cProfile.Profile()
    profile.enable()
    for i in range(len(prediction.tasks)):
        ai.explain(prediction, task=i, log=log)
    profile.disable()
    return float(pstats.Stats(profile).total_calls) / len(prediction.tasks)   # type: ignore[attr-defined]


def test_explaining_every_task_costs_the_same_per_task_at_8x_the_keys(tmp_path: Path) -> None:
    small, large = _calls_per_task(tmp_path / "small.parquet", 20), _calls_per_task(tmp_path / "large.parquet", 160)
    assert large < 1.1 * small, (small, large)       # it grew with the log: 4,666 → 5,856 calls per task
