"""What ``explain`` looks up across a prediction's tasks, indexed once per tasks frame: an export explains every
task (``ai.to_otel``), and scanning every task per task made that quadratic (22 s of a 500-key fleet's export)."""

from __future__ import annotations

import bisect
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from agent_inspect.store import Outcome

__all__ = ["TaskIndex", "task_index"]

_RAN_AGAIN = (Outcome.RERUN.value, Outcome.RESUME.value)


@dataclass(frozen=True)
class TaskIndex:
    """Per task row: the first cache event any later task made; per cache event: the first task whose ops hold it;
    per state key: the events that removed it (ascending) and the rows that ran it again (RERUN / RESUME)."""

    later_bound: tuple[int | None, ...]
    task_of_event: dict[int, int]
    removals: dict[str, list[int]]
    ran_again: dict[str, list[int]]
    body_ran: tuple[bool, ...]
    calls_executed: tuple[int, ...]

    def last_removal(self, events: Sequence[Any], i: int, state_key: str) -> Any:
        """The last cache event before task ``i``'s decision that removed ``state_key`` (None: none did)."""
        bound = self.later_bound[i]
        found = self.removals.get(state_key, [])
        k = bisect.bisect_left(found, len(events) if bound is None else bound)
        return events[found[k - 1]] if k else None

    def cost(self, removed: set[str]) -> dict[str, int]:
        """Tasks, bodies and durable calls run again on the records of ``removed`` state keys."""
        rows = {j for sk in removed for j in self.ran_again.get(sk, ())}
        bodies = [j for j in rows if self.body_ran[j]]
        return {"tasks": len(rows), "bodies": len(bodies), "calls": sum(self.calls_executed[j] for j in bodies)}


def task_index(tasks: pd.DataFrame, events: Sequence[Any]) -> TaskIndex:
    """The :class:`TaskIndex` of ``tasks`` and its cache ``events``, made once while the frame lives."""
    made = _INDEXES.get(id(tasks))
    if made is not None and made[0]() is tasks and made[1] is events:
        return made[2]
    index = _build(tasks, events)
    _INDEXES[id(tasks)] = (weakref.ref(tasks), events, index)
    weakref.finalize(tasks, _INDEXES.pop, id(tasks), None)
    return index


_INDEXES: dict[int, tuple[weakref.ref[pd.DataFrame], Sequence[Any], TaskIndex]] = {}


def _build(tasks: pd.DataFrame, events: Sequence[Any]) -> TaskIndex:
    ops = tasks["cache_ops"].tolist()
    later: list[int | None] = [None] * len(ops)
    least: int | None = None
    for i in range(len(ops) - 1, -1, -1):
        later[i] = least
        for ev in ops[i]:
            least = ev.index if least is None else min(least, ev.index)
    task_of_event: dict[int, int] = {}
    for j, task_ops in enumerate(ops):
        for ev in task_ops:
            task_of_event.setdefault(ev.index, j)
    removals: dict[str, list[int]] = {}     # positions in ``events``, as the chain bounds them
    for pos, ev in enumerate(events):
        for sk in dict.fromkeys(e.state_key for e in ev.removed):
            removals.setdefault(sk, []).append(pos)
    ran_again: dict[str, list[int]] = {}
    outcomes = tasks["outcome"].astype(object).tolist()
    for j, (sk, outcome) in enumerate(zip(tasks["state_key"].tolist(), outcomes)):
        if outcome in _RAN_AGAIN:
            ran_again.setdefault(sk, []).append(j)
    body_ran = tuple(bool(b) for b in tasks["body_ran"].tolist())
    calls = tuple(0 if pd.isna(c) else int(c) for c in tasks["calls_executed"].tolist())
    return TaskIndex(tuple(later), task_of_event, removals, ran_again, body_ran, calls)
