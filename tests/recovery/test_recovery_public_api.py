"""The public names of the recovery, rules and history packages (small, stable surface)."""

from __future__ import annotations

import pytest

import agent_inspect as ai
from agent_inspect import cases, checker, executor, history, recovery, rules, sources, store

STORE = {"Store", "Entry", "Task", "Outcome", "LookupDecision", "CacheEvent", "Divergence", "PruneResult",
         "DIVERGENCE_KINDS", "RecoverySession", "DivergenceRule", "RuleState", "RuntimeModel", "runtime_model",
         "RUNTIME_NAMES", "KAFKA_PENDING"}
RECOVERY = {"rebuild", "rebuild_records", "iter_entries", "normalize_markers", "rebuild_start", "Markers", "reconstruct",
            "Reconstruction", "STATUSES", "lint", "LINTS", "predict", "Prediction", "simulate", "ReplayPlan",
            "refresh_positions", "subagent_result_events", "with_subagent_result_events"}
CASES = {"Case", "load_cases", "build_case", "BuiltCase", "run_case", "CaseResult", "compare", "executor_for"}
CHECKER = {"check", "CheckReport", "Counterexample", "HistoryOptions", "History", "generate_history",
           "RuleCheckError", "KNOWN_LIMITS", "known_limit"}
RULES = {"DivergenceRule", "RuleState", "RULES", "FLAVOURS", "resolve_rule", "get_rule", "OriginalRule", "NaiveRule", "FixedRule",
         "LookupOnlyRule", "FixedRoundRegressionRule", "BranchAwareRule"}
HISTORY = {"History", "build_history", "annotate", "executions", "attempts", "rounds", "lineage", "ATTEMPT_REASONS",
           "action_graph", "subagent_tree", "subagent_result_events"}


def test_public_names_are_exported_and_resolve() -> None:
    for module, names in ((store, STORE), (recovery, RECOVERY), (rules, RULES), (history, HISTORY),
                          (cases, CASES), (checker, CHECKER)):
        assert names <= set(module.__all__), names - set(module.__all__)
        for name in module.__all__:
            assert getattr(module, name) is not None
            assert not name.startswith("_")
    assert ai.reconstruct is recovery.reconstruct and ai.Reconstruction is recovery.Reconstruction


@pytest.mark.parametrize(("module", "name"), [
    (recovery, "Store"), (recovery, "RecoverySession"), (recovery, "CallJournal"), (rules, "compare"),
    (rules, "load_cases"), (rules, "check"), (rules, "CheckReport"), (sources, "load"),
    (executor, "CallJournal"),
])
def test_no_deprecated_alias_remains(module, name) -> None:
    # 0.1.0 was never released: names that moved live only where they are now (CHANGELOG.md says where)
    with pytest.raises(AttributeError):
        getattr(module, name)


def test_unknown_names_are_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        rules.nope  # noqa: B018

