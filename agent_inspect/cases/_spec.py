"""A parsed case file: setup, keys, log lines, calls, pending tasks, the replay and the agent."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agent_inspect.agents import ActionDecl, AgentEvent, Behaviour, Call, DeclarativeAgent
from agent_inspect.cases._notation import EventRef, Expectation

__all__ = ["Case", "CaseSetup", "CheckpointLine", "KeySpec", "LogLine", "CallSpec", "StaleMark", "PendingSpec", "ReplaySpec", "CallCase", "AgentSpec"]

KEY_FORMATS = ("K1", "K1.5", "K1.6", "K2")
SOURCES = ("kafka", "fluss")
STATUSES = ("C", "I", "P", "TOMB")
CallStatus = Literal["SUCCEEDED", "FAILED", "PENDING"]
CALL_STATUSES: tuple[CallStatus, ...] = ("SUCCEEDED", "FAILED", "PENDING")


@dataclass(frozen=True)
class CaseSetup:
    """How the history was produced and read back."""

    key_format: str = "K1.5"
    source: str = "kafka"
    value_format: str = "V3"
    pipeline: str = "java"          # "java": typed InputEvent roots; "python": generic Event roots
    begin_event: bool = False
    tombstones: bool = False
    window_start: int = 1           # first log line inside the rebuild window (the marker position)
    max_parallelism: int = 128
    partitions: int = 1
    runtime: str = "0.3"            # the upstream runtime that wrote the log and runs the recovery (0.3/0.4/main)
    kafka_pending: str = "refresh"  # 0.4+ Kafka: pending states kept by refresh rows or by a moved-back marker
    restore: str | None = None      # the checkpoint line whose marker is the rebuild window (else window_start)


@dataclass(frozen=True)
class KeySpec:
    """A business key of the case: its label, key text, Java type and restored seqNum."""

    label: str
    text: str
    type: str = "string"            # "string" | "long": typed keys with equal text collide in K1/K1.5
    restored_seq: int = 4


@dataclass(frozen=True)
class CallSpec:
    """A recorded CallResult. ``status`` None is a legacy (V1) result without status."""

    function_id: str
    args_digest: str = ""
    status: CallStatus | None = "SUCCEEDED"
    result: Mapping[str, Any] | None = None
    exception: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class StaleMark:
    """When reusing (or resuming) a line is a correctness failure: always, or only for some keys / task ids."""

    keys: tuple[str, ...] = ()
    events: tuple[str, ...] = ()
    always: bool = False

    def applies(self, key_label: str | None, event_label: str | None) -> bool:
        return self.always or (key_label in self.keys) or (event_label in self.events)


@dataclass(frozen=True)
class LogLine:
    """One action execution in the log (all its writes collapse to ``status``)."""

    n: int
    attempt: int
    key: str
    seq: int
    action: str
    event: EventRef
    status: str
    outputs: tuple[EventRef, ...] = ()
    calls: tuple[CallSpec, ...] = ()
    action_label: str | None = None          # "IA@u1": an explicit (attempt-local) action UUID label
    stale: StaleMark | None = None
    results: tuple[EventRef, ...] = ()       # a child's subagentResultEvents (V4, main; addendum §1.1)


@dataclass(frozen=True)
class CheckpointLine:
    """A checkpoint (or a restore) between log lines: ``after`` log lines precede it.

    A checkpoint takes the marker (the end offsets); a 0.4+ writer then re-appends every retained
    state (refresh rows) or, Kafka with ``kafka_pending = "marker"``, moves the marker back to the
    oldest retained state; ``completed`` (``lastCompletedSequenceNumber`` per key) prunes the writer's
    cache when it completes. A restore rebuilds the writer's cache from that checkpoint's marker.
    """

    n: int
    name: str
    after: int
    restore: bool = False
    completed: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ReplaySpec:
    key: str
    event: EventRef

    @property
    def label(self) -> str:
        text = self.event.attributes.get("input")
        if self.event.type == "_input_event" and isinstance(text, str):
            return text
        return self.event.id_label or self.event.type


@dataclass(frozen=True)
class PendingSpec:
    """A restored in-flight task (from Flink's ``actionTasks`` state), re-submitted before any input."""

    key: str
    seq: int
    action: str
    event: EventRef


@dataclass(frozen=True)
class CallCase:
    """A durable-call case (D01–D06): a recorded call journal, a body on resume and call-level expectations."""

    record: tuple[CallSpec, ...]
    body: tuple[Call, ...]
    expect: tuple[Mapping[str, Any], ...]
    warnings: tuple[str, ...] = ()
    truncated_to: int | None = None
    final_record: tuple[Mapping[str, Any], ...] | None = None
    effective_statuses: tuple[str, ...] | None = None
    producer: str = "python"
    value_format: str = "V3"


@dataclass(frozen=True)
class AgentSpec:
    """An agent as a case file declares it: actions, per-trigger bodies and begin events."""

    actions: tuple[ActionDecl, ...]
    behaviours: Mapping[str, tuple[Behaviour, ...]]
    begin: tuple[tuple[EventRef, EventRef], ...] = ()


@dataclass(frozen=True)
class Case:
    """One history of divergence-cases.md (or a user's), possibly one variant of it.

    For example::

        case = ai.cases.load_cases("cases/G01.toml")[0]   # one history of the case matrix
        case.id, case.name, case.category, case.rules
    """

    id: str
    name: str
    category: str
    setup: CaseSetup
    keys: Mapping[str, KeySpec]
    log: tuple[LogLine, ...]
    replay: tuple[ReplaySpec, ...]
    pending: tuple[PendingSpec, ...]
    actions: tuple[ActionDecl, ...]
    behaviours: Mapping[str, tuple[Behaviour, ...]]
    begin: tuple[tuple[EventRef, EventRef], ...]
    expect: Mapping[str, Expectation]
    expect_calls: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    #: per rule, per sub-agent call id: the result event labels its caller gets, or "journal"
    expect_results: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    call_case: CallCase | None = None
    replay_agent: AgentSpec | None = None    # new code after the restore (L01); None: the log's agent
    checkpoints: tuple[CheckpointLine, ...] = ()   # checkpoints and restores between log lines
    summary: str = ""
    note: str = ""
    variant: str | None = None
    path: str | None = None

    @property
    def rules(self) -> tuple[str, ...]:
        """The rules this case has expectations for."""
        return tuple(self.expect)

    def agent(self) -> DeclarativeAgent:
        """The :class:`~agent_inspect.agents.DeclarativeAgent` the restored job runs (``[replay_agent]``
        when the code changed since the log was written, else ``[agent]``)."""
        spec = self.replay_agent or AgentSpec(self.actions, self.behaviours, self.begin)
        return _declarative(spec)

    def log_agent(self) -> DeclarativeAgent:
        """The agent that wrote the log (``[agent]``): its action UUIDs are the log's."""
        return _declarative(AgentSpec(self.actions, self.behaviours, self.begin))

    def __repr__(self) -> str:
        return f"Case({self.id!r}, {self.name!r}, rules={list(self.rules)})"


def _declarative(spec: AgentSpec) -> DeclarativeAgent:
    begin = [(AgentEvent(t.type, dict(t.attributes)), AgentEvent(e.type, dict(e.attributes)))
             for t, e in spec.begin]
    return DeclarativeAgent(spec.actions, spec.behaviours, begin=begin)
