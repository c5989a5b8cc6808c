"""One count of calls: ``predict``'s tasks and the executor run as the job's operator (production mode) say how
many durable calls (``calls_executed``) and sub-agent calls (``calls_subagent``) each task makes again.

A sub-agent call that runs is no call that leaves the job (the child's rows count those): both verbs keep it out
of ``calls_executed``, and a scan keeps it out of ``<rule>_calls``.
"""

from __future__ import annotations

from collections import Counter

import pytest

import agent_inspect as ai
from agent_inspect.executor import StepKind
from agent_inspect.executor._steps import call_counter
from agent_inspect.store import Outcome

COUNTS = ("calls_executed", "calls_subagent")


def _predicted(tasks: object) -> dict[tuple[str, int], tuple[int, int]]:
    seen: Counter[str] = Counter()
    out = {}
    for row in tasks.itertuples(index=False):  # type: ignore[attr-defined]
        if row.outcome != Outcome.NOT_DISPATCHED:
            out[(str(row.state_key), seen[str(row.state_key)])] = (int(row.calls_executed), int(row.calls_subagent))
            seen[str(row.state_key)] += 1
    return out


def _executed(ex: ai.ReplayExecutor) -> dict[tuple[str, int], tuple[int, int]]:
    seen: Counter[str] = Counter()
    label: dict[int, tuple[str, int]] = {}
    made: dict[int, Counter[str]] = {}
    for step in ex.step_list:
        if step.kind is StepKind.LOOKUP and step.task is not None and step.task not in label:
            label[step.task] = (str(step.state_key), seen[str(step.state_key)])
            seen[str(step.state_key)] += 1
        elif step.kind in (StepKind.RESUME, StepKind.RERUN) and step.call_index is not None:
            assert step.task is not None
            made.setdefault(step.task, Counter())[call_counter(step) or ""] += 1
    return {t: tuple(made.get(i, Counter())[c] for c in COUNTS) for i, t in label.items()}  # type: ignore[misc]


@pytest.mark.parametrize("name", ["subagents", "subagents_v4", "production"])
def test_predict_and_the_executor_count_the_same_calls_per_task(name: str) -> None:
    log = ai.load(ai.samples.path(name))
    recovery = ai.Recovery.for_log(log, markers=ai.samples.markers(name))
    pred = ai.predict(log, recovery=recovery)
    ex = ai.ReplayExecutor(log, recovery=recovery)
    ex.run()
    assert ex.done
    assert _predicted(pred.tasks) == _executed(ex)
    assert int(pred.tasks["calls_executed"].sum()) == ex.counters.calls_executed
    assert int(pred.tasks["calls_subagent"].sum()) == ex.counters.calls_subagent > 0
    assert sum(pred.calls_executed().values()) == ex.counters.calls_executed
