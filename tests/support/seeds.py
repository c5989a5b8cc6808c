"""Run the same Python code in fresh processes under several hash seeds, side by side (2 cores in CI)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def outputs_under_hash_seeds(code: str, seeds: list[str], *, timeout: float = 600) -> list[str]:
    """The standard output of ``python -c code`` under each ``PYTHONHASHSEED``, in the order of ``seeds``; a
    process that fails raises with its standard error."""
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)})
             for seed in seeds]
    try:
        outputs = []
        for seed, proc in zip(seeds, procs):
            out, err = proc.communicate(timeout=timeout)
            if proc.returncode != 0:
                raise AssertionError(f"PYTHONHASHSEED={seed}: exit {proc.returncode}\n{err[-3000:]}")
            outputs.append(out)
        return outputs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
