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

from agent_inspect.log._build import COLUMNS
from agent_inspect.log._load import build_log, load, load_file, load_fluss, load_kafka
from agent_inspect.log._log import ActionStateLog, plain_text
from agent_inspect.log._runtime import RUNTIMES, RuntimeInfo, default_rule, infer_runtime, resolve_runtime

__all__ = ["ActionStateLog", "COLUMNS", "load", "load_kafka", "load_fluss", "load_file", "build_log", "plain_text",
           "RUNTIMES", "RuntimeInfo", "infer_runtime", "resolve_runtime", "default_rule"]
