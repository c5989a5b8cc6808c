"""A rule's ``:flavour`` suffix: only ``original`` takes one, and it must name one of the store flavours; an empty
one (``original:``, ``fixed:``) is refused like an unknown one (it was taken as no flavour at all)."""

from __future__ import annotations

import re

import pytest

import agent_inspect as ai
from agent_inspect.cli import main

VALID = "original:kafka-k1, original:fluss-k1, original:segment"


@pytest.mark.parametrize("rule", ["original:", "original:bogus", "original:auto"])
def test_an_empty_or_unknown_flavour_lists_the_valid_ones(rule: str) -> None:
    with pytest.raises(ai.RecoveryError, match=f"; use one of {VALID}, or 'original' for the flavour inferred") as info:
        ai.rules.resolve_rule(rule)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("rule", ["fixed:", "naive:kafka-k1", "fixed+round-regression:"])
def test_a_flavour_on_another_rule_is_refused(rule: str) -> None:
    base = rule.partition(":")[0]
    with pytest.raises(ai.RecoveryError, match=rf"only the original rule has store flavours \({VALID}\); "
                                               rf"use '{re.escape(base)}' alone"):
        ai.rules.resolve_rule(rule)


def test_the_valid_flavours_and_no_suffix_resolve() -> None:
    for flavour in ai.rules.FLAVOURS:
        assert ai.rules.resolve_rule(f"original:{flavour}").flavour == flavour
    assert ai.rules.resolve_rule("original").flavour is None


@pytest.mark.parametrize("rule", ["fixed:", "original:"])
def test_the_cli_refuses_it_in_one_line(rule: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reconstruct", str(ai.samples.path("G01")), "--rule", rule]) == 2
    said = capsys.readouterr()
    assert said.out == "" and said.err.count("\n") == 1 and VALID in said.err
    assert ai.predict(ai.load(ai.samples.path("G01")), rule="original:kafka-k1") is not None   # the library alike
    with pytest.raises(ai.RecoveryError, match="names no flavour|only the original rule"):
        ai.predict(ai.load(ai.samples.path("G01")), rule=rule)
