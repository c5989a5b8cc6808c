"""The per-key row sizes ``compact_keys``'s docstring states are what a key frame measures (the client's memory)."""

from __future__ import annotations

import re

import agent_inspect as ai
from agent_inspect.fleet import CALLS_PREFIX, key_frame
from agent_inspect.fleet._task import compact_keys


def _stated(pattern: str) -> int:
    found = re.search(pattern, " ".join((compact_keys.__doc__ or "").split()))
    assert found, pattern
    return int(found.group(1))


def test_the_docstring_states_the_bytes_a_row_measures() -> None:
    frame = key_frame(ai.load(ai.samples.path("production")), rules=("original", "fixed"))
    assert frame["business_key"].str.len().round().mean().round() == 9   # the size the docstring names keys at
    calls = [c for c in frame.columns if CALLS_PREFIX in c]
    assert calls
    used = frame.memory_usage(deep=True, index=False)
    row = (used.sum() - used[calls].sum()) / len(frame)    # the key's string included
    assert abs(row - _stated(r"about (\d+) B for two rules")) <= 5, row
    assert all(used[c] / len(frame) == _stated(r"plus (\d+) B per function column") for c in calls)
    # the same values in 64-bit counts and one string object per text cell
    wide = frame.drop(columns=calls).astype({c: "int64" for c in frame.columns
                                             if c not in calls and str(frame[c].dtype) == "int32"})
    wide = wide.astype({c: object for c in ("lint_flags", "runtime_evidence")})
    against = wide.memory_usage(deep=True, index=False).sum() / len(frame)
    assert abs(against - _stated(r"against (\d+) B")) <= 15, against
