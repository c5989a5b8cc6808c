"""The keyword arguments ``predict`` and ``reconstruct`` take today for one resolved :class:`Recovery`.

Every verb resolves its settings once (``Recovery.resolve``) and hands them down through these, so all
of them run the same restore. When ``predict``/``reconstruct`` take ``recovery=`` themselves, the
callers pass it directly and this module goes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_inspect.recovery import Recovery

__all__ = ["predict_arguments", "reconstruct_arguments"]


def predict_arguments(recovery: Recovery) -> dict[str, Any]:
    """``predict(log, **predict_arguments(r))`` runs the restore ``r`` describes."""
    return {"plan": recovery.plan, "agent": recovery.agent, **reconstruct_arguments(recovery),
            "call_matching": recovery.call_matching, "max_parallelism": recovery.max_parallelism}


def reconstruct_arguments(recovery: Recovery) -> dict[str, Any]:
    """``reconstruct(log, **reconstruct_arguments(r))`` rebuilds under the rule, markers and runtime of ``r``."""
    return {"rule": recovery.rule, "markers": recovery.markers, "runtime": recovery.runtime,
            "kafka_pending": recovery.given.get("kafka_pending"),
            "expected_fingerprint": recovery.expected_fingerprint}
