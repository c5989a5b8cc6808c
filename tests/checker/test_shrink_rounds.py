"""A counterexample is shrunk to its fewest rounds, a key's earlier rounds too (renumbered), not only its last."""

from __future__ import annotations

from typing import Any

import agent_inspect as ai
from agent_inspect.checker import check
from agent_inspect.rules import DivergenceRule, LookupDecision


class _RootsOnly(DivergenceRule):
    """The check-a-rule guide's example rule: the fixed rule without its identity checks."""

    name = "roots-only"

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


def test_a_stale_reuse_shrinks_to_the_one_round_it_needs() -> None:
    """History seed 1 under the guide's rule shrank to 2 rounds (k1:In(B), then the round that fails): the
    shrinker dropped a key's last input only, and the first round, needed for the numbering, stayed."""
    report = check(_RootsOnly(), n=0, seed=1)          # the matrix sweep's history of case G09
    cx = report.counterexample("stale-reuse")
    assert cx is not None and cx.history_seed == 1
    assert (cx.rounds, cx.records) == (1, 2), cx.to_toml()
    replayed = ai.cases.run_case(cx.case, _RootsOnly())   # the saved case still fails so under the rule
    assert replayed.stale and not replayed.passed
