"""A scan under a rule whose hook raises stops with the one line every verb gives (rule, hook, file:line): each
window failed alike, and the scan came back with 0 keys and a window failure, the runtime rule's answer lost too."""

from __future__ import annotations

import pickle
import sys
from typing import Any

import pytest

import agent_inspect as ai
from agent_inspect.rules import BrokenRuleError, DivergenceRule


class _RaisesOnLookup(DivergenceRule):
    name = "raises-on-lookup"

    def lookup(self, session: Any, task: Any) -> Any:
        raise KeyError(task.state_key)


def test_a_broken_rule_error_survives_pickling() -> None:
    err = BrokenRuleError("mine", "lookup", "KeyError: 'x'", "/rules.py:3", KeyError("x"))
    back = pickle.loads(pickle.dumps(err))        # before: TypeError (a worker's error could not travel)
    assert (back.rule, back.hook, back.problem, back.where, str(back)) == \
        ("mine", "lookup", "KeyError: 'x'", "/rules.py:3", str(err))


def test_a_scan_under_a_broken_rule_raises_it(dask_client: Any) -> None:
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])   # the workers cannot import this test module
    with pytest.raises(BrokenRuleError, match=r"rule 'raises-on-lookup' is broken: lookup\(\) at .*"
                                              r"test_scan_broken_rule.py:\d+: KeyError"):
        ai.scan(str(ai.samples.path("production")), markers=ai.samples.markers("production"),
                what_if=(_RaisesOnLookup(),), client=dask_client, retries=0)
