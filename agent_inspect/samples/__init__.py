"""Deterministic sample logs: named case histories and a production-like job, in every file format.

Each sample is produced by running a small agent through the attempts of its story with the replay
executor as the operator (spec §5.6, §9.3): what the topic holds is what upstream would have written.
The committed files live in ``sample_logs/``::

    import agent_inspect as ai
    log = ai.load(ai.samples.path("production"))            # fmt="jsonl" | "kcat" | "parquet"
    result = ai.reconstruct(log, rule="original", markers=ai.samples.markers("production"))
    ai.samples.write_samples("out/")                         # regenerate every file (byte-identical)
    trace = ai.load_trace(ai.samples.path("production", "trace"))   # the Trace Log of that restore
    chk = ai.checkpoint.read(ai.samples.checkpoint("production"))   # the Flink checkpoint that restore read
"""

from __future__ import annotations

from agent_inspect.samples._catalog import (
    FORMATS,
    SAMPLES,
    Sample,
    checkpoint,
    generate,
    markers,
    path,
    run_recovery,
    sample_dir,
    sample_trace,
    scenario,
    write_samples,
)
from agent_inspect.samples._fleet import fleet_batches, fleet_records, write_fleet
from agent_inspect.samples._trace import INCONSISTENT, TRACE_RULE
from agent_inspect.samples._write import write_kcat_jsonl

__all__ = ["SAMPLES", "FORMATS", "Sample", "generate", "scenario", "markers", "checkpoint", "path", "sample_dir",
           "write_samples", "write_kcat_jsonl",
           # each sample's Trace Log (and the deliberately inconsistent variants)
           "TRACE_RULE", "INCONSISTENT", "run_recovery", "sample_trace",
           # a fleet-sized multi-partition topic at any size (fleet scans, benchmarks)
           "fleet_records", "fleet_batches", "write_fleet"]
