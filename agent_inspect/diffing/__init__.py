"""Diff anything against anything, and answer "why did this run twice?".

``ai.diff(a, b)`` (:func:`diff`) aligns two sides — logs, attempts,
reconstructions or predictions under rules, replay executor runs, or selector strings such as
``"prod.jsonl@attempt=2"`` — per business key, round and action execution, with field-level changes
and the first point of divergence per key. ``ai.explain(source, key, seq, action)`` gives the
chain of store decisions behind one task's reuse, resume or rerun::

    import agent_inspect as ai
    d = ai.diff(ai.diffing.attempt(log, "order-7", 1), ai.diffing.attempt(log, "order-7", 2))
    d.first_divergences
    why = ai.explain(log, "order-7", 5, "ask_llm", rule="original", also=["fixed"])
    print(why)

Pure analysis over plain data; views are in :mod:`agent_inspect.widgets` (``ai.inspect(d)``).
"""

from __future__ import annotations

from agent_inspect.diffing._align import PAIR_COLUMNS, PASSES, STATUSES, align
from agent_inspect.diffing._explain import CAUSE_KINDS, ExplainStep, Explanation, explain
from agent_inspect.diffing._fields import FieldChange, state_changes
from agent_inspect.diffing._names import names_for
from agent_inspect.diffing._result import FIRST_COLUMNS, Diff, diff
from agent_inspect.diffing._selectors import SELECTORS, Selector, SelectorError, parse_selector
from agent_inspect.diffing._sides import Side, as_side, attempt, select

__all__ = [
    # diffing
    "diff", "Diff", "align", "PASSES", "STATUSES", "PAIR_COLUMNS", "FIRST_COLUMNS", "FieldChange", "state_changes",
    # sides and selectors
    "Side", "as_side", "select", "attempt", "Selector", "parse_selector", "SELECTORS", "SelectorError",
    # why did this run?
    "explain", "Explanation", "ExplainStep", "CAUSE_KINDS",
    # action names for views
    "names_for",
]

