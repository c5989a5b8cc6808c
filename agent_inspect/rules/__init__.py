"""Divergence rules: the protocol users subclass, and the built-in rules by name.

``get_rule("fixed")`` (or ``RULES``) gives a built-in; subclass :class:`DivergenceRule` to
prototype your own and pass it anywhere a rule name is accepted.
"""

from __future__ import annotations

from agent_inspect.rules._builtin import (
    FLAVOURS,
    RULES,
    BranchAwareRule,
    FixedRoundRegressionRule,
    FixedRule,
    LookupOnlyRule,
    NaiveRule,
    OriginalRule,
    get_rule,
)
from agent_inspect.rules._protocol import DivergenceRule, RuleState
from agent_inspect.rules._cases import Case, load_cases
from agent_inspect.rules._cases_build import BuiltCase, build_case
from agent_inspect.rules._cases_run import CaseResult, run_case
from agent_inspect.rules._compare import compare

__all__ = [
    "DivergenceRule", "RuleState", "RULES", "FLAVOURS", "get_rule",
    "OriginalRule", "NaiveRule", "FixedRule", "LookupOnlyRule", "FixedRoundRegressionRule", "BranchAwareRule",
    # case matrix
    "Case", "load_cases", "build_case", "BuiltCase", "run_case", "CaseResult", "compare",
]

# the rule safety checker: randomized recovery histories (appended by the checker)
from agent_inspect.rules._check import CheckReport, Counterexample, check  # noqa: E402
from agent_inspect.rules._history_gen import (  # noqa: E402
    History,
    HistoryOptions,
    RuleCheckError,
    generate_history,
)

__all__ += ["check", "CheckReport", "Counterexample", "HistoryOptions", "History", "generate_history",
            "RuleCheckError"]
