"""Names that moved to another package keep working for one release, with a DeprecationWarning."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["moved", "renamed"]


def moved(module: str, names: Mapping[str, str]) -> Callable[..., Any]:
    """A module ``__getattr__`` serving ``names`` (old name → new module) with a warning.

    The target is imported on first use (by name, so the layers stay one-way at import time).
    """

    def __getattr__(name: str, stacklevel: int = 2) -> Any:
        target = names.get(name)
        if target is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(f"{module}.{name} moved to {target}.{name}; import it from there "
                      "(the old name will be removed in the next release)", DeprecationWarning, stacklevel=stacklevel)
        return getattr(importlib.import_module(target), name)

    return __getattr__


def renamed(module: str, names: Mapping[str, str],
            fallback: Callable[..., Any] | None = None) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving old names (old name → new name in ``module``) with a warning.

    Other names go to ``fallback``, a :func:`moved` hook (its warning still points at the caller's line).
    """

    def __getattr__(name: str) -> Any:
        new = names.get(name)
        if new is None:
            if fallback is not None:
                return fallback(name, stacklevel=3)
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(f"{module}.{name} is now {module}.{new} (the old name will be removed in the next release)",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(module), new)

    return __getattr__
