"""A rule or markers given to ``diff`` when neither side runs a recovery would change nothing: refused, not dropped."""

from __future__ import annotations

import pytest

import agent_inspect as ai
from agent_inspect.cli import main
from agent_inspect.diffing import SelectorError


def test_settings_no_side_uses_are_refused_saying_how_to_run_a_recovery() -> None:
    # a path (as ai.samples.path gives it) is a side like its text: it was refused ("cannot diff a PosixPath")
    path = ai.samples.path("production")
    log = ai.load(path)
    # before: "no difference" (same=1045): the rule was never run, and a broken rule went unnoticed
    with pytest.raises(SelectorError, match=r"rule= and markers= would change nothing: neither side runs a recovery "
                                            r"\(both are logs\).*@predict=RULE"):
        ai.diff(log, log, rule="fixed", markers=ai.samples.markers("production"))
    with pytest.raises(SelectorError, match=r"rule= would change nothing"):
        ai.diff(path, f"{path}@attempt=1", rule="fixed")
    # a side that runs one takes them, as before
    d = ai.diff(f"{path}@predict=original", f"{path}@predict=fixed", markers=ai.samples.markers("production"))
    assert d.counts()["changed"] > 0


def test_the_cli_diff_of_two_logs_with_a_rule_says_it_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(ai.samples.path("production"))
    assert main(["diff", path, path, "--rule", "fixed"]) == 2            # before: 0, "no difference"
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "would change nothing" in err and "Traceback" not in err
