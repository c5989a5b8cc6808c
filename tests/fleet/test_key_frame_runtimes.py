"""The scan's per-key counts are ``predict``'s under every runtime a user can name, not only the one the log shows:
a V4 (main) log read as 0.3 reused 14 tasks in ``predict`` and none in the key frame, whose replay plan was
inferred under the log's own runtime (0.4+ keeps rounds pending across checkpoints) while its rule ran as 0.3."""

from __future__ import annotations

from collections import Counter

import pytest

import agent_inspect as ai

_COLUMNS = {"reused": "REUSE", "resumed": "RESUME", "rerun": "RERUN", "failed": "FAIL"}


@pytest.mark.parametrize("name", ["production_v4", "subagents_v4", "G02", "N04", "S05"])
@pytest.mark.parametrize("runtime", ["0.3", "0.4", "main"])
def test_key_frame_counts_what_predict_predicts_under_the_runtime_given(name: str, runtime: str) -> None:
    log, markers = ai.load(ai.samples.path(name)), ai.samples.markers(name)
    frame = ai.fleet.key_frame(log, rules=("original",), markers=ai.recovery.normalize_markers(markers),
                               runtime=runtime).set_index("business_key")
    tasks = ai.predict(log, markers=markers, runtime=runtime, rule="original").tasks
    per_key = Counter(zip(tasks["business_key"].astype(str), tasks["outcome"].astype(str)))
    for column, outcome in _COLUMNS.items():
        got = {str(k): int(n) for k, n in frame[f"original_{column}"].items() if n}
        assert got == {k: n for (k, oc), n in per_key.items() if oc == outcome}, column
