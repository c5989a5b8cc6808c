"""The randomized rule safety checker: random recovery histories, a judge, minimal counterexamples.

``check(rule, n=..., seed=...)`` generates seeded histories (written through the replay executor in
production mode), judges the rule's replay of each against the true history (stale reuses, tainted
reuses, avoidable reruns) and shrinks each failure kind to a 1-minimal counterexample that saves as a
case file and opens in the stepper.
"""

from __future__ import annotations

from agent_inspect.checker._check import FAILURE_KINDS, CheckReport, Counterexample, check, resolve_check_rule
from agent_inspect.checker._generate import History, HistoryOptions, RuleCheckError, generate_history
from agent_inspect.checker._limits import KNOWN_LIMITS, known_limit
from agent_inspect.checker._shapes import CALL_SHAPES, call_shapes
from agent_inspect.checker._sweep import SweepShape, sweep

__all__ = [
    "check", "CheckReport", "Counterexample", "FAILURE_KINDS", "resolve_check_rule",
    "HistoryOptions", "History", "generate_history", "RuleCheckError",
    # spec §10.3 known limits a counterexample can fall in
    "KNOWN_LIMITS", "known_limit",
    # the call cases (D01-D06) a generated recovery goes through
    "CALL_SHAPES", "call_shapes",
    # the histories every check judges beside its random ones: one for each shape of the bundled cases
    "sweep", "SweepShape",
]
