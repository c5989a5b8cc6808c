"""The base session of a replay: the log's rebuild window under the rule (never modified afterwards)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["rebuild_session"]


def rebuild_session(log: Any, rule: Any, markers: Sequence[Mapping[int, int]] | None, *,
                    source_kind: str | None = None, expected_fingerprint: str | None = None,
                    max_parallelism: int | None = None, runtime: Any = "0.3") -> Any:
    """A :class:`~agent_inspect.recovery.RecoverySession` rebuilt from ``log`` (empty without a log).

    ``markers=None`` with a log rebuilds from the whole loaded log (as if the marker were at its
    start, like ``predict``); ``markers=[]`` is an explicit fresh start (empty cache).
    ``source_kind`` ("kafka" / "fluss") picks the original rule's snapshot flavour; default: the log's.
    ``expected_fingerprint`` / ``max_parallelism`` are the K2 restore checks (spec §6.5). ``runtime``
    (a name or a ``RuntimeModel``): from 0.4 on, checkpoint-time refresh rows are applied as such.
    """
    from agent_inspect.recovery import rebuild, refresh_positions, source_kind_of
    from agent_inspect.rules import resolve_rule
    from agent_inspect.store import RecoverySession

    kind = source_kind if source_kind is not None else (source_kind_of(log) if log is not None else None)
    session = RecoverySession(resolve_rule(rule), source_kind=kind or "kafka")
    if log is None:
        return session
    return rebuild(log, session.rule, markers, session=session, expected_fingerprint=expected_fingerprint,
                   max_parallelism=max_parallelism, refresh=refresh_positions(log, runtime))
