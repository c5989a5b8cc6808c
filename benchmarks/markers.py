"""``infer_markers`` against loading the same log, in one run.

    .venv/bin/python benchmarks/markers.py [--keys N] [--repeat R]

Measures ``ai.infer_markers`` on the production sample (log alone; with its trace, the trace's executions read
once beforehand as ``verify`` reads them; with a trace just loaded, nothing derived from it yet) and on a fleet of N keys (``ai.samples.fleet_batches``, 8 partitions) given
one timestamp per record in write order, so restarts and bounds are computed (the fleet's restored keys put a
branch change at seq 1). Baseline: ``ActionStateLog.from_raw`` of the same records. ``ratio`` = load s / infer s
(higher is better); target 1: inferring the markers costs no more than loading the log. Last line: JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import agent_inspect as ai
from agent_inspect.codec import kafka_partition
from agent_inspect.log import ActionStateLog
from agent_inspect.samples import fleet_records
from agent_inspect.sources import RawBatch, SourceInfo


def best(f: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def fleet(keys: int, partitions: int = 8) -> tuple[RawBatch, SourceInfo]:
    raw = RawBatch()
    sizes = dict.fromkeys(range(partitions), 0)
    for n, (key, value) in enumerate(fleet_records(keys)):
        p = kafka_partition(key, partitions)
        raw.append(p, sizes[p], 1_789_372_800_000 + 250 * n, key.encode(), value)
        sizes[p] += 1
    return raw, SourceInfo(kind="kafka", location="kafka://bench/fleet", topic="fleet",
                           start_offsets=dict.fromkeys(sizes, 0), end_offsets=sizes)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1111)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    out = []

    path = ai.samples.path("production")
    log = ai.load(path)
    trace = ai.load_trace(ai.samples.path("production", "trace"))
    trace.executions()
    load_s = best(lambda: ai.load(path), args.repeat)
    for name, run in (("production_log", lambda: ai.infer_markers(log)),
                      ("production_log_trace", lambda: ai.infer_markers(log, trace))):
        s = best(run, args.repeat)
        out.append({"name": name, "records": len(log), "baseline_s": round(load_s, 4), "infer_s": round(s, 4),
                    "ratio": round(load_s / s, 2), "target": 1.0})
    # a trace just loaded, nothing derived from it yet (what `agent-inspect markers --trace` pays)
    cold = []
    for _ in range(args.repeat):
        fresh = ai.load_trace(ai.samples.path("production", "trace"))
        t0 = time.perf_counter()
        ai.infer_markers(log, fresh)
        cold.append(time.perf_counter() - t0)
    out.append({"name": "production_log_fresh_trace", "records": len(log), "baseline_s": round(load_s, 4),
                "infer_s": round(min(cold), 4), "ratio": round(load_s / min(cold), 2), "target": 1.0})

    raw, info = fleet(args.keys)
    flog = ActionStateLog.from_raw([raw], info)
    load_s = best(lambda: ActionStateLog.from_raw([fleet(args.keys)[0]], info), max(1, args.repeat // 2))
    s = best(lambda: ai.infer_markers(flog), args.repeat)
    first = ai.infer_markers(flog)[0]
    out.append({"name": "fleet_log", "keys": args.keys, "records": len(flog), "baseline_s": round(load_s, 4),
                "infer_s": round(s, 4), "ratio": round(load_s / s, 2), "target": 1.0, "first": first.source})
    for o in out:
        print(f"{o['name']}: infer {o['infer_s'] * 1000:.0f} ms, load {o['baseline_s'] * 1000:.0f} ms, "
              f"ratio {o['ratio']}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
