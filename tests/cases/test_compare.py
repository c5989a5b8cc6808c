"""ai.cases.compare: rules × cases on the case matrix, built-in and user-written rules."""

from __future__ import annotations

from pathlib import Path

import agent_inspect as ai
from agent_inspect.cases import compare, load_cases
from tests.support.roots_only import RootsOnly

ROOT = Path(__file__).resolve().parents[2]
CASES = [c for c in load_cases(ROOT / "cases") if c.id in {"N03", "N04", "G01", "G02", "G09", "D01"}]


def test_compare_frame():
    frame = ai.cases.compare(CASES, ["original", "fixed", "naive", RootsOnly()])
    assert list(frame.columns) == ["rule", "case", "category", "reruns", "evictions", "stale_reuses", "calls",
                                   "calls_subagent", "crashed", "passed", "expected", "broken"]
    assert list(frame["rule"].cat.categories) == ["original", "fixed", "naive", "roots-only"]
    assert set(frame["case"]) == {"N03", "N04", "G01", "G02", "G09"}          # call cases are skipped
    by = frame.set_index(["rule", "case"])
    # the #1301 picture: original re-runs the later input, fixed reuses everything
    assert by.loc[("original", "N04"), "reruns"] == 2 and by.loc[("fixed", "N04"), "reruns"] == 0
    assert by.loc[("original", "N04"), "evictions"] == 2
    # genuine cases: fixed never reuses stale records; naive does (and the case expects exactly that)
    assert frame[(frame["rule"] == "fixed")]["stale_reuses"].sum() == 0
    assert by.loc[("naive", "G01"), "stale_reuses"] == 1 and by.loc[("naive", "G01"), "passed"]
    # a user rule without expectations passes where it reuses nothing stale
    assert not by.loc[("roots-only", "G09"), "expected"]
    assert by.loc[("roots-only", "G09"), "stale_reuses"] == 1 and not by.loc[("roots-only", "G09"), "passed"]
    assert by.loc[("roots-only", "G01"), "passed"]
    matrix = frame.pivot(index="rule", columns="case", values="reruns")
    assert matrix.shape == (4, 5)


def test_compare_defaults_to_the_rules_the_cases_name(tmp_path):
    frame = compare([ROOT / "cases" / "N01.toml", ROOT / "cases" / "G05.toml"])
    assert set(frame["rule"]) == {"original", "naive", "fixed", "lookup-only", "branch-aware"}
    assert frame["passed"].all()
    assert frame.groupby("rule", observed=True)["case"].count().to_dict()["original"] == 2


def test_compare_on_a_production_log_is_per_key():
    from agent_inspect.cases import build_case

    built = build_case(next(c for c in load_cases(ROOT / "cases" / "N09.toml") if c.variant is None))
    frame = compare(built.log, ["original", "fixed"])
    assert list(frame.columns) == ["rule", "key", "reruns", "evictions", "calls", "calls_subagent", "crashed"]
    by = frame.set_index(["rule", "key"])
    assert by.loc[("original", "k"), "reruns"] == 2 and by.loc[("fixed", "k"), "reruns"] == 0
    assert by.loc[("original", "k2"), "reruns"] == 0 and by.loc[("original", "k"), "evictions"] == 2
    assert not frame["crashed"].any()


def test_sub_agent_calls_sent_again_have_their_own_column_per_case_and_per_key():
    # S05: original evicts the reviewer's round and sends its sub-agent call again; fixed reuses it. Like predict's
    # calls_subagent, the executor's and a fleet scan's, a sub-agent call is no durable call: "calls" leaves it out
    from agent_inspect.cases import build_case

    case = next(c for c in load_cases(ROOT / "cases" / "S05.toml") if c.variant is None)
    by_case = compare(case, ["original", "fixed"]).set_index("rule")
    assert by_case["calls_subagent"].to_dict() == {"original": 1, "fixed": 0}
    assert by_case["calls"].to_dict() == {"original": 0, "fixed": 0}             # the case matrix counted it here
    built = build_case(case)
    per_key = compare(built.log, ["original", "fixed"]).set_index(["rule", "key"])
    assert per_key.loc[("original", "k"), "calls_subagent"] == 1                # the per-key frame dropped it
    assert per_key.loc[("fixed", "k"), "calls_subagent"] == 0 and per_key["calls"].sum() == 0
    tasks = ai.predict(built.log, rule="original").tasks
    assert tasks.groupby("key")["calls_subagent"].sum().to_dict() == {"k": 1}   # what predict's tasks say
    assert "sub-agent calls" in ai.cases.COLUMN_MEANINGS["calls_subagent"]


def test_the_comparison_view_says_what_passed_and_expected_mean():
    from agent_inspect.widgets import RuleComparison

    frame = ai.cases.compare(CASES, ["fixed", RootsOnly()])
    view = RuleComparison(frame, metric="passed")
    assert "passed" in view.metric.options
    assert "no stale reuse" in view.meaning.value                      # the chosen metric, explained
    assert "expected" in view.legend.value and "passed" in view.legend.value and "broken" in view.legend.value
    view.metric.value = "stale_reuses"
    assert "correctness failure" in view.meaning.value
    assert set(ai.cases.COLUMN_MEANINGS) >= {"passed", "expected", "broken"}
