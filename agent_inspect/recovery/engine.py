"""The one recovery engine and its seams, for drivers of it (the executor) and for extending it.

:class:`Engine` runs spec §9.3 over a rebuilt session; an :class:`Observer` sees every decision, a
:class:`CallService` serves calls that must run. ``predict`` and the executor are its two drivers.

For example::

    from agent_inspect.recovery.engine import Observer

    class Reused(Observer):
        def reused(self, run, record, outputs):
            print(run.key, run.seq, run.action)
"""

from __future__ import annotations

from agent_inspect.recovery._calls import (
    CallDecision,
    CallEvent,
    CallJournal,
    CallSlot,
    Executor,
    RecordedCallError,
    RecordedValue,
    decode_recorded,
    effective_status,
    python_args_digest,
    python_function_id,
)
from agent_inspect.recovery._context import RecordingMemory, ReplayContext
from agent_inspect.recovery._engine import (
    CallService,
    DirectCalls,
    Engine,
    EngineState,
    JobFailed,
    Observer,
    TaskQueue,
    TaskRun,
)
from agent_inspect.recovery._events import (
    OUTPUT_EVENT_CLASS,
    SUBAGENT_EVENT_CLASS,
    IdSource,
    event_from_record,
    wrap_subagent,
)
from agent_inspect.recovery._memory import Memory
from agent_inspect.recovery._planview import PlanLike, PlanView, as_plan
from agent_inspect.recovery._record import OpaqueMemoryValue, RecordView, json_envelope_decoder
from agent_inspect.recovery._statekeys import KeyMaker

__all__ = [
    # the engine and its seams
    "Engine", "EngineState", "Observer", "CallService", "DirectCalls", "TaskRun", "TaskQueue", "JobFailed",
    # bodies' context, memory and durable calls
    "ReplayContext", "RecordingMemory", "Memory", "CallJournal", "CallDecision", "CallEvent", "CallSlot", "Executor",
    "RecordedCallError", "RecordedValue", "decode_recorded", "effective_status",
    "python_args_digest", "python_function_id",
    # records, events, keys and plans
    "RecordView", "OpaqueMemoryValue", "json_envelope_decoder", "IdSource", "event_from_record", "wrap_subagent",
    "OUTPUT_EVENT_CLASS", "SUBAGENT_EVENT_CLASS", "KeyMaker", "PlanView", "PlanLike", "as_plan",
]
