"""A recorded failure re-raised during a resume is a replayed call in the trace, as a recorded result is."""

from __future__ import annotations

import agent_inspect as ai


def test_a_failed_llm_call_served_from_its_record_counts_as_replayed() -> None:
    trace = ai.load_trace(ai.samples.path("production_v4", "jsonl").with_name("production_v4.trace.log"))
    calls = ai.trace.calls(trace)
    failed = calls[[("failed" in s) for s in calls["statuses"]]]
    assert len(failed) == 1 and bool(failed["replayed"].iloc[0])          # re-raised within a millisecond
    assert int((~calls["replayed"]).sum()) == 1                           # only the judge ran again
