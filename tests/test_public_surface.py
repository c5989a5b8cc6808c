"""The top-level verbs are plain functions, and no deprecated alias is left (0.1.0 was never released)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import tomllib
from pathlib import Path

import agent_inspect as ai

ROOT = Path(__file__).parents[1]


def test_the_verbs_are_functions() -> None:
    for name in ("load", "predict", "reconstruct", "explain", "diff", "verify", "scan", "inspect", "write_report"):
        assert inspect.isfunction(getattr(ai, name)), name
    from agent_inspect import diffing, fleet, recovery

    assert ai.predict is recovery.predict and ai.diff is diffing.diff and ai.scan is fleet.scan
    # importing the packages (which sets them on their parent) changes none of that
    assert inspect.isfunction(ai.diff) and inspect.isfunction(ai.scan)


def test_no_module_serves_names_through_a_module_getattr() -> None:
    # a module-level __getattr__ was how deprecated aliases were served; only the lazy top level keeps one
    served = []
    for info in pkgutil.walk_packages(ai.__path__, "agent_inspect."):
        if info.name.startswith(("agent_inspect.widgets", "agent_inspect.samples.__main__", "agent_inspect.__main__")):
            continue
        module = importlib.import_module(info.name)
        if "__getattr__" in vars(module):
            served.append(info.name)
    assert served == []
    assert not (ROOT / "agent_inspect" / "_deprecated.py").exists()


def test_version_and_changelog_agree() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["version"] == ai.__version__ == "0.2.0"
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## {re.escape(ai.__version__)}\b", changelog, re.M)


def test_no_data_directory_shadows_a_public_name() -> None:
    # a directory without __init__.py imports as a namespace package, and importing it (a docs tool, a resources
    # lookup) sets it on its parent: cases/builtin/ once replaced ai.cases.builtin(), the function, by a module
    clashes = []
    for folder in (ROOT / "agent_inspect").rglob("*"):
        if folder.is_dir() and not (folder / "__init__.py").exists() and folder.name != "__pycache__":
            parent = ".".join(folder.parent.relative_to(ROOT).parts)
            names = getattr(importlib.import_module(parent), "__all__", ())
            if folder.name in names:
                clashes.append(f"{parent}.{folder.name}")
    assert clashes == []
