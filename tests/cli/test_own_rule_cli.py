"""A rule of your own on the command line: every verb finds ``module:Class`` next to your files, as ``rules check``
does, and takes ``path/to/file.py:Class`` too."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect.cli import main

_RULE = '''
from agent_inspect.rules import DivergenceRule, LookupDecision


class KeepsAll(DivergenceRule):
    name = "keeps-all"

    def lookup(self, session, task):
        return LookupDecision.found(session.store.get(task.state_key))
'''


@pytest.fixture
def rule_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "cli_own_rule_mod.py").write_text(_RULE)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "other_own_rule.py").write_text(_RULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in ("cli_own_rule_mod", "other_own_rule"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return tmp_path


def test_reconstruct_finds_a_rule_module_in_the_current_directory(rule_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`rules check mod:Class` imported it from the current directory, `reconstruct --rule mod:Class` said
    "No module named 'mod'"; the help of both says module:Class."""
    log = str(ai.samples.path("G01"))
    assert main(["reconstruct", log, "--rule", "cli_own_rule_mod:KeepsAll"]) == 0, capsys.readouterr().err
    assert "rule keeps-all (what-if" in capsys.readouterr().out


def test_a_rule_file_path_names_the_rule(rule_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--rule sub/file.py:Class` said "cannot import module 'sub/file.py'"."""
    log = str(ai.samples.path("G01"))
    assert main(["reconstruct", log, "--rule", "sub/other_own_rule.py:KeepsAll"]) == 0, capsys.readouterr().err
    assert "rule keeps-all (what-if" in capsys.readouterr().out
    assert ai.rules.resolve_rule(str(rule_dir / "sub" / "other_own_rule.py") + ":KeepsAll").name == "keeps-all"
    with pytest.raises(ai.RecoveryError, match=r"no rule file 'sub/nope\.py'.*"):
        ai.rules.resolve_rule("sub/nope.py:KeepsAll")


def test_a_missing_rule_file_or_a_name_taken_is_said_as_is(rule_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Our own one-line errors about a rule file were wrapped as the module's failure: "rule 'sub/nope.py:X' does not
    import: ?: RecoveryError: no rule file …; fix it and run again"."""
    for spec, says in [("sub/nope.py:KeepsAll", "no rule file 'sub/nope.py'; name an existing .py file"),
                       (":KeepsAll", "rule ':KeepsAll' names no module; write your own rule as module:ClassName"),
                       ("cli_own_rule_mod:", "rule 'cli_own_rule_mod:' names no class")]:
        with pytest.raises(ai.RecoveryError) as info:
            ai.rules.resolve_rule(spec)
        assert str(info.value).startswith(says) and "does not import" not in str(info.value), spec
        assert main(["reconstruct", str(ai.samples.path("G01")), "--rule", spec]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and says in err and "?:" not in err
