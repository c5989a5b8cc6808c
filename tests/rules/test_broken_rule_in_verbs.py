"""A user's rule that is wrong in an obvious way, run by a verb: one line naming the rule and what it did."""

from __future__ import annotations

from typing import Any

import pytest

import agent_inspect as ai
from agent_inspect.rules import BrokenRuleError, DivergenceRule, LookupDecision


class _KeepsEntries(DivergenceRule):
    """The rules below differ in their lookup only (but one, whose rebuild is the fault)."""

    def rebuild(self, session: Any, entry: Any) -> Any:
        return entry


class _Raises(_KeepsEntries):
    name = "raises"
    summary = "its lookup raises"

    def lookup(self, session: Any, task: Any) -> Any:
        raise KeyError(task.state_key)


class _ReturnsText(_KeepsEntries):
    name = "returns-text"
    summary = "its lookup returns a word"

    def lookup(self, session: Any, task: Any) -> Any:
        return "REUSE"


class _RebuildsTrue(DivergenceRule):
    name = "rebuilds-true"
    summary = "its rebuild returns True"

    def rebuild(self, session: Any, entry: Any) -> Any:
        return True

    def lookup(self, session: Any, task: Any) -> Any:
        return LookupDecision.found(session.store.get(task.state_key))


class _Repeats(_KeepsEntries):
    name = "repeats"
    summary = "the fixed rule's decisions, marked repeatable"
    repeatable_lookup = True

    def lookup(self, session: Any, task: Any) -> Any:
        return LookupDecision.found(session.store.get(task.state_key))


@pytest.mark.parametrize("verb", [ai.predict, ai.reconstruct])
def test_a_broken_rule_names_itself_and_what_it_returned(verb: Any) -> None:
    """The guide's step 3 (run your rule on your log) ended in the engine's AttributeError ("'str' object has no
    attribute 'outcome'") or the rule's bare KeyError, naming neither the rule nor its hook."""
    log = ai.load(ai.samples.path("G01"))
    with pytest.raises(BrokenRuleError, match=r"rule 'returns-text' is broken: lookup\(\) at .*"
                                              r"test_broken_rule_in_verbs.py:\d+: returned str, expected a LookupDecision"):
        verb(log, rule=_ReturnsText())
    with pytest.raises(BrokenRuleError, match=r"rule 'rebuilds-true' is broken: rebuild\(\) .*returned bool"):
        verb(log, rule=_RebuildsTrue())
    with pytest.raises(BrokenRuleError, match=r"rule 'raises' is broken: lookup\(\) at .*"
                                              r"test_broken_rule_in_verbs.py:\d+: KeyError") as raised:
        verb(log, rule=_Raises())
    assert isinstance(raised.value.error, KeyError) and "\n" not in str(raised.value)


def test_a_guarded_rule_keeps_what_the_rule_declares() -> None:
    """The guard changes no answer: a rule's own repeatable lookup, its name and label are kept."""
    log = ai.load(ai.samples.path("production"))
    markers = ai.samples.markers("production")
    rule = _Repeats()
    pred = ai.predict(log, markers=markers, rule=rule)
    assert pred.rule == "repeats" and pred.recovery.rule.name == "repeats"
    from agent_inspect.store import RecoverySession

    assert RecoverySession(pred.recovery.rule).repeatable_lookup
    same = ai.predict(log, markers=markers, rule=ai.rules.GuardedRule(rule))
    assert same.tasks["outcome"].tolist() == pred.tasks["outcome"].tolist()


def test_a_broken_rule_says_what_to_do_next() -> None:
    """The one line named the hook and its file:line but no next step: what to fix, and how to see the hook's
    traceback (the CLI, `check` and `compare` show the line alone)."""
    log = ai.load(ai.samples.path("G01"))
    with pytest.raises(BrokenRuleError) as raised:
        ai.predict(log, rule=_Raises())
    text = str(raised.value)
    assert "; fix lookup() at that line" in text and "ai.predict(log, rule=_Raises())" in text, text
    assert "traceback" in text and "\n" not in text
    assert raised.value.__cause__ is raised.value.error       # the traceback the message points to
    with pytest.raises(BrokenRuleError) as returned:
        ai.predict(log, rule=_ReturnsText())
    assert str(returned.value).endswith("; make every path of lookup() return one"), str(returned.value)
    report = ai.checker.check(_Raises(), n=2, seed=1, sweep=False)
    assert report.broken is not None and "; fix lookup() at that line" in report.broken
