"""Fleet-scan benchmark: ai.scan on a Dask LocalCluster against one process, measured in one run.

Starts a tansu broker on 127.0.0.1, writes a fleet topic (``ai.samples.fleet_records``: per key three rounds
of plan → call_tool (a durable call) → answer, a branch change on every 10th key; K1.5 keys, V3 values)
of N records to P partitions, then measures

- ``scan_vs_single``: ``ai.load_kafka`` + the scan's per-key analysis (``agent_inspect.fleet.key_frame``:
  reconstruct, predict and lints under ``original`` and ``fixed``) in this one process, against
  ``ai.scan`` of the same topic on a LocalCluster with as many worker processes as cores
  (ratio = single s / scan s; target >= 0.9). Also reported for 1 and 2 workers.
- ``client_rss``: the peak RSS growth of the client process during a scan of the large topic, divided by
  that during a scan of the small one (target <= 1.5: the client holds per-key rows, never records). The
  large topic has the small one's business keys with ten times the rounds each (the same key population,
  ten times the records): what the target means. Each scan's client is a fresh process connected to the
  cluster by address (so the scheduler's memory and the heap left by earlier steps are not counted),
  its RSS sampled every 10 ms from just before ``ai.scan`` to its end.
- ``client_rss_keys``: the same at ten times the keys (and records) of the small topic, with the client's
  growth per business key (``bytes_per_key``): the client holds O(keys), so this ratio is about 10.
- ``key_frame_vs_load``: ``agent_inspect.scan.key_frame`` of the 1,111-key fleet file (``ai.samples.write_fleet``)
  against ``ai.load`` of that file, CPU seconds of this process (target <= 8; no broker needed:
  ``--key-frame-only`` measures just this). ``--instructions`` counts it in instructions executed instead, under
  valgrind: steady on a busy machine, so two commits compare in one run each (the ratio of instructions is not
  the ratio of seconds: the key frame chases Python objects and runs fewer instructions a cycle than the load).
- ``per_record_cost``: the scan's seconds per record on the large topic against the small one (target <= 1.3);
  ``cpu_ratio`` is the same from the workers' CPU seconds (steady on a busy machine); ``keys10x`` the
  same figures for the topic with ten times the keys.

    .venv/bin/python benchmarks/scan.py                                   # 200k and 2M records (many minutes)
    .venv/bin/python benchmarks/scan.py --small 20000 --large 200000      # quick run
    .venv/bin/python benchmarks/scan.py --key-frame-only                  # key_frame_vs_load only (a minute)
    .venv/bin/python benchmarks/scan.py --instructions                    # the same in instructions (3 minutes)

The last line is a JSON array: ``name``, ``ratio``, ``target``, ``better`` ("higher"/"lower") and the figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import pandas as pd  # noqa: E402
import psutil  # noqa: E402 - a dependency of dask distributed
from load import produce  # noqa: E402 - bulk writes with a single-record last batch per partition (tansu)

import agent_inspect as ai  # noqa: E402
from agent_inspect.fleet import key_frame  # noqa: E402
from tests.support.tansu import create_topic, start_tansu  # noqa: E402

TARGETS = {"scan_vs_single": (0.9, "higher"), "client_rss": (1.5, "lower"), "per_record_cost": (1.3, "lower"),
           "key_frame_vs_load": (8.0, "lower")}
FLEET_KEYS = 1111   # the fleet of issue 21's key_frame_vs_load


def fleet(keys: int, rounds: int, seed: int) -> list[tuple[str, bytes]]:
    """``keys`` business keys of ``rounds`` rounds (6 records a round; a second root on every 10th key)."""
    return list(ai.samples.fleet_records(keys, rounds=rounds, branch_every=10, seed=seed))


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


def measure_client(address: str, url: str, keys_out: str) -> dict[str, float]:
    """In a fresh client process: connect to ``address``, then scan ``url`` and measure this process."""
    from distributed import Client

    with Client(address, timeout="30s") as client:
        # the modules ai.scan imports on first use (planning, rules, the recovery model) are loaded before the
        # measurement starts: what is measured is what the scan holds, not the code it imports
        import agent_inspect.recovery
        import agent_inspect.rules  # noqa: F401

        ai.fleet.plan_scan(url)
        gc.collect()
        cpu0 = cluster_cpu(client)
        with PeakRss() as rss:
            t0 = time.perf_counter()
            result = ai.scan(url, client=client)
            seconds = time.perf_counter() - t0
        cpu = cluster_cpu(client) - cpu0
        assert result.complete, result.failures
        result.keys.to_parquet(keys_out)
        return {"seconds": seconds, "growth": rss.growth, "worker_cpu": cpu, "keys": len(result.keys),
                "records": int(result.partitions["records"].sum()),
                "frame_bytes": int(result.keys.memory_usage(deep=True).sum())}


def timed_scan(url: str, client: object) -> tuple[dict[str, float], pd.DataFrame]:
    """Scan ``url`` from a new client process on ``client``'s cluster: its figures (see :func:`measure_client`)
    and the scan's per-key frame."""
    address = client.scheduler.address  # type: ignore[attr-defined]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory(prefix="scan-bench-") as tmp:
        keys_out = os.path.join(tmp, "keys.parquet")
        out = subprocess.run([sys.executable, __file__, "--client-of", address, url, keys_out], capture_output=True,
                             text=True, env=env, check=False, timeout=4 * 3600)
        if out.returncode:
            raise RuntimeError(f"client process failed: {out.stderr[-2000:]}")
        return dict(json.loads(out.stdout.strip().splitlines()[-1])), pd.read_parquet(keys_out)


CPU: dict[int, float] = {}  # CPU seconds of the single-process run


def single(bootstrap: str, topic: str) -> tuple[float, object]:
    t0, c0 = time.perf_counter(), time.process_time()
    log = ai.load_kafka(bootstrap, topic, progress=False)
    keys = key_frame(log, rules=("original", "fixed"))
    seconds = time.perf_counter() - t0
    CPU[0] = time.process_time() - c0
    del log
    gc.collect()
    return seconds, keys


def key_frame_vs_load(keys: int = FLEET_KEYS, repeat: int = 3) -> dict[str, object]:
    """``key_frame`` of a ``keys``-key fleet file against ``ai.load`` of it: CPU seconds, the best of ``repeat``
    rounds of one load and one key frame of the log just loaded (a fresh log: what one scan window is, with no
    cache from the last run). Alternating the two puts both minima in the same stretch of a busy machine; CPU
    time moves with it less than wall time."""
    import agent_inspect.recovery
    import agent_inspect.rules  # noqa: F401

    with tempfile.TemporaryDirectory(prefix="scan-bench-") as tmp:
        path = ai.samples.write_fleet(os.path.join(tmp, "fleet.parquet"), keys)
        key_frame(ai.load(ai.samples.path("G01", "parquet")), rules=("original", "fixed"))   # first-call imports
        loads, frames = [], []
        for _ in range(repeat):
            log = frame = None   # the last round's log is freed here, not inside the next load's timing
            gc.collect()
            c0 = time.process_time()
            log = ai.load(str(path))
            loads.append(time.process_time() - c0)
            gc.collect()
            c0 = time.process_time()
            frame = key_frame(log, rules=("original", "fixed"))
            frames.append(time.process_time() - c0)
    load_s, frame_s = min(loads), min(frames)
    return {"name": "key_frame_vs_load", "ratio": round(frame_s / load_s, 2), "target": TARGETS["key_frame_vs_load"][0],
            "better": "lower", "keys": len(frame), "records": len(log.records), "load_cpu_s": round(load_s, 3),
            "key_frame_cpu_s": round(frame_s, 3),
            "key_frame_us_per_record": round(frame_s / len(log.records) * 1e6, 1)}


_PHASES = """
import sys
import pyarrow as pa
pa.set_cpu_count(1); pa.set_io_thread_count(1)   # one thread: the same instructions on every run
import agent_inspect as ai
from agent_inspect.fleet import key_frame
small = ai.load(ai.samples.path("G01", "parquet"))  # every import and first-call cost, before the measured part
key_frame(small, rules=("original", "fixed"))
if sys.argv[1] in ("load", "key_frame"):
    log = ai.load(sys.argv[2])
if sys.argv[1] == "key_frame":
    key_frame(log, rules=("original", "fixed"))
"""


def key_frame_instructions(keys: int = FLEET_KEYS) -> dict[str, object]:
    """``key_frame_vs_load`` in instructions executed (valgrind's cachegrind, no cache simulation): the same
    figure on a busy machine as on a quiet one, so two commits compare without alternating runs. Three processes
    (setup only, + the load, + the key frame), each instruction count less the one before; about 3 minutes."""
    import re
    import shutil
    import subprocess

    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")

    def count(phase: str, path: str) -> int:
        done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                               sys.executable, "-c", _PHASES, phase, path], capture_output=True, text=True,
                              env={**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(ROOT)}, check=True)
        found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
        if found is None:
            raise SystemExit(f"valgrind printed no instruction count:\n{done.stderr[-2000:]}")
        return int(found.group(1).replace(",", ""))

    with tempfile.TemporaryDirectory(prefix="scan-bench-") as tmp:
        path = str(ai.samples.write_fleet(os.path.join(tmp, "fleet.parquet"), keys))
        setup, load, frame = (count(phase, path) for phase in ("setup", "load", "key_frame"))
    load_i, frame_i = load - setup, frame - load
    return {"name": "key_frame_vs_load_instructions", "ratio": round(frame_i / load_i, 2),
            "target": TARGETS["key_frame_vs_load"][0], "better": "lower", "keys": keys,
            "load_instructions_m": round(load_i / 1e6), "key_frame_instructions_m": round(frame_i / 1e6)}


def main(argv: list[str] | None = None) -> int:
    from distributed import Client, LocalCluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=200_000, help="records of the small topic (about)")
    parser.add_argument("--large", type=int, default=2_000_000, help="records of the large topics (about)")
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--no-keys10x", action="store_true",
                        help="skip the topic of ten times the keys (client_rss_keys; measure it in a smaller run)")
    parser.add_argument("--key-frame-only", action="store_true",
                        help="measure only key_frame_vs_load (a fleet file, no broker, no cluster)")
    parser.add_argument("--instructions", action="store_true",
                        help="key_frame_vs_load counted in instructions under valgrind (steady on a busy machine)")
    parser.add_argument("--client-of", nargs=3, metavar=("SCHEDULER", "URL", "KEYS_OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.client_of:  # the measured client process of timed_scan
        print(json.dumps(measure_client(*args.client_of)))
        return 0
    if args.instructions:
        counted = key_frame_instructions()
        print(f"key_frame vs load in instructions: {counted['ratio']}x", flush=True)
        print(json.dumps([counted]))
        return 0
    frame_vs_load = key_frame_vs_load()
    print(f"key_frame vs load, {frame_vs_load['records']:,} records of {frame_vs_load['keys']:,} keys: "
          f"{frame_vs_load['ratio']}x", flush=True)
    if args.key_frame_only:
        print(json.dumps([frame_vs_load]))
        return 0
    cores = os.cpu_count() or 1
    keys = max(1, args.small // 18)                   # 3 rounds of 6 records a key
    rounds = max(3, round(args.large / (keys * 6)))    # the same keys, ten times the rounds
    shapes = {"small": (keys, 3), "large": (keys, rounds), "keys10x": (keys * rounds // 3, 3)}
    if args.no_keys10x:
        del shapes["keys10x"]
    broker = start_tansu(log_path=Path("/tmp") / f"tansu-scan-bench-{os.getpid()}.log")
    try:
        topics, sizes = {}, {}
        for name, (k, r) in shapes.items():
            t0 = time.perf_counter()
            records = fleet(k, r, seed=k * r)
            sizes[name] = len(records)
            topic = create_topic(broker.bootstrap, args.partitions)
            produce(broker.bootstrap, topic, records, args.partitions)
            del records
            gc.collect()
            topics[name] = topic
            print(f"topic {name}: {sizes[name]:,} records of {k:,} keys ({r} rounds) over {args.partitions} "
                  f"partitions, written in {time.perf_counter() - t0:.0f}s", flush=True)
        url = {n: f"kafka://{broker.bootstrap}/{t}" for n, t in topics.items()}

        single_s, single_keys = single(broker.bootstrap, topics["small"])
        print(f"single process, {sizes['small']:,} records: {single_s:.1f}s", flush=True)
        by_workers: dict[int, dict[str, float]] = {}
        runs: dict[str, dict[str, float]] = {}
        for workers in sorted({1, 2, cores}):
            with LocalCluster(n_workers=workers, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                              scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}, silence_logs=40) as cluster, \
                    Client(cluster) as client:
                client.wait_for_workers(workers)
                run, got = timed_scan(url["small"], client)
                by_workers[workers] = run
                print(f"scan, {workers} worker(s), {sizes['small']:,} records: {run['seconds']:.1f}s "
                      f"(client RSS +{run['growth'] / 2**20:.1f} MiB)", flush=True)
                if workers != cores:
                    continue
                runs["small"] = run
                got = got.set_index("business_key").sort_index()
                want = single_keys.set_index("business_key").sort_index()
                identical = bool(got[want.columns].astype(str).equals(want.astype(str)))
                print(f"per-key frames of scan and single process identical: {identical}", flush=True)
                for name in [n for n in ("large", "keys10x") if n in shapes]:
                    runs[name], _ = timed_scan(url[name], client)
                    r = runs[name]
                    print(f"scan {name}, {workers} worker(s), {r['records']:,} records of {r['keys']:,} keys: "
                          f"{r['seconds']:.1f}s (client RSS +{r['growth'] / 2**20:.1f} MiB)", flush=True)
                    assert r["records"] == sizes[name]
    finally:
        broker.stop()
    small = runs["small"]
    results = [{"name": "scan_vs_single", "ratio": round(single_s / small["seconds"], 3),
                "target": TARGETS["scan_vs_single"][0], "better": "higher", "records": sizes["small"],
                "workers": cores, "single_s": round(single_s, 2), "scan_s": round(small["seconds"], 2),
                "single_cpu_s": round(CPU[0], 2), "scan_worker_cpu_s": round(small["worker_cpu"], 2),
                "identical_keys": identical,
                "by_workers": {str(w): round(single_s / r["seconds"], 3) for w, r in by_workers.items()}}]

    def rss(name: str, big: dict[str, float]) -> dict[str, object]:
        return {"name": name, "ratio": round(big["growth"] / max(small["growth"], 1), 3),
                "small_mib": round(small["growth"] / 2**20, 1), "large_mib": round(big["growth"] / 2**20, 1),
                "records": [small["records"], big["records"]], "keys": [small["keys"], big["keys"]],
                "bytes_per_key": [round(small["growth"] / small["keys"]), round(big["growth"] / big["keys"])],
                "frame_bytes_per_key": round(big["frame_bytes"] / big["keys"])}

    def cost(big: dict[str, float]) -> dict[str, object]:
        return {"ratio": round((big["seconds"] / big["records"]) / (small["seconds"] / small["records"]), 3),
                "cpu_ratio": round((big["worker_cpu"] / big["records"]) / (small["worker_cpu"] / small["records"]), 3),
                "small_us_per_record": round(small["seconds"] / small["records"] * 1e6, 1),
                "large_us_per_record": round(big["seconds"] / big["records"] * 1e6, 1),
                "records": [small["records"], big["records"]]}

    results.append(frame_vs_load)
    results.append({**rss("client_rss", runs["large"]), "target": TARGETS["client_rss"][0], "better": "lower"})
    if "keys10x" in runs:
        results.append({**rss("client_rss_keys", runs["keys10x"]), "target": None, "better": "lower"})
    results.append({"name": "per_record_cost", **cost(runs["large"]), "target": TARGETS["per_record_cost"][0],
                    "better": "lower", "workers": cores,
                    **({"keys10x": cost(runs["keys10x"])} if "keys10x" in runs else {})})
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
