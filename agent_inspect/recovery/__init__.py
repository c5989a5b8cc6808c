"""What a recovery does with a log: rebuild, reconstruct, lint and predict, under one rule.

Pure: no I/O. ``rebuild`` replays a log's rebuild window into a :class:`~agent_inspect.store.RecoverySession`;
``reconstruct`` explains what a recovery does with every record of a log; ``predict`` is the static path with
the re-execution ledger; ``simulate`` drives a plan through an already rebuilt session. Both replay on the one
engine, :mod:`agent_inspect.recovery.engine` (which the executor steps with live bodies). The store model
itself (``Store``, ``RecoverySession``, ``DivergenceRule``) lives in :mod:`agent_inspect.store`.
"""

from __future__ import annotations

from agent_inspect.recovery._core import TaskFailed, TaskLookups
from agent_inspect.recovery._events import agent_event
from agent_inspect.recovery._lints import LINTS, lint
from agent_inspect.recovery._plan import KeyIdentity, PendingTask, ReplayInput, ReplayPlan
from agent_inspect.recovery._predict import NOT_DISPATCHED, Prediction, Simulation, predict, simulate
from agent_inspect.recovery._prediction import (
    IMPACT_ORDER,
    RemovalCauses,
    lookup_words,
    removal_reason,
    tasks_by_impact,
    user_reason,
)
from agent_inspect.recovery._rebuild import (
    Markers,
    iter_entries,
    marker_warnings,
    normalize_markers,
    rebuild,
    rebuild_records,
    rebuild_start,
    source_kind_of,
    whole_log_markers,
    window_mask,
)
from agent_inspect.recovery._reconstruct import STATUSES, Reconstruction, reconstruct
from agent_inspect.recovery._refresh import refresh_positions, subagent_result_events, with_subagent_result_events
from agent_inspect.recovery._settings import SETTING_NAMES, STORE_FLAVOURS, CallMatching, Recovery

__all__ = [
    # the settings every verb resolves once
    "Recovery", "SETTING_NAMES", "STORE_FLAVOURS", "CallMatching",
    # reconstruction
    "reconstruct", "Reconstruction", "STATUSES", "lint", "LINTS",
    # rebuilding a session from a log
    "rebuild", "rebuild_records", "iter_entries", "normalize_markers", "rebuild_start", "marker_warnings", "Markers", "window_mask", "source_kind_of",
    "whole_log_markers",
    # prediction
    "predict", "Prediction", "NOT_DISPATCHED", "ReplayPlan", "ReplayInput", "PendingTask", "KeyIdentity",
    "agent_event", "tasks_by_impact", "IMPACT_ORDER",
    # reasons in a reader's words (the rule's own stay in ``rule_note``)
    "user_reason", "RemovalCauses", "removal_reason", "lookup_words",
    # driving a plan through a rebuilt session
    "simulate", "Simulation", "TaskLookups", "TaskFailed",
    # 0.4+ records: checkpoint-time refresh rows, sub-agent result events (V4)
    "refresh_positions", "subagent_result_events", "with_subagent_result_events",
]
