"""An unknown rule name offers the closest built-in names, as an unknown key or action does (the executor's
what-if rule included); a name close to none still lists them all."""

from __future__ import annotations

import pytest

import agent_inspect as ai


def test_an_unknown_rule_of_the_executor_offers_the_closest_names() -> None:
    log = ai.load(ai.samples.path("production"))
    with pytest.raises(ai.RecoveryError, match=r"unknown rule 'fxed'; did you mean 'fixed'\?; use one of original"):
        ai.ReplayExecutor(log, markers=ai.samples.markers("production"), rule="fxed")


def test_a_name_close_to_none_lists_the_rules() -> None:
    with pytest.raises(ai.RecoveryError, match=r"^unknown rule 'zzz'; use one of original, naive"):
        ai.rules.resolve_rule("zzz")
