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


def _refreshed_then_restarted() -> ai.ActionStateLog:
    """A 0.4 log: round 5's input handled under action UUID U1, a checkpoint re-appending that state byte for byte,
    then the same input under U2 (a Java action's hash-based UUID). Read without the refresh row it is one attempt
    (no lint); read as writes (0.3) the refresh row starts attempt 2, which holds U1 and U2 (no lint either)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "recovery"))
    from recovery_logs import LogBuilder, inp, work

    u1, u2 = "0d6d1c4e-7e39-3b7b-9d8e-1a2b3c4d5e6f", "1d6d1c4e-7e39-3b7b-9d8e-1a2b3c4d5e6f"
    b = LogBuilder(fmt="K1")
    b.run("j", 5, "IA", inp("A", "p1"), action_uuid=u1, outs=[work("a")])     # outputs with lineage: 0.4
    last = len(b.batch) - 1
    part = b.batch.partition[last]
    off = b.offsets[part]
    b.offsets[part] = off + 1
    b.batch.append(part, off, 1_700_000_000_000 + off, b.batch.key[last], b.batch.value[last])   # the refresh row
    b.run("j", 5, "IA", inp("A", "p1"), action_uuid=u2, outs=[work("a")])
    return b.log()


@pytest.mark.parametrize("runtime", ["auto", "0.3", "0.4"])
def test_key_frame_lint_flags_read_the_log_under_the_runtime_given(runtime: str) -> None:
    # the flags are the lints of a reconstruction under the same runtime; read as 0.3, the frame's lints used
    # 0.3's attempts over the rows left without 0.4's refresh rows, a reading of neither ("action-uuid-unstable")
    log = _refreshed_then_restarted()
    assert len(ai.history.refresh_rows(log)) == 1
    frame = ai.fleet.key_frame(log, rules=("original",), runtime=runtime).set_index("business_key")
    given = {} if runtime == "auto" else {"runtime": runtime}
    lints = ai.reconstruct(log, **given).lints
    assert frame.loc["j", "lint_flags"] == ",".join(sorted(set(lints["lint"]))) == ""


def test_a_scan_window_infers_its_runtime_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The window's row and its keys' predictions read the runtime from one inference: it was inferred again
    for the row after the key frame ran (twice the records scanned, and two answers that could part)."""
    import agent_inspect.log._runtime as runtime_module

    calls: list[object] = []
    infer = runtime_module.infer_runtime

    def counted(log: object) -> ai.log.RuntimeInfo:
        calls.append(log)
        return infer(log)   # type: ignore[arg-type]

    monkeypatch.setattr(runtime_module, "infer_runtime", counted)
    plan = ai.fleet.plan_scan(str(ai.samples.path("production_v4")))
    result = ai.fleet.scan_window(plan.spec, plan.windows[0], ai.fleet.ScanOptions(rules=("original",)))
    assert len(calls) == 1 and result.partition["runtime"] == "main"
