"""Fleet scan (``ai.scan``): a whole action-state topic (or dump), partition-parallel on Dask distributed.

A business key's records live in one partition, so every per-key analysis is partition-local: a scan
plans one task per partition (Kafka), bucket (Fluss), row group or partition (Parquet) or file, and each
task reads its own window straight from the source, decodes it, reconstructs and predicts every key
under each rule, and returns small frames. A ``LocalCluster`` is the default; a scheduler address or an
existing ``distributed.Client`` takes the same scan to a cluster::

    import agent_inspect as ai
    result = ai.scan("kafka://broker:9092/action-state", markers=[{0: 120, 1: 98}], output="scan-out/")
    result.at_risk(20)                                   # keys a restore would hurt most
    result.failures                                      # windows that failed after retries
    ai.load("scan-out/", business_keys=["order-7"])      # one key again, without reading Kafka

:func:`scan_window` is the per-window task, a plain function that any engine can call.
"""

from __future__ import annotations

from agent_inspect.fleet._result import OUTCOME_COLUMNS, SUMMARY_LABELS, ScanResult, tasks_text
from agent_inspect.fleet._run import RUNTIMES, ScanPlan, plan_scan, scan
from agent_inspect.fleet._task import (
    CALLS_PREFIX,
    KEY_COLUMNS,
    RULE_COLUMNS,
    ScanOptions,
    WindowResult,
    concat_keys,
    key_frame,
    scan_window,
)

__all__ = [
    # running a scan
    "scan", "plan_scan", "ScanPlan", "RUNTIMES",
    # its result
    "ScanResult", "KEY_COLUMNS", "RULE_COLUMNS", "CALLS_PREFIX", "OUTCOME_COLUMNS", "SUMMARY_LABELS", "tasks_text",
    # the per-window task (engine-neutral)
    "scan_window", "concat_keys", "key_frame", "ScanOptions", "WindowResult",
]

