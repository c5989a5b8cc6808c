"""The replay executor: step through a recovery or a dry-run replay like a debugger.

``ReplayExecutor`` drives the recovery store and a divergence rule task by task (spec §9.3),
matches durable calls by position (§9.4), replays sub-agent calls (§11.4), applies per-action and
per-call replay policies (§12), and never writes to a source: every write lands in an overlay that
is also available as a journal of raw records (production mode).
"""

from __future__ import annotations

from agent_inspect.executor._options import ActionPolicy, CallPolicy, ExecutorOptions, Policies
from agent_inspect.executor._replay import ReplayExecutor
from agent_inspect.executor._report import ReplaySafetyReport
from agent_inspect.executor._steps import Breakpoint, Checkpoint, Counters, MemoryState, Step, StepKind, StepOutcome
from agent_inspect.recovery.engine import (
    CallEvent,
    CallSlot,
    KeyMaker,
    Memory,
    OpaqueMemoryValue,
    RecordedCallError,
    RecordedValue,
    RecordView,
    ReplayContext,
    as_plan,
    json_envelope_decoder,
    python_args_digest,
    python_function_id,
)

__all__ = [
    # the executor and its control
    "ReplayExecutor", "ExecutorOptions", "Step", "StepKind", "StepOutcome", "Breakpoint", "Counters",
    "MemoryState", "Checkpoint",
    # policies and the dry-run report
    "Policies", "ActionPolicy", "CallPolicy", "ReplaySafetyReport",
    # bodies' context, durable calls, memory
    "ReplayContext", "CallSlot", "CallEvent", "RecordedCallError", "RecordedValue",
    "python_function_id", "python_args_digest", "Memory", "as_plan", "KeyMaker", "RecordView", "OpaqueMemoryValue", "json_envelope_decoder",
]
