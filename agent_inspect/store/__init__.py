"""The action-state store model: the cache, one rule driving it, and the record of every removal.

Pure: no I/O. ``Store`` is the cache (state key → :class:`Entry`) with per-key range indexes;
:class:`RecoverySession` drives it under one :class:`DivergenceRule` instance (rebuild, lookup,
write, prune), recording every removal as a :class:`CacheEvent` / :class:`Divergence`. Rules by
name live in :mod:`agent_inspect.rules`; whole-log rebuilds and reconstructions in
:mod:`agent_inspect.recovery`.
"""

from __future__ import annotations

from agent_inspect.store._model import (
    DIVERGENCE_KINDS,
    CacheEvent,
    Divergence,
    Entry,
    LookupDecision,
    Outcome,
    PruneResult,
    RecordStatus,
    Task,
)
from agent_inspect.store._rule import DivergenceRule, RuleState
from agent_inspect.store._runtime import KAFKA_PENDING, RUNTIME_NAMES, RuntimeModel, runtime_model
from agent_inspect.store._session import RecoverySession
from agent_inspect.store._store import Store, strict_k1_seq

__all__ = [
    # the cache and its records
    "Store", "Entry", "Task", "Outcome", "RecordStatus", "LookupDecision", "CacheEvent", "Divergence", "PruneResult",
    "DIVERGENCE_KINDS", "strict_k1_seq",
    # the rule protocol and the session that drives the cache under one rule
    "DivergenceRule", "RuleState", "RecoverySession",
    # which upstream runtime's recovery behaviours the model runs (issue #12 items 3, 4)
    "RuntimeModel", "runtime_model", "RUNTIME_NAMES", "KAFKA_PENDING",
]
