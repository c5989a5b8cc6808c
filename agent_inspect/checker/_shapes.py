"""The call cases D01–D06 in generated histories: the shapes agents' durable calls take, and which cases a
recovery goes through (the journal decisions it replays)."""

from __future__ import annotations

import copy
import logging
import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agent_inspect.checker._history import History

if TYPE_CHECKING:
    from agent_inspect.store import DivergenceRule

__all__ = ["CALL_SHAPES", "call_shapes"]   # and, for the generator, the shapes its agents' calls take

CALL_SHAPES: Mapping[str, str] = {
    "D01": "a resumed body is served a recorded result and a recorded failure, then runs its next call",
    "D02": "a resumed body's call differs from the recorded one at its index: the journal is truncated",
    "D03": "a resumed body meets a PENDING slot of its reconcilable call: the reconciler runs",
    "D04": "a resumed record written in V1 (0.2): its call results' statuses are inferred",
    "D05": "a resumed body retries one call: its recorded failures are re-raised, its success returned",
    "D06": "a resumed Java action whose call changed is still served the recorded result (identity is its id)",
}
"""The call cases of the matrix, each as the journal decisions that show it in a replay (``call_shapes``)."""

_SERVED = ("hit", "hit-failed", "pending-hit")


JOURNAL_SHAPES = ("failure", "retries", "reconcile")
"""The call-case shapes a random agent's durable calls take: ``failure`` (a call fails, the body catches it and
calls on: D01), ``retries`` (one call retried until it succeeds: D05), ``reconcile`` (a reconcilable call: D03)."""


def journal_steps(shape: str | None, fn: str, digest: str, *, java: bool = False) -> list[dict[str, Any]]:
    """The durable calls of one body: one plain call, or the steps of a call case's shape.

    A Java action's calls carry no args digest (its identity is the call's id alone, D06).
    """
    def call(name: str, args: str, **extra: Any) -> dict[str, Any]:
        return {"call": name.rsplit(".", 1)[-1] if java else name, "args": "" if java else args, **extra}

    if shape == "failure":
        return [call(f"{fn}.ask", digest, result="answer"),
                call(f"{fn}.fetch", f"{digest}f", raises="ValueError", catch=True),
                call(f"{fn}.notify", f"{digest}n")]
    if shape == "retries":
        return [*(call(f"{fn}.chat", digest, raises="TimeoutError", catch=True) for _ in range(2)),
                call(f"{fn}.chat", digest, result="answer")]
    if shape == "reconcile":
        return [call(f"{fn}.post", digest, reconciler="succeeds")]
    return [call(fn, digest)]


def changed_code(spec: Mapping[str, Any], rng: random.Random) -> dict[str, Any] | None:
    """New code for the judged recovery: ``spec`` with one durable call changed (a new prompt), or None.

    A Python call's args digest changes, so resuming its record truncates the journal there (D02); a Java call
    keeps its digest ("") and returns something new, yet its recorded result is still served (D06).
    """
    changed = copy.deepcopy(dict(spec))
    steps = [st for table in changed["on"].values() for body in table.values() for st in body if "call" in st]
    if not steps:
        return None
    step = rng.choice(steps)
    if step["args"]:
        step["args"] = f"{step['args']}-v2"
    else:
        step["result"] = "new answer"
    return changed


def call_shapes(history: History, rule: str | DivergenceRule = "fixed") -> frozenset[str]:
    """The call cases (keys of :data:`CALL_SHAPES`) that ``history``'s judged recovery goes through under ``rule``.

    The recovery runs in the replay executor with live bodies; each resumed task's durable-call decisions
    (hit, re-raise, mismatch, reconcile, execute) are matched against the cases' shapes.

    For example::

        h = ai.checker.generate_history(19, call_shapes=1.0, durable_calls=1.0, checkpoints=0.5)
        ai.checker.call_shapes(h)                        # frozenset({'D05'}): a retried call was resumed
    """
    from agent_inspect.executor import ReplayExecutor, StepKind

    h = history
    ex = ReplayExecutor(h.log, markers=list(h.markers), plan=h.plan, agent=h.agent, rule=rule, runtime=h.runtime,
                        key_format=h.key_format, seed=h.seed)
    log = logging.getLogger("agent_inspect.executor")
    level = log.level
    log.setLevel(logging.ERROR)      # the mismatches are what is looked for: upstream's warning for each is noise here
    try:
        ex.run()
    finally:
        log.setLevel(level)
    calls: dict[int, list[Any]] = {}                         # per resumed task, its call decisions in order
    for step in ex.step_list:
        if step.kind is StepKind.RESUME and step.task is not None and step.call_index is not None:
            calls.setdefault(step.task, []).append(step)
    java = {str(a["name"]) for a in h.agent_spec.get("actions", ()) if a.get("java")}
    found: set[str] = set()
    for steps in calls.values():
        action = str(steps[0].action)
        outcomes = [str(s.outcome) for s in steps]
        found |= _shapes_of(outcomes, [(s.function_id, s.detail.get("args_digest")) for s in steps],
                            action in java, _changed(h, action))
        if h.value_format == "V1" and any(o in _SERVED for o in outcomes):
            found.add("D04")
    return frozenset(found)


def _shapes_of(outcomes: Sequence[str], identities: Sequence[tuple[Any, Any]], java: bool,
               changed: bool) -> set[str]:
    found = set()
    served = [i for i, o in enumerate(outcomes) if o in _SERVED]
    if "mismatch" in outcomes:
        found.add("D02")
    if "reconcile" in outcomes:
        found.add("D03")
    if "hit" in outcomes and "hit-failed" in outcomes and served and \
            any(o == "execute" for o in outcomes[served[-1] + 1:]) and "mismatch" not in outcomes:
        found.add("D01")
    failed_ids = [identities[i] for i, o in enumerate(outcomes) if o == "hit-failed"]
    if any(failed_ids.count(x) >= 2 or (x in [identities[i] for i in served if outcomes[i] == "hit"])
           for x in failed_ids) and not java:
        found.add("D05")
    if java and changed and "hit" in outcomes:
        found.add("D06")
    return found


def _changed(h: History, action: str) -> bool:
    """Whether the recovery runs changed code for ``action`` (its replay agent's behaviour differs)."""
    if h.replay_agent_spec is None:
        return False
    new = h.replay_agent_spec.get("on", {})
    old = h.agent_spec.get("on", {})
    return isinstance(new, Mapping) and new.get(action) != old.get(action)
