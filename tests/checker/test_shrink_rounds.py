"""A counterexample is shrunk to its fewest rounds, a key's earlier rounds too (renumbered), not only its last."""

from __future__ import annotations

import agent_inspect as ai
from agent_inspect.checker import check
from tests.support.roots_only import RootsOnly


def test_a_stale_reuse_shrinks_to_the_one_round_it_needs() -> None:
    """History seed 1 under the guide's rule shrank to 2 rounds (k1:In(B), then the round that fails): the
    shrinker dropped a key's last input only, and the first round, needed for the numbering, stayed."""
    report = check(RootsOnly(), n=0, seed=1)          # the matrix sweep's history of case G09
    cx = report.counterexample("stale-reuse")
    assert cx is not None and cx.history_seed == 1
    assert (cx.rounds, cx.records) == (1, 2), cx.to_toml()
    replayed = ai.cases.run_case(cx.case, RootsOnly())   # the saved case still fails so under the rule
    assert replayed.stale and not replayed.passed
