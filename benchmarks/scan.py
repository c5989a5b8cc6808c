"""Fleet-scan benchmark: ai.scan on a Dask LocalCluster against one process, measured in one run.

Starts a tansu broker on 127.0.0.1, writes a fleet topic (``ai.samples.fleet_records``: per key three rounds
of plan → call_tool (a durable call) → answer, a branch change on every 10th key; K1.5 keys, V3 values)
of N records to P partitions, then measures

- ``scan_vs_single``: ``ai.load_kafka`` + the scan's per-key analysis (``agent_inspect.scan.key_frame``:
  reconstruct, predict and lints under ``original`` and ``fixed``) in this one process, against
  ``ai.scan`` of the same topic on a LocalCluster with as many worker processes as cores
  (ratio = single s / scan s; target >= 0.9). Also reported for 1 and 2 workers.
- ``client_rss``: the peak RSS growth of this (the client) process during a scan of the large topic,
  divided by that during a scan of the small one (sampled every 10 ms; target <= 1.5: the client holds
  per-key rows, never records).
- ``per_record_cost``: the scan's seconds per record on the large topic against the small one (target <= 1.3);
  ``cpu_ratio`` is the same from the workers' CPU seconds (steady on a busy machine).

    .venv/bin/python benchmarks/scan.py                                   # 200k and 2M records (many minutes)
    .venv/bin/python benchmarks/scan.py --small 20000 --large 200000      # quick run

The last line is a JSON array: ``name``, ``ratio``, ``target``, ``better`` ("higher"/"lower") and the figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import psutil  # noqa: E402 - a dependency of dask distributed
from load import produce  # noqa: E402 - bulk writes with a single-record last batch per partition (tansu)

import agent_inspect as ai  # noqa: E402
from agent_inspect.scan import key_frame  # noqa: E402
from tests.support.tansu import create_topic, start_tansu  # noqa: E402

TARGETS = {"scan_vs_single": (0.9, "higher"), "client_rss": (1.5, "lower"), "per_record_cost": (1.3, "lower")}


def fleet(n: int, seed: int) -> list[tuple[str, bytes]]:
    keys = max(1, n // 18)
    out = list(ai.samples.fleet_records(keys + keys // 50 + 1, rounds=3, branch_every=10, seed=seed))
    return out[:n]


class PeakRss:
    """Samples this process's RSS in a thread; ``growth`` is the peak above the RSS at start."""

    def __init__(self) -> None:
        self.proc = psutil.Process()
        self.base = self.peak = self.proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, self.proc.memory_info().rss)

    def __enter__(self) -> PeakRss:
        gc.collect()
        self.base = self.peak = self.proc.memory_info().rss
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)

    @property
    def growth(self) -> int:
        return self.peak - self.base


def _worker_cpu() -> float:
    times = psutil.Process().cpu_times()
    return times.user + times.system


def cluster_cpu(client: object) -> float:
    """CPU seconds the cluster's worker processes have used so far (steady on a busy machine)."""
    return sum(client.run(_worker_cpu).values())  # type: ignore[attr-defined]


def timed_scan(url: str, client: object) -> tuple[float, int, object]:
    with PeakRss() as rss:
        cpu0 = cluster_cpu(client)
        t0 = time.perf_counter()
        result = ai.scan(url, client=client)
        seconds = time.perf_counter() - t0
        cpu = cluster_cpu(client) - cpu0
    assert result.complete, result.failures
    CPU[id(result)] = cpu
    return seconds, rss.growth, result


CPU: dict[int, float] = {}  # worker CPU seconds of each scan result


def single(bootstrap: str, topic: str) -> tuple[float, object]:
    t0, c0 = time.perf_counter(), time.process_time()
    log = ai.load_kafka(bootstrap, topic, progress=False)
    keys = key_frame(log, rules=("original", "fixed"))
    seconds = time.perf_counter() - t0
    CPU[0] = time.process_time() - c0
    del log
    gc.collect()
    return seconds, keys


def main(argv: list[str] | None = None) -> int:
    from distributed import Client, LocalCluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=200_000)
    parser.add_argument("--large", type=int, default=2_000_000)
    parser.add_argument("--partitions", type=int, default=16)
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    results = []
    broker = start_tansu(log_path=Path("/tmp") / f"tansu-scan-bench-{os.getpid()}.log")
    try:
        topics = {}
        for n in (args.small, args.large):
            t0 = time.perf_counter()
            records = fleet(n, seed=n)
            topic = create_topic(broker.bootstrap, args.partitions)
            produce(broker.bootstrap, topic, records, args.partitions)
            del records
            gc.collect()
            topics[n] = topic
            print(f"topic of {n:,} records over {args.partitions} partitions written in "
                  f"{time.perf_counter() - t0:.0f}s", flush=True)
        url = {n: f"kafka://{broker.bootstrap}/{t}" for n, t in topics.items()}

        single_s, single_keys = single(broker.bootstrap, topics[args.small])
        print(f"single process, {args.small:,} records: {single_s:.1f}s", flush=True)
        by_workers = {}
        for workers in sorted({1, 2, cores}):
            with LocalCluster(n_workers=workers, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                              scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}, silence_logs=40) as cluster, Client(cluster) as client:
                client.wait_for_workers(workers)
                s, growth, result = timed_scan(url[args.small], client)
                by_workers[workers] = (s, growth, result)
                print(f"scan, {workers} worker(s), {args.small:,} records: {s:.1f}s (client RSS +{growth / 2**20:.0f} MiB)",
                      flush=True)
                if workers == cores:
                    got = result.keys.set_index("business_key").sort_index()
                    want = single_keys.set_index("business_key").sort_index()
                    identical = bool(got[want.columns].astype(str).equals(want.astype(str)))
                    print(f"per-key frames of scan and single process identical: {identical}", flush=True)
                    large_s, large_growth, large = timed_scan(url[args.large], client)
                    large_cpu, small_cpu = CPU[id(large)], CPU[id(result)]
                    print(f"scan, {workers} worker(s), {args.large:,} records: {large_s:.1f}s "
                          f"(client RSS +{large_growth / 2**20:.0f} MiB)", flush=True)
                    assert int(large.partitions["records"].sum()) == args.large
        small_s, small_growth, _ = by_workers[cores]
        results.append({"name": "scan_vs_single", "ratio": round(single_s / small_s, 3),
                        "target": TARGETS["scan_vs_single"][0], "better": "higher", "records": args.small,
                        "workers": cores, "single_s": round(single_s, 2), "scan_s": round(small_s, 2),
                        "single_cpu_s": round(CPU[0], 2), "scan_worker_cpu_s": round(small_cpu, 2),
                        "identical_keys": identical,
                        "by_workers": {str(w): round(single_s / s, 3) for w, (s, _, _) in by_workers.items()}})
        results.append({"name": "client_rss", "ratio": round(large_growth / max(small_growth, 1), 3),
                        "target": TARGETS["client_rss"][0], "better": "lower",
                        "small_mib": round(small_growth / 2**20, 1), "large_mib": round(large_growth / 2**20, 1),
                        "records": [args.small, args.large]})
        results.append({"name": "per_record_cost",
                        "ratio": round((large_s / args.large) / (small_s / args.small), 3),
                        "target": TARGETS["per_record_cost"][0], "better": "lower",
                        "cpu_ratio": round((large_cpu / args.large) / (small_cpu / args.small), 3),
                        "small_us_per_record": round(small_s / args.small * 1e6, 1),
                        "large_us_per_record": round(large_s / args.large * 1e6, 1),
                        "records": [args.small, args.large], "workers": cores})
    finally:
        broker.stop()
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
