"""Protocols for what the views and the report read of results: the typed seams of the top layers.

``ai.inspect`` and the report dispatch with ``isinstance`` on the ``runtime_checkable`` ones. On
Python 3.11 such a check reads every member with ``getattr``, so those list only members that are
cheap to read; the executor's ``counters``, ``memory`` and ``cache`` (reading ``cache`` starts the
replay) are in :class:`ExecutorState`, which is for annotations only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypedDict, TypeGuard, runtime_checkable

if TYPE_CHECKING:
    import networkx as nx
    import pandas as pd

    from agent_inspect.codec import ActionState, MarkerSource
    from agent_inspect.diffing import Side
    from agent_inspect.fleet import ScanResult
    from agent_inspect.log import RuntimeInfo
    from agent_inspect.recovery import Markers
    from agent_inspect.recovery.engine import PlanLike
    from agent_inspect.store import DivergenceRule

__all__ = [
    "RecoveryOverrides",
    "RuleLike",
    "MarkersLike",
    "Diffable",
    "ReportSubject",
    "LogLike",
    "ReconstructionLike",
    "PredictionLike",
    "ExecutorLike",
    "ExecutorState",
    "VerificationLike",
    "LogViewer",
    "RecordSource",
    "is_rule_comparison",
]


#: What a rule may be given as: a built-in name, ``"original:<flavour>"``, ``"module:Class"``, a class or an instance.
RuleLike: TypeAlias = "str | DivergenceRule | type[DivergenceRule]"

#: Markers as a verb takes them: None (the whole loaded log), ``[]`` (a fresh start), maps, or a MarkerSource.
MarkersLike: TypeAlias = "Markers | MarkerSource"


class RecoveryOverrides(TypedDict, total=False):
    """The settings every verb takes besides ``recovery=`` (``Recovery.SETTING_NAMES``), same names everywhere.

    None, or left out, means the default: the one ``Recovery.for_log`` resolves (the rule the runtime ships,
    the runtime inferred from the log, the whole loaded log as the rebuild window, …).
    """

    rule: RuleLike | None         # a rule name ("original", "fixed", "module:Class") or a DivergenceRule
    markers: MarkersLike          # {partition: offset} maps, or a read checkpoint; [] is a fresh start
    runtime: str | RuntimeInfo | None  # the upstream version: "auto", "0.3", "0.4", "main" (or a RuntimeInfo)
    store_flavour: str | None     # the original rule's store flavour: "auto", "kafka-k1", "fluss-k1", "segment"
    kafka_pending: str | None
    plan: PlanLike | None         # a ReplayPlan or {"inputs": [(key, value), ...]}; default: a checkpoint's, else the log's
    agent: object | None          # an agent model (default: as recorded in the log)
    call_matching: str | None     # "position" or "function-id"
    expected_fingerprint: str | None
    max_parallelism: int | None


@runtime_checkable
class LogLike(Protocol):
    """An action-state log: the record frame (index = position), its raw bytes, its source, decoded values."""

    records: pd.DataFrame
    raw: Any
    source: Any

    def value(self, pos: int) -> ActionState | None: ...


@runtime_checkable
class ReconstructionLike(Protocol):
    """A reconstruction: records with statuses, divergences, cache events and the log it came from."""

    # read-only: a frozen dataclass (Reconstruction) matches
    @property
    def records(self) -> pd.DataFrame: ...

    @property
    def divergences(self) -> pd.DataFrame: ...

    @property
    def evictions(self) -> pd.DataFrame: ...

    @property
    def log(self) -> Any: ...

    @property
    def rule(self) -> DivergenceRule: ...     # the DivergenceRule it ran under

    @property
    def markers(self) -> Markers: ...  # the recovery markers of its rebuild window

    def graph(self, key: str, seq: int | None = None, attempt: int | None = None, **options: Any) -> nx.DiGraph: ...

    def subagent_tree(self, key: str, seq: int, **options: Any) -> nx.DiGraph: ...


@runtime_checkable
class PredictionLike(Protocol):
    """A static prediction: tasks in dispatch order and the re-execution ledger."""

    rule: str
    tasks: pd.DataFrame
    ledger: pd.DataFrame
    crashed: bool

    def ledger_totals(self) -> pd.DataFrame: ...


@runtime_checkable
class ExecutorLike(Protocol):
    """A replay executor driven like a debugger."""

    steps: pd.DataFrame
    breakpoints: list[Any]

    def step(self) -> Any: ...

    def back(self) -> Any: ...

    def run(self) -> Any: ...

    def reset(self) -> None: ...

    def add_breakpoint(self, **where: Any) -> Any: ...


class ExecutorState(ExecutorLike, Protocol):
    """What the stepper reads of an executor besides its controls (annotations only: see the module doc)."""

    counters: Any
    memory: Mapping[str, Any]
    cache: pd.DataFrame
    done: bool
    failure: str | None

    def counters_for(self, key: str | None) -> Any: ...


@runtime_checkable
class VerificationLike(Protocol):
    """A recovery checked against the job's Trace Log: predicted and observed tasks, totals and calls."""

    tasks: pd.DataFrame
    totals: pd.DataFrame
    calls: pd.DataFrame
    rule: str
    notes: tuple[str, ...]
    agree: bool

    def summary_text(self) -> str: ...

    def best(self) -> dict[str, Any] | None: ...


def is_rule_comparison(obj: object) -> TypeGuard[pd.DataFrame]:
    """True for the frame of ``ai.cases.compare(...)``: a DataFrame with a ``rule`` column."""
    import pandas as pd  # here, so importing the protocols does not import pandas

    return isinstance(obj, pd.DataFrame) and "rule" in obj.columns


class RuntimeLike(Protocol):
    """Anything naming an upstream runtime ("0.3", "0.4", "main"): ``log.RuntimeInfo``, ``store.RuntimeModel``."""

    @property
    def name(self) -> str: ...


@runtime_checkable
class LogViewer(Protocol):
    """A view that can take a newer log in place (the live tail hands each new window to its views this way).

    ``rule`` is what the tail reconstructs under: the window's resolved ``Recovery`` (``ai.tail`` passes its
    ``recovery=`` and overrides resolved for that window), a rule, or None (the log's runtime default); a view
    that shows statuses reconstructs with it, one that shows records only may ignore it.
    """

    def show_log(self, log: LogLike, rule: Any = None) -> None: ...


#: What ``ai.diff`` (``diffing.as_side``) takes: a diff side, a selector string (``"prod.jsonl@attempt=2"``), a log,
#: a reconstruction, a prediction or a replay executor.
Diffable: TypeAlias = "Side | str | os.PathLike[str] | LogLike | ReconstructionLike | PredictionLike | ExecutorLike"

#: What ``ai.write_report`` takes: a log, a reconstruction, a fleet scan or the directory a scan wrote.
ReportSubject: TypeAlias = "LogLike | ReconstructionLike | ScanResult | str | os.PathLike[str]"

#: What reads records takes: a log, a reconstruction, or their record frame (index = log position).
RecordSource: TypeAlias = "LogLike | ReconstructionLike | pd.DataFrame"
