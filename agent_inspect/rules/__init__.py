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

__all__ = [
    "DivergenceRule", "RuleState", "RULES", "FLAVOURS", "get_rule",
    "OriginalRule", "NaiveRule", "FixedRule", "LookupOnlyRule", "FixedRoundRegressionRule", "BranchAwareRule",
]
