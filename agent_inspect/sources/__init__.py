"""Sources, the only I/O of agent_inspect: Kafka topics, Fluss tables and dump files.

Every loader is read-only and returns an :class:`agent_inspect.log.ActionStateLog`::

    log = load("kafka://broker:9092/action-state")                     # or fluss://host:9123/db.table, or a path
    log = load_kafka("broker:9092", "action-state", markers=[{0: 120, 1: 98}], business_keys=["order-7"])
    log = load_fluss("fluss:9123", "flink_agents.action_state", markers=[{0: 5, 1: 9}])
    log = load_file("dump.jsonl")                                       # kcat -J, plain JSONL or Parquet
    write_parquet(log, "copy.parquet")                                  # exact bytes, reloadable
    log = load("scan-out/", business_keys=["order-7"])                  # a fleet scan's Parquet output
"""

from __future__ import annotations

from agent_inspect.sources._files import write_jsonl, write_parquet
from agent_inspect.sources._load import load, load_file, load_fluss, load_kafka
from agent_inspect.sources._raw import RawBatch, SourceInfo
from agent_inspect.sources._window import (
    SourceSpec,
    Window,
    is_dataset,
    load_dataset,
    plan_windows,
    read_window,
    write_dataset_meta,
    write_window,
)

__all__ = ["load", "load_kafka", "load_fluss", "load_file", "write_parquet", "write_jsonl", "RawBatch", "SourceInfo",
           # windows of a source, for a fleet scan (agent_inspect.scan), and its reopenable Parquet output
           "SourceSpec", "Window", "plan_windows", "read_window", "write_window", "write_dataset_meta",
           "load_dataset", "is_dataset"]
