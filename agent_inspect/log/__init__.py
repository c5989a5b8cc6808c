"""The action-state log as data, and the loaders that build it from a source.

``load(url_or_path)`` dispatches on ``kafka://host:port/topic``, ``fluss://host:port/db.table`` or a file
path; ``load_kafka``, ``load_fluss`` and ``load_file`` take explicit options. Each returns an
:class:`ActionStateLog`: ``records`` (one decoded row per record, index = position), ``errors``,
``raw`` (exact bytes) and ``source``::

    log = load("kafka://broker:9092/action-state")
    log = load_kafka("broker:9092", "action-state", markers=[{0: 120, 1: 98}], business_keys=["order-7"])
    log = load_file("dump.jsonl")                                       # kcat -J, plain JSONL or Parquet
"""

from __future__ import annotations

from agent_inspect.log._assemble import build_log
from agent_inspect.log._build import COLUMNS
from agent_inspect.log._facts import (
    SUMMARY_LABELS,
    RuleMark,
    SummaryFact,
    plain_text,
    rule_label,
    rule_mark,
    runtime_text,
    summary_facts,
)
from agent_inspect.log._live import Follower, LiveLog, TailWindow, follow
from agent_inspect.log._load import load, load_file, load_fluss, load_kafka
from agent_inspect.log._log import ActionStateLog, logged_key
from agent_inspect.log._runtime import (
    KEEPS_PENDING,
    RUNTIMES,
    RuntimeInfo,
    default_rule,
    infer_runtime,
    joined_flavour,
    joined_runtime,
    resolve_runtime,
    source_kind_of,
    store_flavour,
)
from agent_inspect.log._window import (
    SourceSpec,
    Window,
    is_dataset,
    load_dataset,
    plan_windows,
    read_window,
    write_dataset_meta,
    write_window,
)

__all__ = ["ActionStateLog", "COLUMNS", "load", "load_kafka", "load_fluss", "load_file", "build_log", "plain_text",
           "summary_facts", "runtime_text", "SummaryFact", "SUMMARY_LABELS", "rule_label", "rule_mark", "RuleMark",  # the summary in words (labels shared by report, views and CLI)
           "logged_key",   # a key's text or digest, as a log names it
           "RUNTIMES", "KEEPS_PENDING", "RuntimeInfo", "infer_runtime", "resolve_runtime", "joined_runtime", "default_rule",
           "source_kind_of", "store_flavour", "joined_flavour",   # the store a log's runtime ran: its kind and the original rule's flavour
           # windows of a source (one per partition) for a fleet scan, and the scan's reopenable Parquet output
           "SourceSpec", "Window", "plan_windows", "read_window", "write_window", "write_dataset_meta", "load_dataset",
           "is_dataset",
           # following a topic live (ai.tail): the growing log of a window, with listeners
           "LiveLog", "follow", "Follower", "TailWindow"]
