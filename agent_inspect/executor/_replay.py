"""``ReplayExecutor``: the one public face of the engine, its debugger, production mode and inspection."""

from __future__ import annotations

import numbers
import random
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Unpack, cast

from agent_inspect._errors import ReplayError
from agent_inspect._glossary import count_words, did_you_mean, plural
from agent_inspect._html import Code, HtmlPart, HtmlRepr, Strong, Table, Text
from agent_inspect.agents import Agent, AsRecordedAgent, FlinkAgentAdapter, is_flink_agent
from agent_inspect.executor._engine import Engine
from agent_inspect.executor._options import OPTION_NAMES, CallServer, ExecutorOptions, ExecutorOverrides, as_policies
from agent_inspect.executor._production import Production
from agent_inspect.executor._report import (
    ReplaySafetyReport,
    cache_frame,
    counters_of,
    outputs_frame,
    stale_records_frame,
    steps_frame,
)
from agent_inspect.executor._steps import (
    Breakpoint,
    Checkpoint,
    Counters,
    JobFailed,
    MemoryByKey,
    MemoryState,
    Step,
    StepKind,
    step_kind,
)
from agent_inspect.recovery import SETTING_NAMES, PendingTask, Recovery, ReplayPlan, source_kind_of
from agent_inspect.recovery.engine import KeyMaker

if TYPE_CHECKING:
    import pandas as pd

    from agent_inspect.log import ActionStateLog
    from agent_inspect.raw import RawBatch
    from agent_inspect.recovery import Reconstruction
    from agent_inspect.store import RecoverySession, Store

__all__ = ["ReplayExecutor"]

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


class ReplayExecutor(HtmlRepr):
    """Step through a recovery (or a dry-run replay) one store decision at a time.

    Build it from a loaded log (or a reconstruction, whose settings are then the defaults) with the recovery
    settings (``recovery=``, a :class:`~agent_inspect.recovery.Recovery`, or its settings as keywords) and the
    executor's own :class:`ExecutorOptions` (``options=``, or its fields as keywords; keywords win, and a keyword
    given as None is not given). With no rule given the rule is the one the log's runtime ships.
    Settings: ``rule``, ``markers``, ``runtime``, ``store_flavour``, ``kafka_pending``, ``plan``, ``agent``,
    ``call_matching``, ``expected_fingerprint``, ``max_parallelism``. Options: ``policies``, ``memory``,
    ``sensory``, ``memory_decoder``, ``restore``, ``key_format``, ``source_kind``, ``attempt``, ``seed``,
    ``breakpoints``, ``fail_after``, ``value_format``, ``num_partitions``, ``clock``, ``prune_tombstones``.

    The loaded records are a read-only base: every write goes to an overlay (see :attr:`journal`) and no source
    client is ever used. Bodies must have side effects only through their context; ``back()`` re-runs from the
    start, serving durable calls that already ran from memory. Steps, memory and the store use the log's business
    key (the digest under K1.6/K2); plan keys may also be Flink key texts.

    Production mode: with no log the executor is the *operator* of a fresh job: :attr:`journal` holds its writes,
    :meth:`checkpoint` keeps a :class:`Checkpoint`, :meth:`to_log` gives the topic as it now reads; the next attempt
    is ``ReplayExecutor(ex.to_log(), restore=ex.checkpoints[-1], plan=..., rule=...)``.

    For example::

        ex = ai.ReplayExecutor(log, rule="fixed", markers=ai.samples.markers("production"))
        ex.step(); ex.run(until="eviction"); ex.back()
        ex.steps, ex.store, ex.counters
    """

    def __init__(self, subject: ActionStateLog | Reconstruction | None = None, *, recovery: Recovery | None = None,
                 options: ExecutorOptions | None = None, **overrides: Unpack[ExecutorOverrides]) -> None:
        given: dict[str, Any] = dict(overrides)
        settings = {k: given.pop(k) for k in SETTING_NAMES if k in given}
        unknown = set(given) - set(OPTION_NAMES)
        if unknown:
            raise TypeError(f"ReplayExecutor got unknown {count_words(len(unknown), 'option')} "
                            f"{', '.join(sorted(unknown))}; the recovery "
                            f"settings are {', '.join(SETTING_NAMES)}, the executor's {', '.join(OPTION_NAMES)}")
        opts = (options or ExecutorOptions()).updated(**given)
        self.options = opts
        base = _as_log(subject)
        if recovery is None and subject is not None and subject is not base:
            recovery = getattr(subject, "recovery", None)    # a reconstruction: its settings by default
        restore = opts.restore
        if restore is not None and settings.get("markers") is None and (recovery is None
                                                                      or "markers" not in recovery.given):
            settings["markers"] = restore     # a plan source: the recovery restores its plan, as predict's would
        #: the resolved recovery settings (rule, markers, runtime, plan, agent, restore checks) this replay runs
        self.recovery = Recovery.resolve(base, recovery, **settings)
        agent = self.recovery.agent
        if agent is None:
            if base is None:
                raise ReplayError("no agent and no log: pass agent=... (e.g. a PythonAgent) to run a fresh job")
            agent = AsRecordedAgent(base)       # deterministic reruns as the log shows them (§15.6)
        view = as_agent(agent)
        policies = as_policies(opts.policies)
        self._actions = declared = sorted({d.name for d in view.actions})   # what policies and breakpoints may name
        undeclared = sorted(set(map(str, policies.actions)) - set(declared))
        if undeclared:   # a policy for no action would silently change nothing
            raise ReplayError(f"policies name {count_words(len(undeclared), 'action')} the agent does not declare: "
                              f"{', '.join(map(repr, undeclared))}{did_you_mean(undeclared, declared)} "
                              f"(its actions: {', '.join(declared)})")
        #: the upstream runtime the log is read as, and why (``recovery.runtime``)
        self.runtime = self.recovery.runtime
        memory, sensory, given_plan = opts.memory, opts.sensory, self.recovery.plan   # a ReplayPlan once resolved
        if restore is None:
            replay_plan = self.recovery.replay_plan(base)
        else:
            memory = restore.short_term if memory is None else memory
            sensory = restore.sensory if sensory is None else sensory
            # no plan given: the log's own (its window's inputs), the checkpoint's seqNums and tasks over it
            replay_plan = _restore_plan(given_plan, restore) if given_plan is not None or base is None else \
                self.recovery.replay_plan(base) if self.recovery.plan_source is restore else \
                restore.restored_over(self.recovery.replay_plan(base))     # markers given: their window's inputs
        max_parallelism = self.recovery.max_parallelism
        keys = KeyMaker(base, key_format=opts.key_format, max_parallelism=128 if max_parallelism is None else max_parallelism)
        keys.register(replay_plan.keys)
        # the store this replay writes to, once: its rebuild, journal and refresh rows all follow it
        source_kind = opts.source_kind or source_kind_of(base) or "kafka"
        if opts.prune_tombstones and source_kind != "kafka":
            raise ReplayError("prune_tombstones is a Kafka store setting (#885); a Fluss log table gets none")
        self._engine = engine = Engine(
            log=base, agent=view, recovery=self.recovery, plan=replay_plan, keys=keys,
            calls=CallServer(policies),
            attempt=int(replay_plan.attempt if opts.attempt is None else opts.attempt),
            # ids must never repeat across attempts (evidence compares ids), but must repeat on back()
            seed=random.SystemRandom().getrandbits(64) if opts.seed is None else opts.seed,
            memory_decoder=opts.memory_decoder, memory=memory or {}, sensory=sensory or {},
            source_kind=source_kind)
        self._breakpoints: list[Breakpoint] = list(opts.breakpoints)
        self._driver: list[DriverAction] = []   # what the driver did between steps, redone by back()
        self.fail_after(opts.fail_after)
        for bp in self._breakpoints:
            self._keyed(bp)                 # a key no step can carry fails here, not silently never stops
        last_completed = restore.last_completed if restore is not None else {}
        # main writes V4 (subagentResultEvents in every record): the default V3 becomes V4 there
        value_format = "V4" if self.recovery.model.subagent_results and opts.value_format == "V3" else opts.value_format
        self._production = Production(
            engine, value_format=value_format, num_partitions=opts.num_partitions,
            clock=opts.clock, prune_tombstones=opts.prune_tombstones,
            restored_last_completed={engine.keys.business_key(k): int(v) for k, v in last_completed.items()})

    # ------------------------------------------------------------------------------ control

    @property
    def breakpoints(self) -> list[Breakpoint]:
        """The breakpoints ``run()`` stops at (a list you may change)."""
        return self._breakpoints

    def reset(self) -> None:
        """Back to before the first step (the rebuild). Durable calls already run stay memoised."""
        self._driver = []
        self._engine.restart()

    def step(self) -> Step | None:
        """Run one step and return it; None when the replay has ended (or the job failed)."""
        if self.done:
            return None
        run = self._engine.run
        if self._engine.thread != threading.get_ident():
            # a greenlet only runs on the thread that made it: rebuild this state here (deterministic)
            self._replay_to(len(run.steps))
            run = self._engine.run
        if self._fail_after is not None and len(run.steps) >= self._fail_after:
            run.failure = run.failure or JobFailed(f"simulated failure after step {self._fail_after}")
            return None
        return self._engine.advance()

    def run(self, until: Until = None, *, max_steps: int | None = None) -> Step | None:
        """Step until ``until`` (a predicate, step kind or :class:`Breakpoint`) or a breakpoint matches, or the end,
        or ``max_steps`` steps (0 runs none); the step it stopped at, or None when the replay ended first."""
        step_count(max_steps, "run(max_steps=...)", "0 runs none", "no limit")
        stop = _predicate(self._keyed(until) if isinstance(until, Breakpoint) else until)
        breakpoints = [self._keyed(b) for b in self._breakpoints]
        if max_steps == 0:
            return self.current
        n = 0
        while True:
            s = self.step()
            if s is None:
                return None
            n += 1
            if ((stop is not None and stop(s)) or any(b.matches(s) for b in breakpoints)
                    or (max_steps is not None and n >= max_steps)):
                return s

    def back(self) -> Step | None:
        """Return exactly to the state after the previous step (deterministic re-execution)."""
        steps = self._engine.run.steps
        if not steps:
            return None
        target = len(steps) - 1
        for a in self._driver:
            if a.at < target < a.at + a.added:
                target = a.at
        self._replay_to(target)
        return self.current

    def fail_after(self, step: int | None) -> None:
        """Make the simulated job die once ``step`` steps have run (None: never; anything but a count >= 0 or None
        is a ReplayError). See :meth:`checkpoint`."""
        self._fail_after = step_count(step, "fail_after", "0 fails the job before its first step", "never fails")

    def add_breakpoint(self, *, key: str | None = None, seq: int | None = None, action: str | None = None,
                       kind: StepKind | str | None = None, outcome: str | None = None,
                       when: Callable[[Step], bool] | None = None) -> Breakpoint:
        """Add a :class:`Breakpoint` (every given field must match; None = any); ``key`` may be a Flink key text. A
        key or action the replay cannot meet raises ``ReplayError`` naming the closest ones."""
        bp = Breakpoint(key=key, seq=seq, action=action, kind=kind, outcome=outcome, when=when)
        self._keyed(bp)
        self._breakpoints.append(bp)
        return bp

    # ------------------------------------------------------------------------------ inspection

    @property
    def done(self) -> bool:
        """True when the replay ended or the (simulated) job failed."""
        run = self._engine.run
        return run.finished or run.failure is not None

    @property
    def failure(self) -> str | None:
        """Why the simulated job stopped (a throwing lookup, a failing body, a denied call), else None."""
        failure = self._engine.run.failure
        return None if failure is None else failure.reason

    @property
    def current(self) -> Step | None:
        """The last step run."""
        steps = self._engine.run.steps
        return steps[-1] if steps else None

    @property
    def step_list(self) -> tuple[Step, ...]:
        return tuple(self._engine.run.steps)

    @property
    def steps(self) -> pd.DataFrame:
        """The steps so far as a DataFrame (one row per step)."""
        return steps_frame(self._engine.run.steps)

    @property
    def session(self) -> RecoverySession | None:
        """The recovery session (store + rule state) as of the current step. Do not modify it."""
        self._ensure_started()
        return self._engine.run.session

    @property
    def store(self) -> Store:
        """The simulated store (``agent_inspect.store.Store``) as of the current step."""
        self._ensure_started()
        return self._engine.session.store

    @property
    def cache(self) -> pd.DataFrame:
        """The simulated cache as a DataFrame: one row per cached state key, ``written`` by the replay."""
        return cache_frame(self.store)

    @property
    def memory(self) -> Mapping[str, MemoryState]:
        """Per business key: short-term and sensory memory as of the current step. A Flink key text finds its
        business key's (the digest under K1.6/K2), as breakpoints and :meth:`counters_for` read it."""
        return MemoryByKey(self._engine.memory_states(), self._engine.keys.business_key)

    @property
    def outputs(self) -> pd.DataFrame:
        """Events sent downstream so far (reused actions send theirs again, §9.3 step 4)."""
        return outputs_frame(self._engine)

    @property
    def counters(self) -> Counters:
        """Counts of what ran, derived from the steps."""
        return counters_of(self._engine.run.steps)

    def counters_for(self, key: str | None) -> Counters:
        """:attr:`counters` of the steps at ``key`` only (None: every step; a key as breakpoints take it). An
        eviction counts at the key whose lookup made it, even when it removed other keys' records."""
        steps = self._engine.run.steps
        key = None if key is None else self._known_key(key, "counters_for", "it has no step to count")
        return counters_of(steps if key is None else [s for s in steps if s.key == key])

    def report(self) -> ReplaySafetyReport:
        """The replay-safety report (DataFrame ``.frame`` plus an escaped ``_repr_html_``)."""
        paused_after = None if self.done else len(self._engine.run.steps)
        return ReplaySafetyReport.from_steps(self._engine.run.steps, counters=self.counters, failure=self.failure,
                                             stale_records=self.stale_records(), rule_label=self.recovery.rule_label,
                                             paused_after=paused_after)

    def stale_records(self) -> pd.DataFrame:
        """Rebuilt production records whose action identity is in no action of the candidate agent: never looked
        up, their work re-runs (under K1/K1.5 a changed module, qualname or trigger list; under K2 a rename, §4.4).
        Read from the rebuild, so asking before the first step takes none."""
        return stale_records_frame(self._engine)

    # ------------------------------------------------------------------------------ production mode

    @property
    def journal(self) -> RawBatch:
        """The overlay's writes in order as a :class:`~agent_inspect.raw.RawBatch` journal (upstream partitioner,
        offsets after the base log's end)."""
        return self._production.journal()

    def checkpoint(self, *, complete: bool = True) -> dict[int, int]:
        """Take a checkpoint now and return its marker (end offsets of base log + journal, §6.4).

        ``complete=True`` also prunes every key's finished rounds (§8.4, a PRUNE step each; a prune that throws
        upstream fails the job). The full state is kept in :attr:`checkpoints`; take it at task boundaries (a
        LOOKUP or ROUND_COMPLETE step), as upstream checkpoints fall between mailbox actions. Under 0.4+ every
        retained state is kept: a refresh row each, or (Kafka, ``kafka_pending="marker"``) the marker moved back.
        """
        self._ensure_started()
        start = len(self._engine.run.steps)
        marker = self._production.checkpoint(complete=complete)
        self._driver.append(DriverAction(at=start, added=len(self._engine.run.steps) - start,
                                         redo=lambda: self.checkpoint(complete=complete)))
        return marker

    @property
    def checkpoints(self) -> list[Checkpoint]:
        """Checkpoints taken so far (see :class:`Checkpoint`)."""
        return list(self._engine.run.checkpoints)

    def to_log(self) -> ActionStateLog:
        """The base records plus this executor's journal as a new ``ActionStateLog`` (the topic now)."""
        return self._production.to_log()

    def _ensure_started(self) -> None:
        if self._engine.run.session is None and not self._engine.run.steps:
            self.step()

    def _keyed(self, bp: Breakpoint) -> Breakpoint:
        """``bp`` with its key as steps name it (:meth:`_known_key`); an action the agent does not declare raises
        ``ReplayError``: it would never stop."""
        if bp.action is not None and bp.action not in self._actions:
            raise ReplayError(f"breakpoint action {bp.action!r} is not an action of the agent, so it would never "
                              f"stop a run{did_you_mean([bp.action], self._actions)} "
                              f"(its actions: {', '.join(self._actions)})")
        if bp.key is None:
            return bp
        key = self._known_key(bp.key, "breakpoint", "it would never stop a run")
        return bp if key == bp.key else replace(bp, key=key)

    def _known_key(self, key: str, use: str, because: str) -> str:
        """``key`` as steps name it (a Flink key text becomes the log's business key); a key that is neither the
        log's nor the plan's raises ``ReplayError`` naming ``use`` and the closest keys: ``because`` says why."""
        business = self._engine.keys.business_key(key)
        known, names = self._engine.known_keys
        if business not in known:
            where, listed = ("the log or the plan", " (log.keys() lists the log's)") if self._engine.log is not None \
                else ("the plan", "")
            raise ReplayError(f"{use} key {key!r} is not a key of {where}, so {because}"
                              f"{did_you_mean([key], names)}{listed}")
        return business

    def _replay_to(self, target: int) -> None:
        """Re-run from the start to ``target`` steps, redoing the driver's actions where they happened."""
        keep = [a for a in self._driver if a.at + a.added <= target]
        self.reset()
        while True:
            if keep and keep[0].at == len(self._engine.run.steps):
                keep.pop(0).redo()
                continue
            if len(self._engine.run.steps) >= target or self.step() is None:
                break

    def __repr__(self) -> str:
        state = "failed" if self.failure else "done" if self.done else "paused"
        return f"ReplayExecutor({plural(len(self._engine.run.steps), 'step')}, {state}, rule={self.recovery.rule_label!r})"

    def _html_parts(self) -> Iterable[HtmlPart]:
        yield Text(Strong("ReplayExecutor"), " under rule ", Code(self.recovery.rule_label),
                   f" — {plural(len(self._engine.run.steps), 'step')}, {'done' if self.done else 'paused'}",
                   *((", failed: ", self.failure) if self.failure else ()))
        cur = self.current
        if cur is None:
            yield Text("no step yet: step() runs the rebuild first, run() runs to the next breakpoint or the end")
            return
        yield Text("current: ", _step_words(cur))
        yield Table(self.steps.tail(20), caption="last steps")


def _step_words(step: Step) -> str:
    """A step in a few words, naming only what it has (a rebuild has no key, round or action)."""
    words = [f"step {step.index}", step.kind.value, *([str(step.key)] if step.key is not None else []),
             *([f"seq {step.seq}"] if step.seq is not None else []), *([step.action] if step.action else []),
             *([f"→ {step.outcome}"] if step.outcome is not None else [])]   # a StepOutcome formats as its text
    return " ".join(words) + (f" ({step.change})" if step.kind is StepKind.REBUILD and step.change else "")


def as_agent(agent: Any) -> Agent:
    """``agent`` when it has the :class:`agent_inspect.agents.Agent` protocol, else a ``flink_agents`` agent
    adapted (lazily; the package is never required)."""
    if all(hasattr(agent, n) for n in ("actions", "listeners", "action_uuid", "run_action")):
        return cast("Agent", agent)
    if is_flink_agent(agent):
        return cast("Agent", FlinkAgentAdapter(agent))
    raise ReplayError(f"cannot replay with {type(agent).__name__}: pass an agent with actions/listeners/"
                      "action_uuid/run_action (e.g. agent_inspect.agents.PythonAgent)")


def _restore_plan(plan: ReplayPlan | None, cp: Checkpoint) -> ReplayPlan:
    """``plan`` (None: no input, attempt 1) with the checkpoint's seqNums and pending tasks added (the plan's own
    win); the rest, notes included, kept as they are."""
    base = plan if plan is not None else ReplayPlan(attempt=1)
    restored = {**dict(cp.restored_seq), **dict(base.restored_seq)}
    pending = tuple(PendingTask(k, s, a, e) for k, s, a, e in cp.pending) + tuple(base.pending)
    return replace(base, restored_seq=restored, pending=pending)


def _as_log(log: object) -> ActionStateLog | None:
    if log is None:
        return None
    inner = getattr(log, "log", None)           # a Reconstruction carries the log it was built from
    if inner is not None and hasattr(inner, "value") and hasattr(log, "rule"):
        return cast("ActionStateLog", inner)
    if hasattr(log, "records") and hasattr(log, "value"):     # anything shaped like a log will do
        return cast("ActionStateLog", log)
    raise ReplayError(f"cannot replay from {type(log).__name__}; pass an ActionStateLog or a reconstruction")


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
