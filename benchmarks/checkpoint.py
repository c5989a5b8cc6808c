"""``ai.checkpoint.read`` of a synthetic 1,000-subtask ``_metadata`` (issue 22: under 1 s).

Usage: ``PYTHONPATH=. .venv/bin/python benchmarks/checkpoint.py [--subtasks N] [--partitions P] [--repeat R]``.
The last line is a JSON array: ``checkpoint_read`` with ``ratio`` = budget (1 s) / best read time, target ≥ 1;
and, as a diagnostic, ``parse_only`` (the ``_metadata`` parse without the Kryo decode).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import agent_inspect as ai
from agent_inspect.codec import parse_metadata
from tests.support.flink_metadata import synthetic_metadata


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--subtasks", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=16, help="marker entries per subtask")
    ap.add_argument("--repeat", type=int, default=5)
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
    print(json.dumps([
        {"name": "checkpoint_read", "ratio": round(1.0 / best, 2), "target": 1.0, "seconds": round(best, 4),
         "subtasks": args.subtasks, "bytes": len(data)},
        {"name": "parse_only", "ratio": round(1.0 / parse_best, 2), "target": 1.0, "seconds": round(parse_best, 4)},
    ]))


if __name__ == "__main__":
    main()
