"""ai.scan on a LocalCluster (2 worker processes) gives the per-key outcomes of single-process predict/reconstruct."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import agent_inspect as ai
from agent_inspect.recovery import predict, reconstruct

RULES = ("original", "fixed")
OUTCOMES = {"REUSE": "reused", "RESUME": "resumed", "RERUN": "rerun", "FAIL": "failed"}


def reference(log: Any, markers: Any, rules: tuple[str, ...] = RULES) -> pd.DataFrame:
    """Per business key, straight from single-process predict/reconstruct on the whole log."""
    rows: dict[str, dict[str, Any]] = defaultdict(dict)
    recs = log.records[log.records["business_key"].notna()]
    for k, g in recs.groupby(recs["business_key"].astype(str), observed=True):
        rows[k].update(records=len(g), rounds=int(g["seq"].nunique()))
    for rule in rules:
        recon = reconstruct(log, rule=rule, markers=markers)
        att = pd.to_numeric(recon.records["attempt"], errors="coerce").groupby(
            log.records["business_key"].astype(object)).max()
        for k in rows:
            rows[k]["attempts"] = int(att.get(k, 0) if pd.notna(att.get(k, 0)) else 0)
        pred = predict(log, rule=rule, markers=markers)
        counts: dict[str, Counter[str]] = defaultdict(Counter)
        for k, outcome in zip(pred.tasks["business_key"].astype(object), pred.tasks["outcome"].astype(object)):
            counts[str(k)][str(outcome)] += 1
        removed: Counter[str] = Counter()
        for e in pred.events:
            if e.op not in ("delete", "supersede"):
                for entry in e.removed:
                    removed[str(entry.business_key)] += 1
        calls = pred.ledger[pred.ledger["kind"] == "call"].groupby("key", observed=True)["count"].sum()
        for k in rows:
            for outcome, col in OUTCOMES.items():
                rows[k][f"{rule}_{col}"] = counts[k][outcome]
            rows[k][f"{rule}_evictions"] = removed[k]
            rows[k][f"{rule}_calls"] = int(calls.get(k, 0))
    return pd.DataFrame.from_dict(rows, orient="index").sort_index()


def compared(result: Any, rules: tuple[str, ...] = RULES) -> pd.DataFrame:
    cols = ["records", "rounds", "attempts"] + [f"{r}_{c}" for r in rules
                                                for c in (*OUTCOMES.values(), "evictions", "calls")]
    frame = result.keys.set_index("business_key")[cols].sort_index()
    frame.index.name = None
    return frame.astype("int64")


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
    reopened = ai.scan.ScanResult.open(out)
    pd.testing.assert_frame_equal(reopened.keys, result.keys)
    assert reopened.rules == RULES
    # a scan of the output directory reads its parts, one window per partition, with the same outcomes
    again = ai.scan(out, markers=ai.samples.markers("production"), client=dask_client)
    pd.testing.assert_frame_equal(compared(again), compared(result))
