"""ai.scan of a multi-partition topic in the real tansu broker: the same per-key outcomes as load + predict,
read-only, and a reopenable Parquet output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _scan_reference import compared, reference

import agent_inspect as ai
from tests.support.tansu import consumer_groups, create_topic, produce_like_upstream

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def fleet_topic(kafka_bootstrap: str) -> str:
    """The production sample (4 partitions, K1.5) followed by a small fleet, written like upstream."""
    log = ai.load(ai.samples.path("production", "jsonl"))
    records = [(k.decode(), v) for k, v in zip(log.raw.key, log.raw.value)]
    records += list(ai.samples.fleet_records(40, rounds=2, branch_every=5, seed=3))
    topic = create_topic(kafka_bootstrap, 4)
    produce_like_upstream(kafka_bootstrap, topic, records, num_partitions=4)
    return topic


def test_kafka_scan_equals_load_and_predict(kafka_bootstrap: str, fleet_topic: str, dask_client: Any,
                                            tmp_path: Path) -> None:
    url = f"kafka://{kafka_bootstrap}/{fleet_topic}"
    groups = consumer_groups(kafka_bootstrap)
    out = tmp_path / "out"
    result = ai.scan(url, client=dask_client, output=out)
    left = consumer_groups(kafka_bootstrap) - groups  # assign + explicit offsets, no commits: no group is left
    assert not [g for g in left if g.startswith("agent-inspect")]
    assert result.complete
    assert sorted(result.partitions["partition"]) == [0, 1, 2, 3]
    log = ai.load_kafka(kafka_bootstrap, fleet_topic, progress=False)
    assert int(result.partitions["records"].sum()) == len(log)
    got = compared(result)
    pd.testing.assert_frame_equal(got, reference(log, None)[got.columns].astype("int64"))
    # one key again from the scan's output, without Kafka: the same bytes and positions as a filtered load
    key = result.at_risk(1)["business_key"][0]
    again = ai.load(out, business_keys=[key])
    direct = ai.load_kafka(kafka_bootstrap, fleet_topic, business_keys=[key], progress=False)
    assert again.raw.value == direct.raw.value and list(again.records["offset"]) == list(direct.records["offset"])
    assert ai.fleet.ScanResult.open(out).reconstruct(key).records["business_key"].astype(str).eq(key).all()


def test_kafka_scan_with_markers_reads_only_their_windows(kafka_bootstrap: str, fleet_topic: str,
                                                          dask_client: Any) -> None:
    markers = [{0: 5, 2: 0}, {0: 3}]
    result = ai.scan(f"kafka://{kafka_bootstrap}/{fleet_topic}", markers=markers, client=dask_client)
    assert list(result.partitions["partition"]) == [0, 2]
    assert list(result.partitions["start"]) == [3, 0]
    log = ai.load_kafka(kafka_bootstrap, fleet_topic, markers=markers, progress=False)
    got = compared(result)
    pd.testing.assert_frame_equal(got, reference(log, markers)[got.columns].astype("int64"))


def test_scheduler_address_runs_the_same_scan(kafka_bootstrap: str, fleet_topic: str, dask_cluster: Any) -> None:
    url = f"kafka://{kafka_bootstrap}/{fleet_topic}"
    result = ai.scan(url, client=dask_cluster.scheduler_address, rule="fixed", what_if=())
    assert result.complete and result.rules == ("fixed",) and result.what_if == ("fixed",)
    totals = result.summary()["fixed"]     # calls_by_function names both durable and sub-agent calls
    assert "fixed_rerun" in result.keys.columns and totals["calls"] + totals["calls_subagent"] == \
        sum(result.calls_by_function("fixed"))
    assert not any(c.startswith("original_") for c in result.keys.columns)
