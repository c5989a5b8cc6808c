"""ai.scan on a LocalCluster (2 worker processes) gives the per-key outcomes of single-process predict/reconstruct."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _scan_reference import RULES, compared, reference

import agent_inspect as ai
from agent_inspect.recovery import predict


@pytest.mark.parametrize("name", sorted(ai.samples.SAMPLES))
def test_scan_equals_single_process_on_every_sample(name: str, dask_client: Any) -> None:
    path = ai.samples.path(name, "parquet")
    markers = ai.samples.markers(name)
    result = ai.scan(path, markers=markers, client=dask_client)
    assert result.complete and result.failures.empty
    log = ai.load(path)
    expected = reference(log, markers)
    got = compared(result)
    pd.testing.assert_frame_equal(got, expected[got.columns].astype("int64"))
    assert {c for c in got.columns if "_calls:" in c} == {c for c in expected.columns if "_calls:" in c}
    for rule in RULES:   # the fleet's totals per function are the ledger's, by the name a reader sees
        ledger = predict(log, rule=rule, markers=markers).ledger
        want = ledger[ledger["kind"].isin(("call", "subagent"))].groupby("label", observed=True)["count"].sum()
        assert result.calls_by_function(rule).to_dict() == {f: int(n) for f, n in want.items() if n}
        assert not any("#" in f for f in result.calls_by_function(rule).index), "no raw sub-agent function ids"
    assert result.keys["business_key"].is_unique
    assert int(result.partitions["records"].sum()) == len(log)
    assert sorted(result.partitions["partition"]) == sorted(set(log.records["partition"].astype(int)))


def test_jsonl_dump_and_whole_log_window(dask_client: Any) -> None:
    path = ai.samples.path("production", "jsonl")
    result = ai.scan(path, client=dask_client)
    expected = reference(ai.load(path), None)
    got = compared(result)
    pd.testing.assert_frame_equal(got, expected[got.columns].astype("int64"))


def test_output_reopens_every_key_without_the_source(dask_client: Any, tmp_path: Path) -> None:
    path = ai.samples.path("production", "parquet")
    out = tmp_path / "scan"
    result = ai.scan(path, markers=ai.samples.markers("production"), client=dask_client, output=out)
    assert sorted(p.name for p in out.glob("partition=*")) == [f"partition={p}" for p in range(4)]
    whole = ai.load(path)
    for key in result.at_risk(3)["business_key"]:
        again = ai.load(out, business_keys=[key])
        mine = whole.for_key(key)
        assert again.raw.key == mine.raw.key and again.raw.value == mine.raw.value
        assert list(again.records["offset"]) == list(mine.records["offset"])
    reopened = ai.fleet.ScanResult.open(out)
    pd.testing.assert_frame_equal(reopened.keys, result.keys)
    assert reopened.rules == RULES
    # a scan of the output directory reads its parts, one window per partition, with the same outcomes
    again = ai.scan(out, markers=ai.samples.markers("production"), client=dask_client)
    pd.testing.assert_frame_equal(compared(again), compared(result))
