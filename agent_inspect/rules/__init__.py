"""Divergence rules: the protocol you subclass, the built-in rules, and the one resolver.

``resolve_rule("fixed")`` (or ``RULES``) gives a built-in; ``"original:kafka-k1"`` an original-rule
flavour; ``"my_module:MyRule"`` your own. Subclass :class:`DivergenceRule` to prototype a rule and
pass it anywhere a rule name is accepted. Case files live in :mod:`agent_inspect.cases`, the
randomized safety checker in :mod:`agent_inspect.checker`.
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
)
from agent_inspect.rules._guard import BrokenRuleError, GuardedRule, guard_own
from agent_inspect.rules._resolve import get_rule, resolve_rule, rule_name
from agent_inspect.store import DivergenceRule, Entry, LookupDecision, PruneResult, RuleState, Task

__all__ = [
    # writing your own rule
    "DivergenceRule", "RuleState", "LookupDecision", "Entry", "Task", "PruneResult",
    # the built-in rules
    "RULES", "FLAVOURS", "resolve_rule", "get_rule", "rule_name",
    "OriginalRule", "NaiveRule", "FixedRule", "LookupOnlyRule", "FixedRoundRegressionRule", "BranchAwareRule",
    # a rule under test: a hook that raises or returns the wrong type makes it broken
    "GuardedRule", "BrokenRuleError", "guard_own",
]
