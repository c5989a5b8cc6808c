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
from typing import Any, Literal

from agent_inspect._errors import (
    BrokerUnreachable,
    CaseFileError,
    CheckpointFormatError,
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

__version__ = "0.2.0"

_LAZY: dict[str, str] = {
    # loading
    "load": "agent_inspect.log",
    "load_kafka": "agent_inspect.log",
    "load_fluss": "agent_inspect.log",
    "load_file": "agent_inspect.log",
    "ActionStateLog": "agent_inspect.log",
    # recovery model
    "reconstruct": "agent_inspect.recovery",
    "predict": "agent_inspect.recovery",
    "Reconstruction": "agent_inspect.recovery",
    "ReplayPlan": "agent_inspect.recovery",
    "Recovery": "agent_inspect.recovery",
    # recovery markers inferred when no checkpoint is at hand
    "infer_markers": "agent_inspect.markers",
    # replay executor
    "ReplayExecutor": "agent_inspect.executor",
    # checked against the job's Trace Log
    "load_trace": "agent_inspect.trace",
    "TraceLog": "agent_inspect.trace",
    "verify": "agent_inspect.trace",
    # the recovery as OpenTelemetry spans
    "to_otel": "agent_inspect.otel",
    # diff and "why did this run?"
    "diff": "agent_inspect.diffing",
    "explain": "agent_inspect.diffing",
    # fleet scan
    "scan": "agent_inspect.fleet",
    "ScanResult": "agent_inspect.fleet",
    # views
    "inspect": "agent_inspect.widgets",
    "tail": "agent_inspect.widgets",
    "write_report": "agent_inspect.report",
}
_SUBMODULES = (
    "raw", "codec", "sources", "log", "agents", "history", "store", "rules", "recovery", "executor", "cases",
    "checker", "checkpoint", "markers", "trace", "diffing", "fleet", "samples", "widgets", "report", "otel",
)

__all__ = [
    # loading
    "load", "load_kafka", "load_fluss", "load_file", "ActionStateLog",
    # recovery model
    "reconstruct", "predict", "Reconstruction", "ReplayPlan", "Recovery", "infer_markers",
    # replay executor
    "ReplayExecutor",
    # checked against the job's Trace Log
    "load_trace", "TraceLog", "verify",
    # the recovery as OpenTelemetry spans
    "to_otel",
    # diff and "why did this run?"
    "diff", "explain",
    # fleet scan
    "scan", "ScanResult",
    # views (tail: follow a Kafka topic live)
    "inspect", "tail", "write_report",
    # subpackages
    *_SUBMODULES,
    # settings for the session (also %load_ext agent_inspect)
    "configure",
    # errors
    "InspectError", "SourceError", "BrokerUnreachable", "DataLossError", "UnknownPartitionError",
    "DecodeError", "KeyFormatError", "ValueFormatError", "RecoveryError", "CaseFileError", "ReplayError",
    "CheckpointFormatError",
]


def configure(*, errors: Literal["short", "full"] | None = None) -> None:
    """Session-wide display settings.

    ``errors="short"``: in IPython/Jupyter our errors (:class:`InspectError`) print as one line with their
    advice (``%tb`` shows the traceback); ``"full"``: IPython's traceback again. Same as
    ``%load_ext agent_inspect`` / ``%unload_ext agent_inspect``; a handler you had set keeps its exceptions.

    For example::

        ai.configure(errors="short")                   # our errors print as one line with advice in Jupyter
        ai.configure(errors="full")                    # IPython's traceback again
    """
    from agent_inspect import _ipython

    if errors == "short":
        if _ipython.running_shell() is None:
            raise InspectError("errors='short' needs a running IPython or Jupyter shell")
        _ipython.install()
    elif errors == "full":
        _ipython.uninstall()
    elif errors is not None:
        raise InspectError(f"unknown errors={errors!r}; use 'short' or 'full'")


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext agent_inspect``: our errors print as one line in this shell."""
    from agent_inspect import _ipython

    _ipython.install(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext agent_inspect``: IPython's tracebacks again."""
    from agent_inspect import _ipython

    _ipython.uninstall(ipython)


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
