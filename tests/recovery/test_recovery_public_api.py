"""The public names of the recovery, rules and history packages (small, stable surface)."""

from __future__ import annotations

import pytest

import agent_inspect as ai
from agent_inspect import cases, checker, history, recovery, rules, store

STORE = {"Store", "Entry", "Task", "Outcome", "LookupDecision", "CacheEvent", "Divergence", "PruneResult",
         "DIVERGENCE_KINDS", "RecoverySession", "DivergenceRule", "RuleState", "RuntimeModel", "runtime_model",
         "RUNTIME_NAMES", "KAFKA_PENDING"}
RECOVERY = {"rebuild", "rebuild_records", "iter_entries", "normalize_markers", "Markers", "reconstruct",
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


@pytest.mark.parametrize(("old", "name", "new"), [
    (recovery, "Store", store), (recovery, "RecoverySession", store), (rules, "compare", cases),
    (rules, "load_cases", cases), (rules, "check", checker), (rules, "CheckReport", checker),
])
def test_moved_names_still_resolve_with_a_deprecation_warning(old, name, new) -> None:
    with pytest.warns(DeprecationWarning, match=f"moved to {new.__name__}.{name}"):
        assert getattr(old, name) is getattr(new, name)


def test_moved_loaders_and_from_case_warn(tmp_path) -> None:
    import agent_inspect.sources as sources
    from agent_inspect import log

    with pytest.warns(DeprecationWarning, match="agent_inspect.log.load"):
        assert sources.load is log.load
    case = __import__("pathlib").Path(__file__).parents[2] / "cases" / "N01.toml"
    with pytest.warns(DeprecationWarning, match="executor_for"):
        ex = ai.ReplayExecutor.from_case(case)
    assert isinstance(ex, ai.ReplayExecutor)


def test_unknown_names_are_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        rules.nope  # noqa: B018


@pytest.mark.parametrize(("module", "name"), [(recovery, "Store"), (recovery, "CallJournal"), (rules, "check")])
def test_deprecation_warnings_point_at_the_callers_line(module, name) -> None:
    # Names served through renamed()'s fallback to moved() must still blame this file, not _deprecated.py.
    with pytest.warns(DeprecationWarning) as caught:
        getattr(module, name)
    assert [w.filename for w in caught] == [__file__]
