"""Sub-agent session and call ids of one caller action execution (spec §11.2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SubagentIdAllocator"]


class SubagentIdAllocator:
    """Upstream's ``SubagentIdAllocator``: one per caller action execution.

    The first call to a sub-agent handle (``scope``) opens a session ``<digest>-<n>`` (n counts
    0, 1, 2, … across the handles the execution opens); every call through that handle gets
    ``<sessionId>-<m>`` (m counts 1, 2, … per session). The digest is the namespace digest of
    (key text, seq, caller action, trigger event type and attributes, sub-agent name). A failover
    replay builds a new allocator, so the same calls get the same ids again.

    For example::

        ids = ai.agents.SubagentIdAllocator(key_text="user-1", seq=3, action="plan", event_type="_input_event",
                                            event_attributes={"input": "hi"})
        ids.allocate("search"), ids.allocate("search")   # (session id, call id): same session, next call
    """

    def __init__(self, *, key_text: str, seq: int, action: str, event_type: str,
                 event_attributes: Mapping[str, Any]) -> None:
        self._namespace = (key_text, seq, action, event_type, dict(event_attributes))
        self._sessions: dict[str, tuple[str, int]] = {}
        self._calls: dict[str, int] = {}

    def allocate(self, scope: str) -> tuple[str, str]:
        """``(sessionId, callId)`` for the next call to sub-agent ``scope`` in this execution."""
        from agent_inspect.codec import subagent_ids, subagent_namespace_digest

        if scope not in self._sessions:
            key_text, seq, action, event_type, attrs = self._namespace
            digest = subagent_namespace_digest(key_text, seq, action, event_type, attrs, agent_name=scope)
            self._sessions[scope] = (digest, len(self._sessions))
        digest, session = self._sessions[scope]
        call = self._calls[scope] = self._calls.get(scope, 0) + 1
        ids = subagent_ids(digest, session=session, call=call)
        return ids.session_id, ids.call_id
