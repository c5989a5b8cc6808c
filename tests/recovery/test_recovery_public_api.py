"""The public names of the recovery, rules and history packages (small, stable surface)."""

from __future__ import annotations

import agent_inspect as ai
from agent_inspect import history, recovery, rules

RECOVERY = {"Store", "Entry", "Task", "Outcome", "LookupDecision", "CacheEvent", "Divergence", "PruneResult",
            "DIVERGENCE_KINDS", "RecoverySession", "rebuild", "rebuild_records", "iter_entries",
            "normalize_markers", "Markers", "reconstruct", "Reconstruction", "STATUSES", "lint", "LINTS"}
RULES = {"DivergenceRule", "RuleState", "RULES", "FLAVOURS", "get_rule", "OriginalRule", "NaiveRule", "FixedRule",
         "LookupOnlyRule", "FixedRoundRegressionRule", "BranchAwareRule"}
HISTORY = {"History", "build_history", "annotate", "executions", "attempts", "rounds", "lineage", "ATTEMPT_REASONS",
           "action_graph", "subagent_tree"}


def test_public_names_are_exported_and_resolve() -> None:
    for module, names in ((recovery, RECOVERY), (rules, RULES), (history, HISTORY)):
        assert names <= set(module.__all__), names - set(module.__all__)
        for name in module.__all__:
            assert getattr(module, name) is not None
            assert not name.startswith("_")
    assert ai.reconstruct is recovery.reconstruct and ai.Reconstruction is recovery.Reconstruction
