"""A prediction exported twice gives the same spans: ids that re-exports, diffs and backends can join on."""

from __future__ import annotations

import agent_inspect as ai


def test_a_prediction_exports_the_same_span_ids_every_time() -> None:
    log, markers = ai.load(ai.samples.path("production")), ai.samples.markers("production")
    first, second = (ai.otel.spans_of(ai.predict(log, markers=markers)) for _ in range(2))
    ids = [s["span_id"] for s in first]
    # re-run tasks get a fresh event id in every predict; their span ids did too
    assert ids == [s["span_id"] for s in second]
    assert len(set(ids)) == len(ids)
