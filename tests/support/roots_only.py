"""The check-a-rule guide's example rule (docs/guides/check-a-rule.md), for the tests that run a rule of a user's:
the fixed rule without its identity checks, so G09's WA#2 is reused blindly."""

from __future__ import annotations

from typing import Any

from agent_inspect.rules import DivergenceRule, LookupDecision


class RootsOnly(DivergenceRule):
    name = "roots-only"
    summary = "invalidate on a conflicting root; evict later rounds on a miss"

    def rebuild(self, session: Any, entry: Any) -> Any:
        if entry.is_root and session.store.roots(entry.business_key, entry.seq) - {entry.fingerprint}:
            session.invalidate(entry.business_key, entry.seq, kind="root-conflict",
                               explanation="conflicting root while rebuilding", positions=[entry.pos])
        return entry

    def lookup(self, session: Any, task: Any) -> Any:
        k, s = task.business_key, task.seq
        if task.is_root and session.store.roots(k, s) - {task.event_uuid}:
            session.invalidate(k, s, kind="root-conflict", explanation="a different input at this seq")
        entry = session.store.get(task.state_key)
        if entry is None:
            session.evict(k, s, kind="miss-eviction", explanation="miss: later rounds are stale")
        return LookupDecision.found(entry)
