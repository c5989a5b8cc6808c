"""``predict``: the static path (spec §15.6): the engine runs the plan to its end (or to a failure that crashes the
job) with the symbolic call journal (calls matched, made only where the agent declares them) and an observer turns
what it saw into task rows and the re-execution ledger.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Unpack, cast

import pandas as pd

from agent_inspect._errors import InspectError, RecoveryError
from agent_inspect._glossary import plural
from agent_inspect._types import RecoveryOverrides
from agent_inspect.agents import SUBAGENT_EVENT, Agent, AsRecordedAgent, DeclaredCalls
from agent_inspect.codec import call_matcher, call_router
from agent_inspect.recovery._calls import CallDecision, CallEvent, CallSlot, Executor, RecordedCallError
from agent_inspect.recovery._core import TaskFailed
from agent_inspect.recovery._engine import DirectCalls, Engine, Observer, TaskRun
from agent_inspect.recovery._plan import ReplayPlan
from agent_inspect.recovery._planview import PlanView
from agent_inspect.recovery._rebuild import marker_warnings
from agent_inspect.recovery._settings import Recovery
from agent_inspect.recovery._statekeys import KeyMaker
from agent_inspect.store import Entry, LookupDecision, Outcome, RecoverySession, runtime_model

if TYPE_CHECKING:
    from agent_inspect._types import RuntimeLike
    from agent_inspect.log import ActionStateLog
    from agent_inspect.recovery._reconstruct import Reconstruction

from agent_inspect.recovery._prediction import Prediction, RemovalCauses, removed_by

__all__ = ["predict", "Prediction", "simulate", "Simulation", "NOT_DISPATCHED"]

#: the members as module constants: reading one off the enum class costs about 60 ns (a lookup or two per get)
_FAIL = Outcome.FAIL

NOT_DISPATCHED = "NOT-DISPATCHED"
"""The outcome of a cached record of a replayed round that no task looked up."""
_NOT_LOOKED_UP = "cached record of a replayed round that no task looked up"
_NOT_LOOKED_UP_CALL = ("cached sub-agent call that nothing sends again under this runtime: its caller was reused (a "
                       "reused root caller re-sends no bootstrap on main) or replays the call's recorded result "
                       "(addendum §1.1)")
_TASK_COLUMNS = ["key", "business_key", "seq", "input", "action", "event_id", "event_type", "fingerprint",
                 "outcome", "reason", "state_key", "entry_pos", "parent", "scope", "body_ran", "calls_executed",
                 "calls_subagent", "calls_replayed", "calls_resubmitted", "cache_ops", "removed", "rule_note"]
#: the ledger's kind of each call decision that completed a call (pending slots, cuts and denials are none)
_LEDGER_KIND: dict[str, str] = {CallDecision.EXECUTE: "call", CallDecision.STUB: "call", CallDecision.SERVED_RECORDED: "call",
                CallDecision.RECONCILE: "reconciler", CallDecision.RESUBMIT: "resubmit",
                CallDecision.HIT: "replayed", CallDecision.HIT_FAILED: "replayed", CallDecision.PENDING_HIT: "replayed"}
#: the task row's count of each ledger kind of call: a re-submission is no executed call (addendum §1.1, case S09),
#: a sub-agent call that runs no call that leaves the job (the child's row counts those, as the executor does)
_ROW_COUNT = {"replayed": "calls_replayed", "resubmit": "calls_resubmitted", "subagent": "calls_subagent"}


@dataclass
class Simulation:
    """What one engine run of a plan gave ``predict``: ``rows`` (the columns of ``Prediction.tasks``), ``ledger``
    (re-executed bodies and calls), ``crashed`` (a restart loop), ``warnings`` and ``subagent_results``.

    For example::

        r = ai.Recovery.for_log(log, markers=markers)      # predict is simulate plus the rebuild and frames
        sim = ai.recovery.simulate(r.replay_plan(log), ai.agents.AsRecordedAgent.of(log), r.rebuild(log), log=log)
        len(sim.rows), sim.crashed, sim.ledger.most_common(3)
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    ledger: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    crashed: bool = False
    warnings: list[str] = field(default_factory=list)
    subagent_results: dict[str, tuple[str, ...] | str] = field(default_factory=dict)
    #: per sub-agent call's function id (``<sessionId>#<callId>``, two UUIDs that differ per key and round): its name
    #: for readers, "<sub-agent> (sub-agent call from <caller>)"
    call_names: dict[str, str] = field(default_factory=dict)
    #: run with ``rows=False``: per task ``[key, outcome, seq, position of the record found]`` instead of ``rows``
    #: (what a fleet scan counts): the dispatched tasks in dispatch order, then the NOT-DISPATCHED ones
    outcomes: list[list[Any]] = field(default_factory=list)
    #: the key (as the plan names it) whose task's body failed and so crashed the job; a FAIL lookup names its own
    crashed_key: str | None = None

    def __repr__(self) -> str:
        # one line: the rows of a production log run to hundreds of kB; they stay attributes
        done = plural(len(self.rows), "task row") if self.rows or not self.outcomes else \
            plural(len(self.outcomes), "task outcome")
        ran = Counter[str]()
        for (_key, kind, _name), n in self.ledger.items():
            ran[kind] += n
        warned = f", {plural(len(self.warnings), 'warning')}" if self.warnings else ""
        return (f"Simulation({done}, {plural(ran['body'], 'body', 'bodies')} run again, "
                f"{plural(ran['call'], 'durable call')} executed" + (", crashed" if self.crashed else "") + warned + ")")


class _Ledger(Observer):
    """The engine's run as the re-execution ledger and the sub-agent calls' names (``plan_key``: per business key,
    the key as the plan names it)."""

    def __init__(self, sim: Simulation, plan_key: dict[str, str]) -> None:
        self.sim, self.plan_key = sim, plan_key
        self.engine: Engine | None = None

    def executing(self, run: TaskRun, *, resume: bool, recorded: int) -> None:
        self.sim.ledger[(run.plan_key, "body", run.action)] += 1

    def called(self, run: TaskRun, event: CallEvent) -> None:
        kind = _LEDGER_KIND.get(event.outcome)   # str-valued keys: the outcome's text finds its decision
        if kind is not None:
            scope = self.engine.state.subagent_scopes.get(event.function_id) if self.engine is not None else None
            if scope is not None:
                self.sim.call_names[event.function_id] = f"{scope} (sub-agent call from {run.action})"
                if kind == "call":   # no call that leaves the job: the executor's calls_subagent
                    kind = "subagent"
            self.sim.ledger[(run.plan_key, kind, event.function_id)] += 1
            self.counted(run, kind)

    def counted(self, run: TaskRun, kind: str) -> None:
        """A call of ``kind`` was added to the ledger for ``run``."""

    def body_failed(self, run: TaskRun, error: BaseException) -> None:
        self.sim.crashed_key = run.plan_key


class _Outcomes(_Ledger):
    """The engine's run as each task's outcome and the ledger: what a fleet scan counts (no rows)."""

    def __init__(self, sim: Simulation, plan_key: dict[str, str]) -> None:
        super().__init__(sim, plan_key)
        self.of: dict[int, list[Any]] = {}

    def looked_up(self, run: TaskRun, decision: LookupDecision, stage: str) -> None:
        seen = self.of.get(run.index)
        if seen is None:
            entry = decision.entry
            seen = self.of[run.index] = [run.plan_key, decision.outcome, run.seq,
                                         entry.pos if entry is not None else None]
            self.sim.outcomes.append(seen)
        if decision.outcome is _FAIL:
            seen[1], seen[3] = _FAIL, None

    def not_dispatched(self, key: str, seq: int, label: str, entry: Entry) -> None:
        self.sim.outcomes.append([self.plan_key.get(key, key), Outcome.NOT_DISPATCHED, seq, entry.pos])


class _Rows(_Ledger):
    """The engine's run as ``predict``'s rows and ledger."""

    def __init__(self, sim: Simulation, plan_key: dict[str, str]) -> None:
        super().__init__(sim, plan_key)
        self.row_of: dict[int, dict[str, Any]] = {}
        self.index_of: dict[int, int] = {}

    def dropped(self, run: TaskRun, reason: str, *, stale: bool) -> None:
        what = ("its action is not in the agent (stale logic), so it is not dispatched" if stale else
                "sub-agent child tasks are dropped on resume, spec §11.4")
        self.sim.warnings.append(f"dropped the restored {'task' if stale else 'child task'} {run.action} at "
                                 f"({run.plan_key}, {run.seq}) ({what})")

    def looked_up(self, run: TaskRun, decision: LookupDecision, stage: str) -> None:
        row = self.row_of.get(run.index)
        if row is None:
            t = run.task
            assert t is not None
            self.index_of[run.index] = len(self.sim.rows)
            row = self.row_of[run.index] = _row(
                run.plan_key, run.key, run.seq, run.input, run.action, run.event.id, run.event.routing_type,
                t.event_uuid, str(decision.outcome), decision.reason, t.state_key,
                decision.entry.pos if decision.entry is not None else None,
                parent=self.index_of.get(run.parent) if run.parent is not None else None, scope=run.scope)
            self.sim.rows.append(row)
        if decision.events:
            row["cache_ops"].extend(decision.events)
        if decision.outcome is _FAIL:
            row.update(outcome=str(_FAIL), reason=decision.reason, entry_pos=None)

    def executing(self, run: TaskRun, *, resume: bool, recorded: int) -> None:
        self.row_of[run.index]["body_ran"] = True
        super().executing(run, resume=resume, recorded=recorded)

    def counted(self, run: TaskRun, kind: str) -> None:
        self.row_of[run.index][_ROW_COUNT.get(kind, "calls_executed")] += 1

    def not_dispatched(self, key: str, seq: int, label: str, entry: Entry) -> None:
        names = self.engine.action_names() if self.engine is not None else {}
        self.sim.rows.append(_row(
            self.plan_key.get(key, key), key, seq, label, names.get(entry.action_uuid, entry.action_uuid[:8]),
            entry.task_event_id, entry.task_event_type, entry.event_uuid, NOT_DISPATCHED,
            _NOT_LOOKED_UP_CALL if entry.task_event_type == SUBAGENT_EVENT else _NOT_LOOKED_UP, entry.state_key,
            entry.pos))


def _row(key: str, business_key: str, seq: int, label: str, action: str, event_id: str | None,
         event_type: str | None, fingerprint: str, outcome: str, reason: str | None, state_key: str,
         entry_pos: int | None, *, parent: int | None = None, scope: str | None = None) -> dict[str, Any]:
    """One row of ``Prediction.tasks`` as the engine saw it (the reader's columns are added by ``predict``)."""
    return {"key": key, "business_key": business_key, "seq": seq, "input": label, "action": action,
            "event_id": event_id, "event_type": event_type, "fingerprint": fingerprint, "outcome": outcome,
            "reason": reason, "state_key": state_key, "entry_pos": entry_pos, "parent": parent, "scope": scope,
            "body_ran": False, "calls_executed": 0, "calls_subagent": 0, "calls_replayed": 0, "calls_resubmitted": 0,
            "cache_ops": []}


class _UnmadeCalls(DirectCalls):
    """``predict``'s calls of an agent whose calls are not declarations (:class:`~agent_inspect.agents.DeclaredCalls`):
    one that must run is decided to run (and succeed), never made. A user's agent would otherwise call its model or
    tools for every rerun it predicts."""

    def runner(self, production_calls: Sequence[CallSlot]) -> Executor:
        return _decided


def _decided(function_id: str, args_digest: str, call: Callable[[], Any], index: int) -> tuple[str, Any]:
    return CallDecision.EXECUTE, None


_UNMADE = _UnmadeCalls()
_DECLARED = DirectCalls()   # an agent's declared calls (DeclaredCalls): made, as the executor makes them


def simulate(plan: ReplayPlan, agent: Agent, session: RecoverySession, *, log: ActionStateLog | None = None,
             new_id: Callable[[], str] | None = None, call_matching: str = "position",
             runtime: str | RuntimeLike = "0.3", key_format: str | None = None, rows: bool = True) -> Simulation:
    """Run ``plan`` with ``agent`` through an already rebuilt ``session`` (which it changes) on the engine, with
    symbolic calls: ``predict`` without the rebuild and frames. ``rows=False`` keeps each task's outcome
    (:attr:`Simulation.outcomes`) instead of its row: what a count needs.

    For example::

        r = ai.Recovery.for_log(log, markers=markers)
        agent = ai.agents.AsRecordedAgent(log)             # what predict uses when no agent is given
        sim = ai.recovery.simulate(r.replay_plan(log), agent, r.rebuild(log), log=log, runtime=r.model)
        sim.rows[:3], sim.crashed, sim.ledger.most_common(3)
    """
    call_matcher(call_matching)  # an unknown mode fails before anything runs
    keys = KeyMaker(log, key_format=key_format)
    keys.register(plan.keys)
    view = PlanView(plan, business_key=keys.business_key)
    plan_key: dict[str, str] = {}
    for k in [*(p.key for p in plan.pending), *(i.key for i in plan.inputs), *plan.keys]:
        plan_key.setdefault(keys.business_key(k), k)
    sim = Simulation()
    observer = _Rows(sim, plan_key) if rows else _Outcomes(sim, plan_key)
    declared = isinstance(agent, DeclaredCalls) and agent.calls_declared
    engine = Engine(log=log, agent=agent, session=session, plan=view, keys=keys, model=runtime_model(runtime),
                    attempt=plan.attempt, new_id=new_id or _fresh_ids(), observer=observer,
                    calls=_DECLARED if declared else _UNMADE, deliver=False, call_matching=call_matching)
    observer.engine = engine
    try:
        failure = engine.run()
    finally:
        # the observer and the engine refer to each other, and the engine to the log: left so, the log would wait
        # for the cyclic GC, which objects made under gc_paused rarely wake (a scan's worker piles up its windows)
        observer.engine = None
    sim.crashed = failure is not None
    if failure is not None and not isinstance(failure.error, TaskFailed):
        # a body of the agent's own code got no call results (None): its failure may be predict's, not the job's
        own = not declared and failure.error is not None \
            and not isinstance(failure.error, (RecordedCallError, InspectError))
        sim.warnings.append(f"the replayed job fails: {failure.reason}" + (
            " (predict gives a body no call results, so this may be predict's failure, not the job's: "
            "ai.ReplayExecutor runs the body with them)" if own else ""))
    sim.warnings.extend(engine.state.warnings)
    sim.subagent_results = dict(engine.state.subagent_results)
    return sim


def predict(subject: ActionStateLog | Reconstruction | None, *, recovery: Recovery | None = None,
            session: RecoverySession | None = None, new_id: Callable[[], str] | None = None,
            **overrides: Unpack[RecoveryOverrides]) -> Prediction:
    """Predict what a recovery does with ``subject`` (the static path, spec §15.6).

    ``subject`` is an ``ActionStateLog`` or a :class:`~agent_inspect.recovery.Reconstruction` (whose log and
    settings are then used). The settings are ``recovery`` or its overrides by name (see :class:`Recovery` for
    each and its default). A failed K2 restore check (spec §6.5) makes every task FAIL; the runtime selects its
    recovery behaviours (:func:`agent_inspect.store.runtime_model`). Pass ``session`` to continue from an already
    rebuilt store, ``new_id`` to make fresh event ids reproducible.

    For example::

        p = ai.predict(log, markers=ai.samples.markers("production"))
        p.tasks["outcome"].value_counts(), p.ledger_totals()
    """
    log: Any = subject
    if all(hasattr(subject, a) for a in ("log", "recovery", "session", "divergences")):   # a Reconstruction
        recon = cast("Reconstruction", subject)
        log = recon.log
        recovery = recon.recovery if recovery is None else recovery
    settings = Recovery.resolve(log, recovery, **overrides)
    info, model = settings.runtime, settings.model
    plan, agent = settings.plan, settings.agent
    if plan is None or agent is None or session is None:
        if log is None:
            raise RecoveryError("predict without a log needs plan, agent and a rebuilt session")
        source = cast("ActionStateLog", log)
        plan = settings.replay_plan(source)
        if agent is None:
            agent = AsRecordedAgent.of(source)
        if session is None:
            session = settings.rebuild(source)
    sim = simulate(plan, cast("Agent", agent), session, log=log, new_id=new_id,
                   call_matching=settings.call_matching, runtime=model)
    rows = sim.rows
    tasks = pd.DataFrame(rows, columns=_TASK_COLUMNS)
    for col in ("seq", "entry_pos", "parent", "calls_executed", "calls_subagent", "calls_replayed",
                "calls_resubmitted"):
        tasks[col] = tasks[col].astype("Int64")
    tasks["body_ran"] = tasks["body_ran"].astype(bool)
    tasks["cache_ops"] = [tuple(ops) for ops in tasks["cache_ops"]]
    tasks["removed"] = [removed_by(ops) for ops in tasks["cache_ops"]]
    tasks["rule_note"] = tasks["reason"]   # the rule's own words, kept for tools and tests
    tasks["reason"] = RemovalCauses(session.events).task_reasons(rows)
    ledger = pd.DataFrame([{"key": k, "kind": kind, "name": name, "label": sim.call_names.get(name, name),
                            "router": None if kind == "body" else call_router(name), "count": n}
                           for (k, kind, name), n in sim.ledger.items()],
                          columns=["key", "kind", "name", "label", "router", "count"])
    ledger["count"] = ledger["count"].astype("int64")
    warnings = sim.warnings
    if log is not None and settings.markers:
        warnings = marker_warnings(settings.markers, log) + warnings
    return Prediction(rule=getattr(session.rule, "name", settings.rule.name), tasks=tasks, events=tuple(session.events),
                      divergences=tuple(session.divergences), ledger=ledger, crashed=sim.crashed,
                      warnings=tuple(warnings), notes=plan.notes, session=session, runtime=info,
                      subagent_results=dict(sim.subagent_results), recovery=settings)


_IDS = random.Random()


def _fresh_ids() -> Callable[[], str]:
    """Fresh version-4 UUID texts for one run: a random prefix per run and a counter in the last 48 bits (unique but
    for a 2^-74 chance across runs) at a fraction of ``uuid4``'s cost (a fleet makes one per rerun output)."""
    h = f"{_IDS.getrandbits(128) & _V4_CLEAR | _V4_SET:032x}"
    prefix = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-"
    counter = itertools.count(int(h[20:], 16))
    return lambda: f"{prefix}{next(counter) & _LOW48:012x}"


_V4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)
_V4_SET = (0x4000 << 64) | (0x8000 << 48)
_LOW48 = (1 << 48) - 1
