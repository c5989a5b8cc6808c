"""A mistyped business key is an error that names the close keys, not "no difference": ``agent-inspect diff A B --key
user-19`` on the production sample printed "pairs: same 0, changed 0, …", "no difference" and exited 0, which reads
as "both sides agree for this key"."""

from __future__ import annotations

import pytest

import agent_inspect as ai
from agent_inspect.cli import main
from agent_inspect.diffing import SelectorError

SAMPLE = str(ai.samples.path("production"))


def test_a_key_on_neither_side_is_an_error_with_the_close_keys() -> None:
    with pytest.raises(SelectorError, match=r"business key 'user-19' is on neither side; did you mean 'user-0019'"):
        ai.diff(f"{SAMPLE}@attempt=1", f"{SAMPLE}@attempt=2", key="user-19")


def test_a_key_on_one_side_only_is_a_difference() -> None:
    d = ai.diff(f"{SAMPLE}@attempt=1", f"{SAMPLE}@attempt=2", key="user-0011")
    assert d.counts()["only in a"] == 10


def test_the_cli_exits_2_naming_the_close_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", f"{SAMPLE}@fixed", SAMPLE, "--key", "user-19"]) == 2
    captured = capsys.readouterr()
    assert "no difference" not in captured.out
    assert "did you mean 'user-0019'" in captured.err and "\n" not in captured.err.strip()


def test_a_key_selector_names_the_close_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", f"{SAMPLE}@key=user-19", SAMPLE]) == 2
    err = capsys.readouterr().err
    # it advised `agent-inspect summary`, which counts the keys but does not list them
    assert "did you mean 'user-0019'" in err and "summary" not in err
