"""A rule module that does not import (a syntax error, a failing import inside it, an error at import) is one
RecoveryError naming the file and line and what to fix, not a traceback from the CLI."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect._errors import RecoveryError
from agent_inspect.cli import main
from agent_inspect.rules import resolve_rule

_FILES = {
    "rule_syntax_zz.py": "from agent_inspect.rules import DivergenceRule\nclass X(DivergenceRule)\n    name = 'x'\n",
    "rule_raises_zz.py": "x = 1\nraise RuntimeError('boom at import')\n",
    "rule_needs_zz.py": "import nonexistent_pkg_zz\n",
}


@pytest.fixture
def rule_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, text in _FILES.items():
        (tmp_path / name).write_text(text)
        monkeypatch.delitem(sys.modules, name[:-3], raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    return tmp_path


@pytest.mark.parametrize("spec", ["rule_syntax_zz:X", "rule_syntax_zz.py:X"])
def test_a_syntax_error_names_the_file_and_line(rule_dir: Path, spec: str) -> None:
    with pytest.raises(RecoveryError, match=r"rule_syntax_zz\.py:2: SyntaxError: expected ':'; fix it"):
        resolve_rule(spec)


def test_an_error_at_import_names_the_line(rule_dir: Path) -> None:
    with pytest.raises(RecoveryError, match=r"rule_raises_zz\.py:2: RuntimeError: boom at import"):
        resolve_rule("rule_raises_zz.py:X")


def test_a_missing_package_inside_the_module_is_not_a_wrong_path(rule_dir: Path) -> None:
    """It said "check the module path", though the module was found and its own import failed."""
    with pytest.raises(RecoveryError, match=r"rule_needs_zz\.py:1: .*No module named 'nonexistent_pkg_zz'") as err:
        resolve_rule("rule_needs_zz:X")
    assert "module path" not in str(err.value)


def test_the_cli_prints_one_line(rule_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reconstruct", str(ai.samples.path("G01")), "--rule", "rule_syntax_zz.py:X"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "SyntaxError" in err, err


def test_a_rule_file_named_like_an_imported_module_is_refused(tmp_path: Path) -> None:
    # registered under its file name, json.py would have replaced the json module for the whole process
    import json

    (tmp_path / "json.py").write_text("from agent_inspect.store import DivergenceRule\n"
                                      "class Mine(DivergenceRule):\n    name = 'mine'\n")
    with pytest.raises(RecoveryError, match=r"named like the module 'json' already imported .*rename the file"):
        resolve_rule(f"{tmp_path / 'json.py'}:Mine")
    assert sys.modules["json"] is json
