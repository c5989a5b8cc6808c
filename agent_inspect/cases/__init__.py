"""Case files: named recovery histories (TOML) with the outcome each rule must give.

``builtin()`` (or ``load_cases("builtin")``) gives the bundled case matrix from any directory,
``load_cases("my_cases/")`` reads your own, ``build_case`` turns one into a real log, replay plan and agent,
``run_case`` predicts its recovery under a rule and checks the expectation, ``compare`` runs rules side
by side on case files and logs, and ``executor_for`` opens a case in the replay executor. The case
notation is described in ``docs/reference/cases.md``.
"""

from __future__ import annotations

from agent_inspect.cases._build import BuiltCase, build_case
from agent_inspect.cases._compare import COLUMN_MEANINGS, compare
from agent_inspect.cases._executor import executor_for
from agent_inspect.cases._format import Case, builtin, builtin_path, load_cases, parse_case
from agent_inspect.cases._notation import OUTCOMES
from agent_inspect.cases._run import CALL_RULE, CaseResult, run_case

__all__ = [
    "Case", "load_cases", "builtin", "builtin_path", "parse_case", "build_case", "BuiltCase", "run_case", "CaseResult", "CALL_RULE",
    "OUTCOMES", "compare", "COLUMN_MEANINGS", "executor_for",
]
