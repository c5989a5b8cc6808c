"""Sources, the only I/O of agent_inspect: Kafka topics, Fluss tables and dump files.

Readers hand raw columns (:class:`~agent_inspect.raw.RawBatch`) to the log builder and never interpret
records; writers export a log byte-exact. Every reader is read-only. Most users want
:func:`agent_inspect.load` instead, which reads and decodes::

    read = read_file("dump.jsonl")                  # FileRead: batch, line errors, SourceInfo
    write_parquet(log, "copy.parquet")              # exact bytes, reloadable
"""

from __future__ import annotations

from agent_inspect.raw import RawBatch, SourceInfo
from agent_inspect.sources._checkpoint import CheckpointFiles, open_checkpoint
from agent_inspect.sources._filecommon import DUMP_SUFFIXES
from agent_inspect.sources._files import FileRead, read_file, write_jsonl, write_parquet
from agent_inspect.sources._fluss import ConnectionFactory, plan_fluss, read_fluss, read_fluss_bucket
from agent_inspect.sources._kafka import open_kafka, read_partitions
from agent_inspect.sources._keys import business_key_rows, business_key_texts, candidate_partitions, take
from agent_inspect.sources._kind import FileKind, expect_kind, file_kind
from agent_inspect.sources._offsets import ReadPlan, merge_markers
from agent_inspect.sources._otlp import check_export, export_spans, otlp_traces_url, read_otlp_json, write_otlp_json
from agent_inspect.sources._outputs import check_output, empty_source, input_files, source_files
from agent_inspect.sources._parquet import read_parquet_partition
from agent_inspect.sources._progress import progress_bar
from agent_inspect.sources._tail import KafkaTail, open_kafka_tail
from agent_inspect.sources._trace import TraceFile, TraceItem, read_trace_files, trace_files, write_trace
from agent_inspect.sources._urls import (
    check_port,
    check_timeout,
    page_answers,
    port_answers,
    resolve_timeout,
    scheduler_answers,
    source_scheme,
    split_source_url,
)

__all__ = [
    # raw columns
    "RawBatch", "SourceInfo",
    # readers
    "read_file", "FileRead", "open_kafka", "read_partitions", "read_fluss", "plan_fluss", "read_fluss_bucket", "ConnectionFactory",
    "ReadPlan",
    "read_parquet_partition", "business_key_rows", "business_key_texts", "candidate_partitions", "take",
    "merge_markers", "progress_bar",
    # following a topic as it grows (ai.tail)
    "open_kafka_tail", "KafkaTail",
    # addresses
    "source_scheme", "split_source_url", "check_port", "check_timeout", "resolve_timeout", "page_answers",
    "port_answers", "scheduler_answers",
    # writers, and what they must never write over
    "write_parquet", "write_jsonl", "check_output", "input_files", "source_files", "DUMP_SUFFIXES",
    # Flink checkpoint files (read by agent_inspect.checkpoint)
    "open_checkpoint", "CheckpointFiles",
    # Trace Log files (read by agent_inspect.trace)
    "trace_files", "read_trace_files", "write_trace", "TraceFile", "TraceItem",
    # OpenTelemetry spans out (agent_inspect.otel) and OTLP JSON files back
    "export_spans", "check_export", "write_otlp_json", "read_otlp_json", "otlp_traces_url",
    # which kind of file a path is (dump, kcat dump, Trace Log, old Event Log, none of these)
    "file_kind", "FileKind", "expect_kind",
    # the one line of a source with no records (every verb's, and ai.scan's before a cluster starts)
    "empty_source",
]
