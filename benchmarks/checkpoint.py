"""``ai.checkpoint.read`` of a synthetic 1,000-subtask ``_metadata`` (issue 22: under 1 s).

Usage: ``PYTHONPATH=. .venv/bin/python benchmarks/checkpoint.py [--subtasks N] [--partitions P] [--repeat R]
[--keys K]``. The last line is a JSON array: ``checkpoint_read`` with ``ratio`` = budget (1 s) / best read time,
target ≥ 1; and, as diagnostics, ``parse_only`` (the ``_metadata`` parse without the Kryo decode) and
``keyed_heap_read`` (one subtask's heap-backend keyed state of K keys, every key with a Kryo value to find the
next block after; ``ratio`` = keys per second / 5,000).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import agent_inspect as ai
from agent_inspect.codec import parse_metadata, read_keyed_state
from agent_inspect.codec._flink_state import state_infos
from tests.support.flink_metadata import synthetic_heap_keyed_state, synthetic_metadata

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "checkpoints" / "flink2-p1-inline"


def keyed_heap_read(keys: int, repeat: int) -> float:
    """Best time to read a synthetic heap keyed state of ``keys`` keys behind a real checkpoint's state meta infos."""
    chk = next((FIXTURE / "checkpoints").iterdir())
    meta = parse_metadata((chk / "_metadata").read_bytes())
    handle = next(s.managed_keyed for o in meta.operators for s in o.subtasks if s.managed_keyed is not None)
    assert handle is not None and handle.stream is not None and handle.stream.data is not None
    proxy = handle.stream.data[:min(o for o in handle.offsets if o > 0)]
    ids = {info.name: i for i, info in enumerate(state_infos(proxy, len(proxy))[1])}
    data, offsets, wrote = synthetic_heap_keyed_state(proxy, ids, keys)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        state = read_keyed_state(data, "full", (0, 127), offsets, 128)
        times.append(time.perf_counter() - t0)
        assert state.values["messageSequenceNumber"] == wrote
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--subtasks", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=16, help="marker entries per subtask")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keys", type=int, default=20_000, help="keys of the synthetic heap keyed state")
    args = ap.parse_args()
    markers = [{p: 1_000_000 + s * 100 + p for p in range(args.partitions)} for s in range(args.subtasks)]
    data = synthetic_metadata(markers)
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "_metadata").write_bytes(data)
        reads, parses = [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            ckpt = ai.checkpoint.read(d)
            reads.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            parse_metadata(data)
            parses.append(time.perf_counter() - t0)
        assert len(ckpt.markers) == args.subtasks
    best, parse_best = min(reads), min(parses)
    print(f"{args.subtasks} subtasks x {args.partitions} partitions, {len(data)} bytes: read {best * 1000:.1f} ms, "
          f"parse only {parse_best * 1000:.1f} ms (best of {args.repeat})")
    keyed = keyed_heap_read(args.keys, max(1, args.repeat // 2))
    print(f"heap keyed state of {args.keys} keys: read {keyed:.2f} s ({args.keys / keyed:,.0f} keys/s)")
    print(json.dumps([
        {"name": "checkpoint_read", "ratio": round(1.0 / best, 2), "target": 1.0, "seconds": round(best, 4),
         "subtasks": args.subtasks, "bytes": len(data)},
        {"name": "parse_only", "ratio": round(1.0 / parse_best, 2), "target": 1.0, "seconds": round(parse_best, 4)},
        {"name": "keyed_heap_read", "ratio": round(args.keys / keyed / 5_000, 2), "target": 1.0,
         "seconds": round(keyed, 3), "keys": args.keys},
    ]))


if __name__ == "__main__":
    main()
