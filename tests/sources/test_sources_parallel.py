"""Parallel loads (on Dask distributed) build exactly the single-process log (records, dtypes, categories, raw,
errors, values)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agent_inspect as ai
from agent_inspect._errors import BrokerUnreachable, SourceError
from agent_inspect.log import ActionStateLog
from agent_inspect.log._parallel import (
    MIN_RECORDS,
    Workers,
    _assemble,
    _partition_bounds,
    _slice,
    plan_workers,
)
from agent_inspect.raw import RawBatch, SourceInfo
from agent_inspect.sources._files import read_file
from agent_inspect.sources._kafka import open_kafka
from tests.support.tansu import create_topic, free_port

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"
_RAW = ("partition", "offset", "timestamp_ms", "key", "value", "agent_key")


def assert_same_log(a: ActionStateLog, b: ActionStateLog) -> None:
    pd.testing.assert_frame_equal(a.records, b.records, check_exact=True)
    assert list(a.records.dtypes) == list(b.records.dtypes)
    for name in a.records.columns:
        if isinstance(a.records[name].dtype, pd.CategoricalDtype):
            pd.testing.assert_index_equal(a.records[name].cat.categories, b.records[name].cat.categories,
                                          exact=True)
    assert [getattr(a.raw, f) for f in _RAW] == [getattr(b.raw, f) for f in _RAW]
    pd.testing.assert_frame_equal(a.errors, b.errors)
    for pos in range(0, len(a), max(1, len(a) // 50)):
        try:
            va = a.value(pos)
        except ai.InspectError as exc:
            with pytest.raises(type(exc)):
                b.value(pos)
            continue
        assert va == b.value(pos)


def _positioned_samples() -> list[Path]:
    return sorted(p for p in SAMPLES.iterdir() if p.name.startswith(("production", "subagents"))
                  and p.suffix in (".jsonl", ".parquet"))


@pytest.fixture(scope="module")
def dask_client() -> Any:
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None,
                      scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}, silence_logs=40) as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(2, timeout=60)
        yield client


@pytest.fixture
def loads_on_the_module_cluster(monkeypatch: pytest.MonkeyPatch, dask_client: Any) -> None:
    """``ai.load_file(..., workers=2)`` builds on the module's 2-process LocalCluster instead of starting one per
    load (5-8 s each); test_load_with_workers_starts_and_closes_its_own_local_cluster holds that start and close."""
    from agent_inspect.log import _load

    def workers(processes: int, *, client: Any = None) -> Workers:
        return Workers(processes, client=client if client is not None or processes < 2 else dask_client)

    monkeypatch.setattr(_load, "Workers", workers)


@pytest.mark.parametrize("path", _positioned_samples(), ids=lambda p: p.name)
def test_file_loads_agree_across_worker_counts(path: Path, loads_on_the_module_cluster: None) -> None:
    assert_same_log(ai.load_file(path, workers=1), ai.load_file(path, workers=2))


def test_worker_processes_build_the_same_log(dask_client: Any) -> None:
    from distributed import get_task_stream

    for name in ("production.jsonl", "production_k1.kcat.jsonl"):
        read = read_file(SAMPLES / name)
        single = ActionStateLog.from_raw([read.batch], read.source)
        with get_task_stream(client=dask_client) as stream, Workers(2, client=dask_client) as pool:
            assert_same_log(single, pool.build([read.batch], read.source))
        assert sum(str(t["key"]).startswith("agent-inspect-load-") for t in stream.data) >= 2  # parts built there
        assert pool._given is dask_client and dask_client.status == "running"  # a given client stays open


def _reshuffled(seed: int, parts: int) -> RawBatch:
    """The production sample with records spread over partitions at random: keys span partitions."""
    read = read_file(SAMPLES / "production.jsonl")
    rng = random.Random(seed)
    b = read.batch
    return RawBatch([rng.randrange(parts) for _ in b.partition], list(b.offset), list(b.timestamp_ms),
                    list(b.key), list(b.value))


@settings(deadline=None, max_examples=15)
@given(seed=st.integers(0, 10_000), parts=st.integers(1, 6), cuts=st.integers(1, 6))
def test_parts_of_whole_partitions_assemble_to_the_one_piece_build(seed: int, parts: int, cuts: int) -> None:
    raw = _reshuffled(seed, parts)
    source = SourceInfo(kind="file", location="mem")
    single = ActionStateLog.from_raw([raw], source)
    bounds = _partition_bounds(single.raw.partition)
    step = max(1, len(bounds) // cuts)
    groups = [bounds[i:i + step] for i in range(0, len(bounds), step)]
    pieces = [_slice(single.raw, g[0][0], g[-1][1]) for g in groups]
    built = [(ActionStateLog.from_raw([p], source).records, p) for p in pieces]
    assert_same_log(single, _assemble(built, source))


def test_plan_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_inspect.log import _parallel

    assert plan_workers(1, 10**9) == 1
    assert plan_workers(3, 0) == 3
    monkeypatch.setattr(_parallel, "_cores", lambda: 4)
    monkeypatch.setattr(_parallel, "_load", lambda: 0.2)
    assert plan_workers(None, MIN_RECORDS - 1) == 1
    assert plan_workers(None, MIN_RECORDS) == 4
    monkeypatch.setattr(_parallel, "_load", lambda: 2.7)  # about one idle core: no worker would help
    assert plan_workers(None, MIN_RECORDS) == 1
    monkeypatch.setattr(_parallel, "_load", lambda: 1.2)
    assert plan_workers(None, MIN_RECORDS) == 3
    monkeypatch.setattr(_parallel, "_cores", lambda: 1)
    monkeypatch.setattr(_parallel, "_load", lambda: 0.0)
    assert plan_workers(None, 10**9) == 1
    for bad in (0, -1, True, 2.0, "2"):
        with pytest.raises(SourceError, match="workers must be"):
            plan_workers(bad, 0)  # type: ignore[arg-type]


def _produce(bootstrap: str, topic: str, raw: RawBatch) -> None:
    """Bulk writes, each partition's last record alone (tansu's "latest" offset is right then)."""
    from confluent_kafka import Producer

    last = {p: i for i, p in enumerate(raw.partition)}
    tail = set(last.values())
    bulk = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    for i in range(len(raw)):
        if i not in tail:
            bulk.produce(topic, key=raw.key[i], value=raw.value[i], partition=raw.partition[i],
                         timestamp=raw.timestamp_ms[i] or 0)
    assert bulk.flush(30) == 0
    single = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})
    for i in sorted(tail):
        single.produce(topic, key=raw.key[i], value=raw.value[i], partition=raw.partition[i],
                       timestamp=raw.timestamp_ms[i] or 0)
        assert single.flush(30) == 0


@pytest.fixture(scope="module")
def production_topic(kafka_bootstrap: str) -> str:
    raw = read_file(SAMPLES / "production.jsonl").batch
    topic = create_topic(kafka_bootstrap, 4)
    _produce(kafka_bootstrap, topic, raw)
    return topic


@pytest.fixture(scope="module")
def shuffled_topic(kafka_bootstrap: str) -> str:
    topic = create_topic(kafka_bootstrap, 3)
    _produce(kafka_bootstrap, topic, _reshuffled(5, 3))
    return topic


@pytest.mark.parametrize("which", ["production_topic", "shuffled_topic"])
def test_kafka_loads_agree_across_worker_counts(kafka_bootstrap: str, which: str, request: pytest.FixtureRequest,
                                                monkeypatch: pytest.MonkeyPatch, dask_client: Any) -> None:
    from agent_inspect.log import _parallel

    topic = request.getfixturevalue(which)
    single = ai.load_kafka(kafka_bootstrap, topic, progress=False, workers=1)
    assert len(single) > 900
    assert_same_log(single, ai.load_kafka(kafka_bootstrap, topic, progress=False, workers=2))

    class Bar:  # the one progress bar of a parallel load counts every process's records
        def __init__(self, **options: object) -> None:
            self.total, self.count, self.closed = options["total"], 0, False

        def update(self, n: int) -> None:
            self.count += n

        def close(self) -> None:
            self.closed = True

    bars: list[Bar] = []
    monkeypatch.setattr(_parallel, "progress_bar", lambda **o: bars.append(Bar(**o)) or bars[-1])
    _, info = open_kafka(kafka_bootstrap, topic, progress=False)
    with Workers(2, client=dask_client) as pool:
        log = pool.load_kafka({"bootstrap.servers": kafka_bootstrap}, topic, info, keys=None, timeout=10,
                              progress=True)
    assert_same_log(single, log)
    (bar,) = bars
    assert bar.total == bar.count == len(log) and bar.closed


def test_kafka_business_key_filter_in_workers(kafka_bootstrap: str, production_topic: str, dask_client: Any) -> None:
    keys = ai.load_kafka(kafka_bootstrap, production_topic, progress=False, workers=1).keys()[:3]
    single = ai.load_kafka(kafka_bootstrap, production_topic, progress=False, workers=1, business_keys=keys)
    _, info = open_kafka(kafka_bootstrap, production_topic, progress=False, business_keys=keys)
    with Workers(2, client=dask_client) as pool:
        log = pool.load_kafka({"bootstrap.servers": kafka_bootstrap}, production_topic, info, keys=keys,
                              timeout=10, progress=False)
    assert_same_log(single, log)
    assert set(log.keys()) == set(keys)


def test_worker_errors_are_the_same_one_line_errors_and_close_the_cluster(kafka_bootstrap: str,
                                                                          production_topic: str) -> None:
    _, info = open_kafka(kafka_bootstrap, production_topic, progress=False)
    closed = f"127.0.0.1:{free_port()}"  # every share times out on a closed port, on the workers
    pool = Workers(2)
    with pool, pytest.raises(BrokerUnreachable) as caught:
        pool.load_kafka({"bootstrap.servers": closed}, production_topic, info, keys=None, timeout=1,
                        progress=False)
    message = str(caught.value)
    assert "\n" not in message and ("did not answer" in message or "stopped answering" in message)
    assert pool.closed and pool._cluster is None and pool._client is None


def test_bad_workers_option_fails_before_io() -> None:
    with pytest.raises(SourceError, match="workers must be"):
        ai.load_kafka("127.0.0.1:1", "t", workers=0)
    with pytest.raises(SourceError, match="workers must be"):
        ai.load_file(SAMPLES / "production.jsonl", workers=0)


def test_an_interrupt_cancels_the_tasks_and_closes_the_local_cluster(kafka_bootstrap: str, production_topic: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_inspect.log import _parallel

    class Interrupting:
        def update(self, n: int) -> None:
            raise KeyboardInterrupt  # Ctrl-C as the first part comes back

        def close(self) -> None:
            pass

    monkeypatch.setattr(_parallel, "progress_bar", lambda **o: Interrupting())
    _, info = open_kafka(kafka_bootstrap, production_topic, progress=False)
    pool = Workers(2)
    cluster = None
    with pool, pytest.raises(KeyboardInterrupt):
        pool.dask()
        cluster = pool._cluster
        pool.load_kafka({"bootstrap.servers": kafka_bootstrap}, production_topic, info, keys=None, timeout=10,
                        progress=True)
    assert cluster is not None and cluster.status.name == "closed" and pool.closed


def test_load_with_workers_starts_and_closes_its_own_local_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    import distributed

    started: list[Any] = []
    real = distributed.LocalCluster

    def spy(*args: Any, **kwargs: Any) -> Any:
        started.append(real(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(distributed, "LocalCluster", spy)
    path = SAMPLES / "production.jsonl"
    assert_same_log(ai.load_file(path, workers=1), ai.load_file(path, workers=2))
    (cluster,) = started
    assert cluster.status.name == "closed"
    assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
