"""The base session of a replay: the log's rebuild window under the rule (never modified afterwards)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["rebuild_session"]


def rebuild_session(log: Any, rule: Any, markers: Sequence[Mapping[int, int]] | None) -> Any:
    """A :class:`~agent_inspect.recovery.RecoverySession` rebuilt from ``log`` (empty without a log)."""
    from agent_inspect.recovery import RecoverySession, rebuild

    if log is None:
        return RecoverySession(rule)
    return rebuild(log, rule, markers)
