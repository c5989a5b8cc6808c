"""The recovery model: the simulated action-state store, rebuild from markers, lookups under a rule.

Pure: no I/O. ``Store`` is the cache with per-key range indexes; ``RecoverySession`` drives it
under one :class:`agent_inspect.rules.DivergenceRule`; ``rebuild`` replays a log's rebuild window;
``reconstruct`` explains what a recovery does with every record of a log.
"""

from __future__ import annotations

from agent_inspect.recovery._lints import LINTS, lint
from agent_inspect.recovery._model import (
    DIVERGENCE_KINDS,
    CacheEvent,
    Divergence,
    Entry,
    LookupDecision,
    Outcome,
    PruneResult,
    Task,
)
from agent_inspect.recovery._rebuild import Markers, iter_entries, normalize_markers, rebuild, rebuild_records
from agent_inspect.recovery._reconstruct import STATUSES, Reconstruction, reconstruct
from agent_inspect.recovery._session import RecoverySession
from agent_inspect.recovery._store import Store
from agent_inspect.recovery._plan import KeyIdentity, PendingTask, ReplayInput, ReplayPlan
from agent_inspect.recovery._predict import Prediction, predict

__all__ = [
    # store model
    "Store", "Entry", "Task", "Outcome", "LookupDecision", "CacheEvent", "Divergence", "PruneResult",
    "DIVERGENCE_KINDS",
    # reconstruction
    "reconstruct", "Reconstruction", "STATUSES", "lint", "LINTS",
    # driving it
    "RecoverySession", "rebuild", "rebuild_records", "iter_entries", "normalize_markers", "Markers",
    # prediction
    "predict", "Prediction", "ReplayPlan", "ReplayInput", "PendingTask", "KeyIdentity",
]
