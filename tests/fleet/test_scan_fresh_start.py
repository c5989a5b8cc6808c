"""A scan of a fresh start (``markers=[]``: no checkpoint, the cache starts empty) predicts a fresh start, as
``predict`` does; it scanned the whole log (``[]`` merged to None, which reads as "no markers: the whole log")."""

from __future__ import annotations

from typing import Any

import pytest

import agent_inspect as ai


@pytest.mark.parametrize("name", ["G01", "N04"])
def test_a_fresh_start_scan_reruns_what_predict_reruns(name: str, dask_client: Any) -> None:
    path = ai.samples.path(name, "parquet")
    log = ai.load(path)
    fresh = ai.predict(log, markers=[]).tasks["outcome"].astype(str).value_counts().to_dict()
    whole = ai.predict(log).tasks["outcome"].astype(str).value_counts().to_dict()
    assert fresh != whole and "REUSE" not in fresh
    result = ai.scan(path, markers=[], client=dask_client)
    assert result.markers == {}
    keys = result.keys
    assert int(keys["original_rerun"].sum()) == fresh.get("RERUN", 0)
    assert int(keys["original_reused"].sum()) == 0
    frame = ai.fleet.key_frame(log, markers={})
    assert frame["original_rerun"].sum() == fresh.get("RERUN", 0) and frame["original_reused"].sum() == 0
    assert ai.scan(ai.fleet.plan_scan(path, markers=[]), client=dask_client).markers == {}
    assert result.reconstruct(str(keys["business_key"].iloc[0])).markers == {}   # a fresh start, not None
