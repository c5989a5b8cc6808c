"""A Dask LocalCluster for the scan tests: 2 worker processes on 127.0.0.1, no dashboard, closed at the end."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def dask_cluster() -> Iterator[Any]:
    from distributed import LocalCluster

    # no dashboard; the scheduler's health routes on a free 127.0.0.1 port (not 8787, which others may hold)
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                           silence_logs=40)
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture()
def dask_client(dask_cluster: Any) -> Iterator[Any]:
    from distributed import Client

    client = Client(dask_cluster)
    try:
        client.wait_for_workers(2, timeout=60)
        yield client
    finally:
        client.close()
