"""Regenerate the fixture checkpoints with real Flink and read them back (needs a JDK and Flink's jars).

Set FLINK2_LIB (the apache-flink-libraries 2.x wheel's pyflink/lib) and FLINK120_LIB (the 1.20.x sdist's
deps/lib); scripts/gen_checkpoints.sh documents how to get them. Without them this test is skipped; the
committed fixtures are read by test_checkpoint_read.py either way. It regenerates three of the nine runs (GEN_ONLY
picks others; each takes a minute or two on a loaded machine).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import agent_inspect as ai
from tests.support.flink_metadata import tasks_and_memory_are_what_the_job_wrote

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.flink
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_regenerated_checkpoints_hold_the_markers_and_keyed_state_the_job_printed(tmp_path: Path) -> None:
    if not (shutil.which("javac") and shutil.which("java")):
        pytest.skip("no JDK (javac, java) on PATH")
    libs = {v: os.environ.get(v) for v in ("FLINK2_LIB", "FLINK120_LIB")}
    missing = [v for v, d in libs.items() if not d or not any(Path(d).glob("flink-dist-*.jar"))]
    if missing:
        pytest.skip(f"{', '.join(missing)} not set to a directory with flink-dist-*.jar")
    out = tmp_path / "fixtures"
    # one run of each kind: Flink 2.x, Flink 1.20 at parallelism 4, another job's checkpoint
    only = os.environ.get("GEN_ONLY", "flink2-p1-inline flink120-p4-inline flink2-other-job")
    subprocess.run(["bash", str(ROOT / "scripts" / "gen_checkpoints.sh"), str(out)], check=True, timeout=1700,
                   env={**os.environ, "SCRATCH": str(tmp_path / "scratch"), "GEN_ONLY": only})
    runs = sorted(p for p in out.iterdir() if (p / "expected.json").is_file())
    assert len(runs) == len(only.split())
    for run in runs:
        wrote = json.loads((run / "expected.json").read_text())
        for kind in ("checkpoint", "savepoint"):
            if wrote["other_job"]:
                with pytest.raises(ai.CheckpointFormatError):
                    ai.checkpoint.read(run / wrote[kind]["path"])
                continue
            ckpt = ai.checkpoint.read(run / wrote[kind]["path"])
            assert ckpt.checkpoint_id == wrote[kind]["checkpoint_id"]
            assert [dict(m) for m in ckpt.markers] == [{int(p): o for p, o in m.items()}
                                                       for m in wrote[kind]["markers"]]
            if kind == "checkpoint" and "rocksdb" in run.name:   # RocksDB's own files: markers only
                assert ckpt.keyed is None and ckpt.keyed_snapshots == ("incremental",) * ckpt.parallelism
                continue
            assert ckpt.keyed is not None
            tasks_and_memory_are_what_the_job_wrote(ckpt.keyed, wrote["keyed"])
