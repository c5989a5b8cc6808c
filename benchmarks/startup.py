"""Start-up cost in fresh interpreters: ``import agent_inspect``, the first ``ai.load`` of a sample, the first widget.

Usage::

    .venv/bin/python benchmarks/startup.py [--runs 7] [--root PATH] [--sample sample_logs/production.jsonl]

Each run is a new process (like a new kernel) that measures, with ``time.perf_counter`` from its
first line: ``import agent_inspect`` (``import``), then ``ai.load(sample)`` (``import_load``: both),
then ``ai.inspect(log)`` (``first_widget``: all three; the widget is built, not drawn — the browser
part is in ``views_browser.py``). ``--root`` runs another checkout (e.g. the main branch) for a
before/after comparison. The median of the runs is reported; the last line is the JSON array of
``{name, seconds, cpu_seconds, target, ratio = target / seconds, cpu_ratio}``. On a busy machine the
CPU seconds (``time.process_time``) are the steadier figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

TARGETS = {"import": None, "import_load": 1.0, "first_widget": 1.5}

_PROBE = """
import time
t0, c0 = time.perf_counter(), time.process_time()
import agent_inspect as ai
t1, c1 = time.perf_counter(), time.process_time()
log = ai.load({sample!r})
t2, c2 = time.perf_counter(), time.process_time()
view = ai.inspect(log)
t3, c3 = time.perf_counter(), time.process_time()
print(t1 - t0, t2 - t0, t3 - t0, c1 - c0, c2 - c0, c3 - c0)
"""


def measure(root: Path, sample: Path, runs: int) -> dict[str, tuple[float, float]]:
    """Median (wall seconds, CPU seconds) per stage, each counted from the process's first line."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    wall: dict[str, list[float]] = {name: [] for name in TARGETS}
    cpu: dict[str, list[float]] = {name: [] for name in TARGETS}
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", _PROBE.format(sample=str(sample))], env=env, cwd=root,
                              capture_output=True, text=True, check=True)
        values = [float(v) for v in done.stdout.split()[-6:]]
        for i, name in enumerate(TARGETS):
            wall[name].append(values[i])
            cpu[name].append(values[i + 3])
    return {name: (statistics.median(wall[name]), statistics.median(cpu[name])) for name in TARGETS}


def main() -> None:
    here = Path(__file__).resolve().parents[1]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--root", type=Path, default=here, help="the checkout to measure (default: this one)")
    parser.add_argument("--sample", type=Path, default=here / "sample_logs" / "production.jsonl")
    args = parser.parse_args()
    medians = measure(args.root.resolve(), args.sample.resolve(), args.runs)
    out = []
    for name, (seconds, cpu) in medians.items():
        target = TARGETS[name]
        print(f"{name:13s} median {seconds:.3f} s wall, {cpu:.3f} s CPU over {args.runs} runs"
              + (f" (target ≤ {target} s)" if target else ""))
        out.append({"name": name, "seconds": round(seconds, 4), "cpu_seconds": round(cpu, 4), "target": target,
                    "ratio": round(target / seconds, 3) if target else None,
                    "cpu_ratio": round(target / cpu, 3) if target else None, "runs": args.runs})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
