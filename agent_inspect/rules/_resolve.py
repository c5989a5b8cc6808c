"""The one way to turn what a user passes as a rule into a rule instance."""

from __future__ import annotations

import importlib
from typing import Any

from agent_inspect._errors import RecoveryError
from agent_inspect._glossary import did_you_mean
from agent_inspect.rules._builtin import RULES
from agent_inspect.store import DivergenceRule

__all__ = ["resolve_rule", "get_rule"]


def resolve_rule(rule: str | type[DivergenceRule] | DivergenceRule, **options: Any) -> DivergenceRule:
    """A rule instance from a built-in name, ``"original:<flavour>"``, ``"module:ClassName"``, a rule class
    or an instance (returned as is).

    ``options`` go to the built-in rule's constructor (``flavour=`` for ``original``).

    For example::

        ai.rules.resolve_rule("fixed"), ai.rules.resolve_rule("original:kafka-k1")
        ai.rules.resolve_rule(ai.rules.NaiveRule)          # a class is instantiated, an instance returned as is
    """
    if isinstance(rule, str):
        base, sep, rest = rule.partition(":")
        if base in RULES or not sep:
            return _builtin(base, rest, options)
        rule = _imported(base, rest, rule)
    if isinstance(rule, type) and issubclass(rule, DivergenceRule):
        return rule()
    if isinstance(rule, DivergenceRule):
        return rule
    raise RecoveryError(f"not a divergence rule: {rule!r}; pass a built-in name ({', '.join(RULES)}), "
                        "module:ClassName, a DivergenceRule subclass or an instance")


def get_rule(name: str, **options: Any) -> DivergenceRule:
    """A built-in rule by name; kept for older code (use :func:`resolve_rule`).

    For example::

        ai.rules.get_rule("original")                      # prefer resolve_rule
    """
    return resolve_rule(name, **options)


def _builtin(base: str, flavour: str, options: dict[str, Any]) -> DivergenceRule:
    if flavour:
        if base != "original":
            raise RecoveryError(f"only the original rule has flavours, got {base}:{flavour!r}")
        options["flavour"] = flavour
    factory = RULES.get(base)
    if factory is None:
        raise RecoveryError(f"unknown rule {base!r}{did_you_mean([base], RULES)}; use one of {', '.join(RULES)} (or original:<flavour>, "
                            "or module:ClassName for your own)")
    return factory(**options)


def _imported(module_name: str, attribute: str, spec: str) -> Any:
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise RecoveryError(f"cannot import module {module_name!r} for rule {spec!r}: {exc}; "
                            "check the module path (it must be importable from here)") from None
    target = getattr(module, attribute, None)
    if target is None:
        raise RecoveryError(f"module {module_name!r} has no {attribute!r}; name a DivergenceRule subclass "
                            "as module:ClassName")
    return target
