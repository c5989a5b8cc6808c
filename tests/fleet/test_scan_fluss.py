"""A Fluss table scanned directly: one task per bucket, each reading its own window through the pyfluss
surface the loader uses (the fake of tests/sources, pickled to the worker processes)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from _scan_reference import compared, reference

import agent_inspect as ai
from agent_inspect.fleet import key_frame
from agent_inspect.log import ActionStateLog
from agent_inspect.raw import SourceInfo
from tests.sources._fake_fluss import FakeTable, factory

BUCKETS = 3
URL = "fluss://fluss-host:9123/flink_agents.states"


def _fleet_table() -> FakeTable:
    """A fleet (branch changes on every 10th key) in 3 buckets, agent keys as the store writes them."""
    batches = ai.samples.fleet_batches(60, partitions=BUCKETS, rounds=3, branch_every=10, seed=7)
    buckets: dict[int, list[dict[str, object]]] = {}
    for b, batch in batches.items():
        log = ActionStateLog.from_raw([batch], SourceInfo(kind="fluss", location="x"))
        buckets[b] = [{"state_key": k.decode(), "state_payload": v, "agent_key": str(bk)}
                      for k, v, bk in zip(batch.key, batch.value, log.records["business_key"].astype(object))]
    return FakeTable(buckets=buckets, earliest={1: 5}, batch=50)


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values("business_key").reset_index(drop=True)


@pytest.mark.parametrize("markers", [None, {0: 30, 1: 12, 2: 0}], ids=["whole", "markers"])
def test_per_bucket_scan_equals_single_process(markers: Any, dask_client: Any) -> None:
    table = _fleet_table()
    make = factory({"flink_agents.states": table})
    result = ai.scan(URL, markers=markers, client=dask_client, connection_factory=make)
    assert result.complete, result.failures
    # one task per bucket, each reading [start, latest) of its bucket
    parts = result.partitions.sort_values("partition")
    assert list(parts["partition"]) == list(range(BUCKETS))
    starts = markers or {b: table.first(b) for b in range(BUCKETS)}
    assert list(parts["start"]) == [starts[b] for b in range(BUCKETS)]
    assert list(parts["end"]) == [table.latest(b) for b in range(BUCKETS)]
    # the same log read by the single-process loader: identical per-key outcomes
    log = ai.load(URL, markers=markers, connection_factory=make, progress=False)
    assert int(parts["records"].sum()) == len(log)
    expected = reference(log, markers)
    got = compared(result)
    pd.testing.assert_frame_equal(got, expected[got.columns].astype("int64"))
    # and every column of the per-key frame, not only the outcomes
    whole = key_frame(log, markers=markers)
    pd.testing.assert_frame_equal(_sorted(result.keys), _sorted(whole), check_dtype=False)
    assert result.keys["branch_change"].any() and result.keys["exposed_1301"].any()  # seen per bucket


def test_markers_must_name_every_bucket_before_any_task() -> None:
    make = factory({"flink_agents.states": _fleet_table()})
    with pytest.raises(ai.UnknownPartitionError, match="does not match the buckets"):
        ai.fleet.plan_scan(URL, markers={0: 0, 1: 5}, connection_factory=make)
