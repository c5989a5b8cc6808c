"""Faults during a scan: a worker killed mid-task is retried and changes nothing; a window that cannot be read
is reported in ``.failures`` while the rest of the scan completes."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import agent_inspect as ai


@pytest.fixture(scope="module")
def fleet_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ai.samples.write_fleet(tmp_path_factory.mktemp("fleet") / "fleet.parquet", 1600, partitions=8, seed=5)


def _stable(result: Any) -> pd.DataFrame:
    return result.keys.sort_values("business_key").reset_index(drop=True)


@pytest.mark.slow
def test_killed_worker_mid_scan_is_retried_and_the_result_is_unchanged(fleet_file: Path, dask_client: Any) -> None:
    clean = ai.scan(fleet_file, client=dask_client)
    assert clean.complete and len(clean.partitions) == 8
    pids = dask_client.run(os.getpid)
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = ai.scan(fleet_file, client=dask_client)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            box["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    victim = None
    deadline = time.monotonic() + 60
    while victim is None and time.monotonic() < deadline:
        busy = {w: keys for w, keys in dask_client.processing().items()
                if any(str(k).startswith("agent-inspect-scan-") for k in keys)}
        if busy:
            victim = next(iter(busy))
        else:
            time.sleep(0.05)
    assert victim is not None, "no scan task started"
    os.kill(pids[victim], signal.SIGKILL)  # the nanny starts a new worker; the scheduler reschedules its tasks
    thread.join(300)
    assert not thread.is_alive()
    assert "error" not in box, box.get("error")
    result = box["result"]
    assert result.complete and len(result.partitions) == 8
    assert f":{pids[victim]}" not in " ".join(result.partitions["worker"])  # nothing came from the dead worker
    pd.testing.assert_frame_equal(_stable(result), _stable(clean))
    dask_client.wait_for_workers(2, timeout=60)


def test_a_window_that_fails_for_good_is_in_failures(tmp_path: Path, dask_client: Any) -> None:
    good = tmp_path / "dumps" / "good.parquet"
    bad = tmp_path / "dumps" / "bad.parquet"
    good.parent.mkdir()
    shutil.copy(ai.samples.path("production", "parquet"), good)
    shutil.copy(ai.samples.path("G01", "parquet"), bad)
    plan = ai.fleet.plan_scan(good.parent)
    assert len(plan.windows) == 5  # production's 4 partitions + G01's one
    bad.write_bytes(bad.read_bytes()[:64])  # the dump is truncated after planning (retention, a bad copy…)
    result = ai.scan(plan, client=dask_client, retries=1)
    assert not result.complete
    assert list(result.failures["path"]) == [str(bad)]
    assert "not a readable Parquet file" in result.failures["reason"].iloc[0]
    alone = ai.scan(good, client=dask_client)
    pd.testing.assert_frame_equal(_stable(result), _stable(alone))
    assert ">1 window failed</b>" in result._repr_html_()
