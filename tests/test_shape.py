"""The code base's shape, held by tests: short modules, and no new ``Any`` in the core's public signatures.

The import contracts (layers, private modules, cycles), ruff and mypy run in ``scripts/check.sh``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "agent_inspect"
MAX_LINES = 500
#: The core packages whose public signatures are typed; ``Any`` stays only where a value is free-form.
CORE = ("codec", "log", "store", "rules", "recovery", "executor")
#: Ratchet: lower it when a change removes an ``Any``; a change may never raise it.
MAX_ANY_IN_PUBLIC_SIGNATURES = 108
#: The packages above the core (typed by issue 21 item 5), with a ratchet of their own.
UPPER = ("agents", "cases", "checker", "history", "markers", "report", "samples", "fleet", "sources", "widgets")
MAX_ANY_IN_UPPER_PUBLIC_SIGNATURES = 132


def test_modules_are_short_or_say_why() -> None:
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").count("\n")
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        if lines > MAX_LINES and "Why it is long:" not in doc:
            long.append(f"{path.relative_to(PACKAGE.parent)} ({lines} lines)")
    assert not long, f"split these modules or say 'Why it is long:' in their docstring: {long}"


def _public_callables(packages: tuple[str, ...] = CORE) -> list[tuple[str, object]]:
    out = []
    for pkg in packages:
        module = importlib.import_module(f"agent_inspect.{pkg}")
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj):
                out += [(f"{pkg}.{name}.{n}", f) for n, f in vars(obj).items()
                        if callable(f) and (not n.startswith("_") or n == "__init__")]
            elif callable(obj):
                out.append((f"{pkg}.{name}", obj))
    return out


def _any_count(func: object) -> int:
    try:
        sig = inspect.signature(func)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0
    annotations = [str(p.annotation) for p in sig.parameters.values()] + [str(sig.return_annotation)]
    return sum(a.count("Any") for a in annotations)


def test_no_new_any_in_public_signatures() -> None:
    counts = {name: n for name, func in _public_callables() if (n := _any_count(func))}
    total = sum(counts.values())
    worst = sorted(counts.items(), key=lambda kv: -kv[1])[:10]
    assert total <= MAX_ANY_IN_PUBLIC_SIGNATURES, (
        f"{total} Any in the core's public signatures (the ratchet is {MAX_ANY_IN_PUBLIC_SIGNATURES}); "
        f"type the new ones. Most: {worst}")


def test_no_new_any_in_upper_public_signatures() -> None:
    counts = {name: n for name, func in _public_callables(UPPER) if (n := _any_count(func))}
    total = sum(counts.values())
    worst = sorted(counts.items(), key=lambda kv: -kv[1])[:10]
    assert total <= MAX_ANY_IN_UPPER_PUBLIC_SIGNATURES, (
        f"{total} Any in the upper packages' public signatures (the ratchet is "
        f"{MAX_ANY_IN_UPPER_PUBLIC_SIGNATURES}); type the new ones. Most: {worst}")
