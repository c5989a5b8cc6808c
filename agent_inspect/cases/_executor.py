"""A case file's history opened in the replay executor."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_inspect._errors import ReplayError
from agent_inspect.cases._build import BuiltCase, build_case
from agent_inspect.cases._format import Case, load_cases
from agent_inspect.executor import ReplayExecutor

if TYPE_CHECKING:
    from agent_inspect._types import RuleLike

__all__ = ["executor_for"]


def executor_for(case: str | Path | Case | BuiltCase, *, rule: RuleLike | None = None, **options: Any) -> ReplayExecutor:
    """A :class:`ReplayExecutor` over a case's history (a path, a loaded ``Case`` or a ``BuiltCase``).

    ``rule`` defaults to the first rule the case has expectations for; ``options`` go to the executor.

    For example::

        ex = ai.cases.executor_for("cases/G01.toml")   # step through the case's recovery
        ex.run(); ex.steps[["kind", "key", "seq", "action", "outcome"]].tail()
    """
    built = case
    if not isinstance(built, BuiltCase):
        if not isinstance(built, Case):
            found = load_cases([built])
            if not found:
                raise ReplayError(f"no case in {case!r}; pass a case file path or a loaded Case")
            built = found[0]
        built = build_case(built)
    rules = tuple(getattr(built.case, "rules", ()))
    rule = rule if rule is not None else (rules[0] if rules else "fixed")
    options.setdefault("agent", built.agent)
    options.setdefault("plan", built.plan)
    options.setdefault("markers", list(built.markers))
    options.setdefault("runtime", built.case.setup.runtime)
    options.setdefault("kafka_pending", built.case.setup.kafka_pending)
    return ReplayExecutor(built.log, rule=rule, **options)
