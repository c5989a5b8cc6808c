"""Debugger control over the engine: step, run to a breakpoint, back, reset, a simulated failure."""

from __future__ import annotations

import dataclasses
import numbers
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from agent_inspect._errors import ReplayError
from agent_inspect._glossary import did_you_mean
from agent_inspect.executor._engine import Engine
from agent_inspect.executor._steps import Breakpoint, JobFailed, Step, StepKind, step_kind

__all__ = ["Debugger", "DriverAction", "Until"]

Until = Breakpoint | StepKind | str | Callable[[Step], bool] | None
"""Where ``run()`` stops: a :class:`Breakpoint`, a step kind, or a predicate on :class:`Step`."""


@dataclass(frozen=True)
class DriverAction:
    """Something the driver did between steps (a checkpoint): ``back()`` redoes it at step ``at``."""

    at: int
    added: int             # steps it added (a checkpoint's PRUNE steps go back together)
    redo: Callable[[], object]


def step_count(steps: int | None, what: str, zero: str, none: str) -> int | None:
    """``steps`` checked as a count of steps: an integral number >= 0 (a numpy count will do) or None, else a
    ReplayError saying what ``what`` takes (``zero`` and ``none``: what 0 and None mean there)."""
    if steps is None:
        return None
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 0:
        raise ReplayError(f"{what} takes a number of steps >= 0 ({zero}) or None ({none}), got {steps!r}")
    return int(steps)


class Debugger:
    """Moves one engine forward and back; ``back()`` re-runs deterministically from the start."""

    def __init__(self, engine: Engine, *, breakpoints: Iterable[Breakpoint] = (),
                 fail_after: int | None = None) -> None:
        self.engine = engine
        self.breakpoints: list[Breakpoint] = list(breakpoints)
        self.fail_after = fail_after       # checked by the setter
        self.driver: list[DriverAction] = []   # what the driver did between steps, redone by back()
        for bp in self.breakpoints:
            self.keyed(bp)                  # a key no step can carry fails here, not silently never stops

    @property
    def fail_after(self) -> int | None:
        """The step count after which the simulated job dies (None: never)."""
        return self._fail_after

    @fail_after.setter
    def fail_after(self, steps: int | None) -> None:
        self._fail_after = step_count(steps, "fail_after", "0 fails the job before its first step", "never fails")

    @property
    def done(self) -> bool:
        run = self.engine.run
        return run.finished or run.failure is not None

    def reset(self) -> None:
        self.driver = []
        self.engine.restart()

    def ensure_started(self) -> None:
        if self.engine.run.session is None and not self.engine.run.steps:
            self.step()

    def step(self) -> Step | None:
        if self.done:
            return None
        run = self.engine.run
        if self.engine.thread != threading.get_ident():
            # a greenlet only runs on the thread that made it: rebuild this state here (deterministic)
            self.replay_to(len(run.steps))
            run = self.engine.run
        if self.fail_after is not None and len(run.steps) >= self.fail_after:
            run.failure = run.failure or JobFailed(f"simulated failure after step {self.fail_after}")
            return None
        return self.engine.advance()

    def run(self, until: Until = None, *, max_steps: int | None = None) -> Step | None:
        step_count(max_steps, "run(max_steps=...)", "0 runs none", "no limit")
        stop = _predicate(self.keyed(until) if isinstance(until, Breakpoint) else until)
        breakpoints = [self.keyed(b) for b in self.breakpoints]
        if max_steps == 0:
            steps = self.engine.run.steps
            return steps[-1] if steps else None
        n = 0
        while True:
            s = self.step()
            if s is None:
                return None
            n += 1
            if ((stop is not None and stop(s)) or any(b.matches(s) for b in breakpoints)
                    or (max_steps is not None and n >= max_steps)):
                return s

    def keyed(self, bp: Breakpoint) -> Breakpoint:
        """``bp`` with its key as steps name it (:meth:`known_key`); an action the agent does not declare raises
        ``ReplayError``: it would never stop."""
        if bp.action is not None:
            actions = sorted({d.name for d in self.engine.agent.actions})
            if bp.action not in actions:
                raise ReplayError(f"breakpoint action {bp.action!r} is not an action of the agent, so it would never "
                                  f"stop a run{did_you_mean([bp.action], actions)} (its actions: {', '.join(actions)})")
        if bp.key is None:
            return bp
        key = self.known_key(bp.key, "breakpoint", "it would never stop a run")
        return bp if key == bp.key else dataclasses.replace(bp, key=key)

    def known_key(self, key: str, use: str, because: str) -> str:
        """``key`` as steps name it (a Flink key text becomes the log's business key); a key that is neither the
        log's nor the plan's raises ``ReplayError`` naming ``use`` and the closest keys: ``because`` says why."""
        business = self.engine.business_key(key)
        known, names = self.engine.known_keys
        if business not in known:
            where, listed = ("the log or the plan", " (log.keys() lists the log's)") if self.engine.log is not None \
                else ("the plan", "")
            raise ReplayError(f"{use} key {key!r} is not a key of {where}, so {because}"
                              f"{did_you_mean([key], names)}{listed}")
        return business

    def back(self) -> Step | None:
        steps = self.engine.run.steps
        if not steps:
            return None
        target = len(steps) - 1
        for a in self.driver:
            if a.at < target < a.at + a.added:
                target = a.at
        self.replay_to(target)
        steps = self.engine.run.steps
        return steps[-1] if steps else None

    def replay_to(self, target: int) -> None:
        """Re-run from the start to ``target`` steps, redoing the driver's actions where they happened."""
        keep = [a for a in self.driver if a.at + a.added <= target]
        self.engine.restart()
        self.driver = []
        while True:
            if keep and keep[0].at == len(self.engine.run.steps):
                keep.pop(0).redo()
                continue
            if len(self.engine.run.steps) >= target or self.step() is None:
                break


def _predicate(until: Until) -> Callable[[Step], bool] | None:
    if until is None:
        return None
    if isinstance(until, Breakpoint):
        return until.matches
    if isinstance(until, (StepKind, str)):
        kind = step_kind(until)
        return lambda s: s.kind is kind
    if callable(until):
        return until
    raise ReplayError("run(until=...) takes a Breakpoint, a step kind or a predicate on Step")
