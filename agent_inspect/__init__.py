"""agent_inspect: read, reconstruct and replay Apache Flink Agents action-state logs.

Typical use in a notebook::

    import agent_inspect as ai
    log = ai.load("sample_logs/production.jsonl")          # or kafka://host:9092/topic, fluss://host:9123/db.table
    result = ai.reconstruct(log, rule="fixed")
    result.divergences
    ai.inspect(result)

Public names are loaded lazily so ``import agent_inspect`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

from agent_inspect._errors import (
    BrokerUnreachable,
    CaseFileError,
    DataLossError,
    DecodeError,
    InspectError,
    KeyFormatError,
    RecoveryError,
    ReplayError,
    SourceError,
    UnknownPartitionError,
    ValueFormatError,
)
from agent_inspect._ipython import install as _install_error_display

__version__ = "0.1.0"

_install_error_display()  # in IPython/Jupyter: our errors print as one line (the traceback stays one %tb away)

_LAZY: dict[str, str] = {
    # loading
    "load": "agent_inspect.log",
    "load_kafka": "agent_inspect.log",
    "load_fluss": "agent_inspect.log",
    "load_file": "agent_inspect.log",
    "ActionStateLog": "agent_inspect.log",
    # recovery model
    "reconstruct": "agent_inspect.recovery",
    "Reconstruction": "agent_inspect.recovery",
    "ReplayPlan": "agent_inspect.recovery",
    # replay executor
    "ReplayExecutor": "agent_inspect.executor",
    # checked against the job's Trace Log
    "load_trace": "agent_inspect.trace",
    "TraceLog": "agent_inspect.trace",
    "verify": "agent_inspect.trace",
    # the recovery as OpenTelemetry spans
    "to_otel": "agent_inspect.otel",
    # diff and "why did this run?"
    "explain": "agent_inspect.diff",
    # fleet scan (ai.scan itself is the subpackage, callable: ai.scan(source, ...))
    "ScanResult": "agent_inspect.scan",
    # views
    "inspect": "agent_inspect.widgets",
    "tail": "agent_inspect.widgets",
    "write_report": "agent_inspect.report",
}
_SUBMODULES = (
    "raw", "codec", "sources", "log", "agents", "history", "store", "rules", "recovery", "executor", "cases",
    "checker", "trace", "diff", "scan", "samples", "widgets", "report", "otel",
)

__all__ = [
    # loading
    "load", "load_kafka", "load_fluss", "load_file", "ActionStateLog",
    # recovery model
    "reconstruct", "Reconstruction", "ReplayPlan",
    # replay executor
    "ReplayExecutor",
    # checked against the job's Trace Log
    "load_trace", "TraceLog", "verify",
    # the recovery as OpenTelemetry spans
    "to_otel",
    # diff (ai.diff is the callable subpackage) and "why did this run?"
    "explain",
    # fleet scan (the subpackage scan is callable)
    "ScanResult",
    # views (tail: follow a Kafka topic live)
    "inspect", "tail", "write_report",
    # subpackages
    *_SUBMODULES,
    # errors
    "InspectError", "SourceError", "BrokerUnreachable", "DataLossError", "UnknownPartitionError",
    "DecodeError", "KeyFormatError", "ValueFormatError", "RecoveryError", "CaseFileError", "ReplayError",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"agent_inspect.{name}")
    else:
        raise AttributeError(f"module 'agent_inspect' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
