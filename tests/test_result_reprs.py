"""Every public result object's repr is one readable line of counts, however big the log: the data stays on its
attributes. ``repr(ReplayPlan)`` was 38 kB on the production sample (every input event), ``repr(Simulation)``
686 kB (every task row); Verification, TraceLog, History, WindowResult and ScanPlan printed whole frames."""

from __future__ import annotations

from typing import Any

import pytest

import agent_inspect as ai

MARKERS = ai.samples.markers("production")


@pytest.fixture(scope="module")
def log() -> Any:
    return ai.load(ai.samples.path("production"))


def _one_line(obj: object, limit: int = 300) -> str:
    text = repr(obj)
    assert "\n" not in text and len(text) <= limit, f"{type(obj).__name__}: {len(text)} chars: {text[:200]}"
    return text


def test_a_replay_plan_reads_as_counts(log: Any) -> None:
    plan = ai.ReplayPlan.from_log(log, markers=MARKERS)
    text = _one_line(plan)
    keys = len({i.key for i in plan.inputs})
    assert text.startswith(f"ReplayPlan({len(plan.inputs)} inputs of {keys} keys, ")
    assert "1 pending task (user-0009)" in text
    assert len(plan.inputs) > 100 and plan.inputs[0].event.type == "_input_event"   # still all there


def test_a_simulation_reads_as_counts(log: Any) -> None:
    r = ai.Recovery.for_log(log, markers=MARKERS)
    sim = ai.recovery.simulate(r.replay_plan(log), ai.agents.AsRecordedAgent.of(log), r.rebuild(log), log=log)
    assert _one_line(sim).startswith(f"Simulation({len(sim.rows)} task rows, ")
    quiet = ai.recovery.simulate(r.replay_plan(log), ai.agents.AsRecordedAgent.of(log), r.rebuild(log), log=log,
                                 rows=False)
    assert _one_line(quiet).startswith(f"Simulation({len(quiet.outcomes)} task outcomes, ")


def test_a_verification_and_its_trace_read_as_counts(log: Any) -> None:
    trace = ai.load_trace(ai.samples.path("production", "trace"))
    assert _one_line(trace).startswith(f"TraceLog({len(trace.records):,} records")
    v = ai.verify(log, trace, markers=MARKERS)
    text = _one_line(v)
    assert text.startswith(f"Verification({v.verdict.value}, ") and "under rule original" in text
    assert f"{v.counts()['agree']} agree" in text


def test_a_history_reads_as_counts(log: Any) -> None:
    h = ai.history.build_history(log)
    assert _one_line(h) == (f"History({len(h.records):,} records, {len(h.executions):,} executions, "
                            f"{len(h.attempts):,} attempts, {len(h.rounds):,} rounds)")


def test_a_scan_plan_and_window_result_read_as_counts() -> None:
    plan = ai.fleet.plan_scan(ai.samples.path("production", "parquet"), MARKERS)
    assert _one_line(plan).startswith("ScanPlan(") and "4 windows" in repr(plan)
    window = ai.fleet.scan_window(plan.spec, plan.windows[0], ai.fleet.ScanOptions())
    text = _one_line(window)
    assert text.startswith(f"WindowResult({window.partition['window']!r}: ")
    assert f"{window.partition['records']:,} records, {len(window.keys)} keys" in text


def test_a_check_report_counts_one_history_in_the_singular() -> None:
    """"2 stale reuses in 1 histories" (and "1 errors"): its counts were written by hand."""
    import pandas as pd

    frame = pd.DataFrame({"tasks": [3, 4], "reused": [1, 2], "resumed": [0, 0], "rerun": [2, 2],
                          "stale_reuses": [2, 0], "tainted_reuses": [1, 0], "avoidable_reruns": [1, 0],
                          "error": [None, None]})
    report = ai.checker.CheckReport(rule="original", n=2, seed=1, options=ai.checker.HistoryOptions(), frame=frame)
    assert _one_line(report) == ("CheckReport(rule original: 2 histories, 7 tasks; 2 stale reuses in 1 history, "
                                 "1 avoidable rerun, 1 tainted reuse, 0 errors)")
