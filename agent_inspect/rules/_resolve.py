"""The one way to turn what a user passes as a rule into a rule instance."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from agent_inspect._errors import RecoveryError
from agent_inspect._glossary import did_you_mean
from agent_inspect.log import rule_mark
from agent_inspect.rules._builtin import FLAVOURS, RULES
from agent_inspect.store import DivergenceRule

__all__ = ["resolve_rule", "get_rule", "rule_name"]


def resolve_rule(rule: str | type[DivergenceRule] | DivergenceRule, **options: Any) -> DivergenceRule:
    """A rule instance from a built-in name, ``"original:<flavour>"``, ``"module:ClassName"``,
    ``"path/to/my_rule.py:ClassName"``, a rule class or an instance (returned as is).

    ``options`` go to the built-in rule's constructor (``flavour=`` for ``original``).

    For example::

        ai.rules.resolve_rule("fixed"), ai.rules.resolve_rule("original:kafka-k1")
        ai.rules.resolve_rule(ai.rules.NaiveRule)          # a class is instantiated, an instance returned as is
    """
    if isinstance(rule, str):
        base, sep, rest = rule.partition(":")
        if ".py:" in rule:          # path/to/my_rule.py:ClassName
            base, sep, rest = rule.rpartition(":")
            rule = _imported(base, rest, rule, from_file=True)
        elif base in RULES or not sep:
            return _builtin(base, rest, options, colon=bool(sep))
        elif not base or not rest:
            raise RecoveryError(f"rule {rule!r} names no {'module' if not base else 'class'}; write your own rule as "
                                "module:ClassName or path/to/my_rule.py:ClassName")
        else:
            rule = _imported(base, rest, rule)
    if isinstance(rule, type) and issubclass(rule, DivergenceRule):
        return rule()
    if isinstance(rule, DivergenceRule):
        return rule
    raise RecoveryError(f"not a divergence rule: {rule!r}; pass a built-in name ({', '.join(RULES)}), "
                        "module:ClassName, a DivergenceRule subclass or an instance")


def rule_name(rule: str | type[DivergenceRule] | DivergenceRule) -> str:
    """The one name a rule is labelled by in every verb's results, views, CLI text and reports: the rule's
    ``name`` (``"roots-only"`` for ``"my_rules.py:RootsOnly"``), with a given store flavour as
    ``original:kafka-k1``. The text a user typed is only for typing again (a ``--rule`` hint).

    For example::

        ai.rules.rule_name("original:kafka-k1"), ai.rules.rule_name(ai.rules.FixedRule)   # "original:kafka-k1", "fixed"
    """
    return rule_mark(resolve_rule(rule), None).name


def get_rule(name: str, **options: Any) -> DivergenceRule:
    """A built-in rule by name; kept for older code (use :func:`resolve_rule`).

    For example::

        ai.rules.get_rule("original")                      # prefer resolve_rule
    """
    return resolve_rule(name, **options)


def _builtin(base: str, flavour: str, options: dict[str, Any], colon: bool = False) -> DivergenceRule:
    if flavour or colon:   # "original:" names no flavour: refused, as an unknown one is (it was taken as none)
        flavours = ", ".join(f"original:{f}" for f in FLAVOURS)
        if base != "original":
            raise RecoveryError(f"rule '{base}:{flavour}': only the original rule has store flavours ({flavours}); "
                                f"use {base!r} alone")
        if flavour not in FLAVOURS:
            said = f"unknown original-rule flavour {flavour!r}" if flavour else "rule 'original:' names no flavour"
            raise RecoveryError(f"{said}; use one of {flavours}, or 'original' for the flavour inferred from the log")
        options["flavour"] = flavour
    factory = RULES.get(base)
    if factory is None:
        raise RecoveryError(f"unknown rule {base!r}{did_you_mean([base], RULES)}; use one of {', '.join(RULES)} (or original:<flavour>, "
                            "or module:ClassName for your own)")
    return factory(**options)


def _imported(module_name: str, attribute: str, spec: str, *, from_file: bool = False) -> Any:
    try:
        module = _from_file(module_name) if from_file else importlib.import_module(module_name)
    except ImportError as exc:
        if from_file or (exc.name is not None and not f"{module_name}.".startswith(f"{exc.name}.")):
            raise _failed_import(spec, exc) from None     # found, but its own imports failed
        raise RecoveryError(f"cannot import module {module_name!r} for rule {spec!r}: {exc}; "
                            "check the module path (it must be importable from here, or name the file: "
                            "path/to/my_rule.py:ClassName)") from None
    except RecoveryError:   # ours, already one line (no such file, a name taken): not the module's own failure
        raise
    except Exception as exc:  # noqa: BLE001 - the user's module failed as it ran: one line with its file:line
        raise _failed_import(spec, exc) from None
    target = getattr(module, attribute, None)
    if target is None:
        raise RecoveryError(f"module {module_name!r} has no {attribute!r}; name a DivergenceRule subclass "
                            "as module:ClassName")
    return target


def _from_file(path: str) -> Any:
    """The module of a rule file, imported once under its file name (so it pickles as that module)."""
    file = Path(path)
    if not file.is_file():
        raise RecoveryError(f"no rule file {path!r}; name an existing .py file as path/to/my_rule.py:ClassName")
    name = file.stem
    known = sys.modules.get(name)
    if known is not None:
        if Path(getattr(known, "__file__", "") or "").resolve() == file.resolve():
            return known
        # registering the file under a taken name would replace that module for the whole process (json.py)
        raise RecoveryError(f"rule file {path!r} is named like the module {name!r} already imported from "
                            f"{getattr(known, '__file__', None) or 'Python itself'}; rename the file and run again")
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _failed_import(spec: str, exc: BaseException) -> RecoveryError:
    """The rule module was found but did not import: where (the deepest frame outside agent_inspect, or the
    syntax error's line) and what."""
    if isinstance(exc, SyntaxError):
        where = f"{exc.filename}:{exc.lineno}"
        problem = f"SyntaxError: {exc.msg}"
    else:
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if not os.path.abspath(f.filename).startswith(here) and not f.filename.startswith("<frozen")]
        where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"
        problem = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return RecoveryError(f"rule {spec!r} does not import: {where}: {problem}; fix it and run again")
