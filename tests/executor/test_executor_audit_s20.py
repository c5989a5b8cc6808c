"""New-user audit (s20) of the executor as a debugger: options and breakpoints that would silently change or never
stop a replay are refused when given, and a safety report of a paused replay says it covers only the steps so far."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import agent_inspect as ai
from agent_inspect import ReplayError
from agent_inspect.executor import Breakpoint


@pytest.fixture(scope="module")
def log() -> ai.ActionStateLog:
    return ai.load(ai.samples.path("production"))


def test_a_breakpoint_outcome_no_step_has_is_refused_naming_the_closest(log: ai.ActionStateLog) -> None:
    with pytest.raises(ReplayError, match=r"breakpoint outcome 'nonsense' is no step's outcome.*never stop"):
        Breakpoint(outcome="nonsense")
    # a step kind given as the outcome: the kinds are named, as is the way to stop there
    with pytest.raises(ReplayError, match=r"'eviction' is a step kind: Breakpoint\(kind='eviction'\)"):
        Breakpoint(outcome="eviction")
    with pytest.raises(ReplayError, match=r"did you mean 'reuse'"):
        Breakpoint(outcome="reused")
    ex = ai.ReplayExecutor(log, rule="fixed", markers=ai.samples.markers("production"))
    with pytest.raises(ReplayError, match="breakpoint outcome"):
        ex.add_breakpoint(outcome="rerunn")
    assert ex.breakpoints == []
    # every outcome a step can carry is taken, in any case: decisions, cache operations, call-result writes
    for outcome in ("rerun", "REUSE", "not-dispatched", "evict", "remove", "cross-key", "execute", "call results (2)"):
        Breakpoint(outcome=outcome)
    ex.add_breakpoint(outcome="remove")
    step = ex.run()
    assert step is not None and step.outcome == "remove"


@pytest.mark.parametrize(("option", "value", "says"), [
    ("key_format", "K9", r"key_format 'K9'.*K1, .*K2"),
    ("source_kind", "pulsar", r"source_kind 'pulsar'.*kafka.*fluss"),
    ("value_format", "V9", r"value_format 'V9'.*V3.*V4"),
    ("num_partitions", 0, r"num_partitions takes a count >= 1.*got 0"),
    ("attempt", -1, r"attempt takes an attempt number >= 0.*got -1"),
    ("memory_decoder", 3, r"memory_decoder takes a function.*got int"),
])
def test_an_option_no_replay_can_use_is_refused_when_given(log: ai.ActionStateLog, option: str, value: Any,
                                                           says: str) -> None:
    # before: K9 replayed 3,156 steps instead of 1,427 with no word; the others failed (or not) steps later
    with pytest.raises(ReplayError, match=says):
        ai.ReplayExecutor(log, markers=ai.samples.markers("production"), **{option: value})
    with pytest.raises(ReplayError, match=says):
        ai.executor.ExecutorOptions(**{option: value})


def test_a_report_of_a_paused_replay_says_it_covers_the_steps_so_far(log: ai.ActionStateLog) -> None:
    ex = ai.ReplayExecutor(log, markers=ai.samples.markers("production"))
    before = ex.report()
    assert not before.complete
    assert "not started" in repr(before) and "run() to the end" in before._repr_html_()
    # reading the report (its stale records come from the rebuild) takes no step: it took the rebuild's
    assert len(ex.step_list) == 0 and repr(ex).startswith("ReplayExecutor(0 steps")
    assert isinstance(ex.stale_records(), pd.DataFrame) and len(ex.step_list) == 0
    ex.run(max_steps=400)
    mid = ex.report()
    assert len(ex.step_list) == 400
    assert not mid.complete and "partial: paused after 400 steps" in repr(mid)
    assert "partial: paused after 400 steps" in mid._repr_html_()
    ex.run()
    end = ex.report()
    assert end.complete and "partial" not in repr(end) and "partial" not in end._repr_html_()
    failed = ai.ReplayExecutor(log, markers=ai.samples.markers("production"), fail_after=50)
    failed.run()
    report = failed.report()
    assert report.complete and "stopped: 'simulated failure after step 50'" in repr(report)   # the job's end


def _decisions_of(ex: ai.ReplayExecutor) -> list[tuple[str, int, str, str]]:
    kinds = (ai.executor.StepKind.LOOKUP, ai.executor.StepKind.NOT_DISPATCHED)
    return [(str(s.key), int(s.seq or 0), str(s.action), str(s.outcome)) for s in ex.step_list if s.kind in kinds]


def _decisions_of_prediction(p: Any) -> list[tuple[str, int, str, str]]:
    t = p.tasks
    return [(str(b), int(s), str(n), str(o)) for b, s, n, o in zip(t["business_key"], t["seq"], t["action"],
                                                                    t["outcome"], strict=True)]


def test_a_restore_from_an_executor_checkpoint_predicts_as_it_replays(log: ai.ActionStateLog) -> None:
    ex = ai.ReplayExecutor(log, rule="fixed", markers=ai.samples.markers("production"), seed=3)
    ex.run(max_steps=100)
    ex.run(until="lookup")
    ex.checkpoint()
    ex.run(max_steps=300)                 # the job dies here
    taken, topic = ex.checkpoints[-1], ex.to_log()
    again = ai.ReplayExecutor(topic, restore=taken, rule="fixed", seed=4)
    again.run()
    replayed = _decisions_of(again)
    assert len(replayed) == 16
    # the executor's recovery says where its plan came from, and replays as predict does with it
    assert f"checkpoint of step {taken.step}" in again.recovery.provenance["plan"]
    assert _decisions_of_prediction(ai.predict(topic, recovery=again.recovery)) == replayed   # before: 7 RERUN
    # the checkpoint itself is markers every verb takes, with the plan it restores
    assert _decisions_of_prediction(ai.predict(topic, markers=taken, rule="fixed")) == replayed  # before: refused
    assert ai.reconstruct(topic, markers=taken, rule="fixed").recovery.markers == [dict(taken.marker)]
