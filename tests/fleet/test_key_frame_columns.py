"""A key frame under every named rule joins its per-rule columns in one step (no fragmented frame)."""
from __future__ import annotations

import warnings

import pandas as pd

import agent_inspect as ai
from agent_inspect.fleet import key_frame


def test_every_named_rule_builds_one_unfragmented_frame() -> None:
    log = ai.load(ai.samples.path("production_v4", "parquet"))
    rules = tuple(ai.rules.RULES)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.PerformanceWarning)
        frame = key_frame(log, rules=rules, markers=[])
    per_rule = [c for c in frame.columns if c.startswith(tuple(f"{r}_" for r in rules))]
    assert len(per_rule) > 100   # past pandas' fragmentation threshold had they been inserted one by one
    assert frame["business_key"].is_unique and frame["attempts"].ge(0).all()
