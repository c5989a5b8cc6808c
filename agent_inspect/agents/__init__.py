"""Agent models shared by the static predictor and the replay executor.

An agent declares actions (:class:`ActionDecl`: name, trigger event types, K1 identity) and runs
action bodies against an :class:`ActionContext` (``send_event``, short-term and sensory memory,
``durable_execute`` and its reconcilable variant, ``call_subagent``). Kinds:

- :class:`DeclarativeAgent`: fixed step lists per trigger (the agents of case files);
- :class:`AsRecordedAgent`: re-emits what a log shows (the "deterministic rerun" assumption).
"""

from __future__ import annotations

from agent_inspect.agents._declarative import (
    Behaviour,
    Call,
    DeclarativeAgent,
    DeclaredCallError,
    Emit,
    SetMemory,
    Step,
    SubagentBatch,
    SubagentCall,
)
from agent_inspect.agents._flink import FlinkAgentAdapter, is_flink_agent
from agent_inspect.agents._protocol import (
    BEGIN_EVENT,
    INPUT_EVENT,
    OUTPUT_EVENT,
    SUBAGENT_EVENT,
    ActionContext,
    ActionDecl,
    Agent,
    AgentEvent,
    BaseAgent,
    DeclaredCalls,
    MemoryView,
    RoundBeginEvents,
    action_uuid_for,
)
from agent_inspect.agents._recorded import AsRecordedAgent

__all__ = [
    # protocol
    "Agent", "ActionDecl", "ActionContext", "AgentEvent", "MemoryView", "BaseAgent", "action_uuid_for",
    "RoundBeginEvents", "DeclaredCalls",
    "INPUT_EVENT", "OUTPUT_EVENT", "BEGIN_EVENT", "SUBAGENT_EVENT",
    # agents
    "DeclarativeAgent", "AsRecordedAgent",
    # declarative steps
    "Behaviour", "Step", "Emit", "Call", "SubagentCall", "SubagentBatch", "SetMemory", "DeclaredCallError",
    # flink-agents adapter (optional dependency, imported when used)
    "FlinkAgentAdapter", "is_flink_agent",
]

from agent_inspect.agents._python import PythonAgent  # appended by the executor

__all__ += ["PythonAgent"]

from agent_inspect.agents._subagents import SubagentIdAllocator  # noqa: E402

__all__ += ["SubagentIdAllocator"]
