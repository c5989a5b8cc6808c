"""Static recovery prediction: rebuild under a rule, then run spec §9.3 symbolically per key.

The loop is deliberately plain so it can be checked line by line against the spec: for every
replayed input a round with a FIFO task queue; for every task the operator's ``get`` calls, then
reuse (stored outputs re-emitted with their ids, memory updates applied, nothing written) or the
body (initial write, durable calls matched by position §9.4, completed write); outputs routed to
the actions listening to them. Sub-agent calls (§11.3–§11.4) run the child round inline at the
caller's key and seq, and record the call result on the caller. Durable calls return None to the
body: payloads are never unpickled, and declarative bodies do not depend on call results.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from agent_inspect._errors import RecoveryError
from agent_inspect.agents import (
    OUTPUT_EVENT,
    SUBAGENT_EVENT,
    ActionDecl,
    Agent,
    AgentEvent,
)
from agent_inspect.codec import call_matcher, call_router
from agent_inspect.recovery._plan import KeyIdentity, ReplayPlan, agent_event, identity_from_log
from agent_inspect.recovery._rebuild import rebuild
from agent_inspect.recovery._settings import Recovery
from agent_inspect.store import (
    Entry,
    LookupDecision,
    Outcome,
    RecoverySession,
    RuntimeModel,
    Task,
    runtime_model,
)

if TYPE_CHECKING:
    from agent_inspect._types import RuntimeLike
    from agent_inspect.log import ActionStateLog
    from agent_inspect.recovery._reconstruct import Reconstruction

from agent_inspect.recovery._body import _Call, _Context, _Round
from agent_inspect.recovery._core import TaskFailed, TaskLookups
from agent_inspect.recovery._journal import CallOutcome, SymbolicCallJournal, _Crash
from agent_inspect.recovery._prediction import Prediction, reader_reasons, removed_by

__all__ = ["predict", "Prediction", "simulate", "Simulation", "SymbolicCallJournal", "CallOutcome", "NOT_DISPATCHED",
           "reused_events"]

NOT_DISPATCHED = "NOT-DISPATCHED"
_OUTPUT_CLASS = "org.apache.flink.agents.api.OutputEvent"
_TASK_COLUMNS = ["key", "business_key", "seq", "input", "action", "event_id", "event_type", "fingerprint",
                 "outcome", "reason", "state_key", "entry_pos", "parent", "scope", "body_ran", "calls_executed",
                 "calls_replayed", "cache_ops", "removed", "rule_note"]


# -- the simulation -------------------------------------------------------------------------------------


class Simulation:
    """A replay plan driven through a rebuilt session, task by task (spec §9.3); see :func:`simulate`.

    ``rows`` holds one dict per dispatched task (the columns of ``Prediction.tasks``), ``ledger`` the
    re-executed bodies and calls, ``crashed`` whether the job would crash (restart loop).
    """

    def __init__(self, log: Any, plan: ReplayPlan, agent: Agent, session: RecoverySession,
                 new_id: Callable[[], str], *, call_matching: str = "position", runtime: Any = "0.3") -> None:
        self.log, self.plan, self.agent, self.session, self.new_id = log, plan, agent, session, new_id
        self.call_matching = call_matching
        call_matcher(call_matching)  # an unknown mode fails before anything runs
        #: the upstream runtime's recovery behaviours (:func:`agent_inspect.store.runtime_model`)
        self.model = runtime_model(runtime)
        #: NOT-DISPATCHED rows, decided per round when the round ends (§11.4.5)
        self.nd_rows: list[dict[str, Any]] = []
        #: per sub-agent call (``<sessionId>#<callId>``): the result event ids the caller got, or "journal"
        self.subagent_results: dict[str, tuple[str, ...] | str] = {}
        self.rows: list[dict[str, Any]] = []
        self.ledger: Counter[tuple[str, str, str]] = Counter()
        self.short_term: dict[str, dict[str, Any]] = {}
        self.sensory: dict[str, dict[str, Any]] = {}
        self.looked_up: set[str] = set()
        self.rounds: dict[tuple[str, int], str] = {}
        self.warnings: list[str] = []
        self._idents: dict[str, KeyIdentity] = dict(plan.keys)
        self._named_for = -1
        self._named: tuple[dict[str, str], dict[str, str]] = ({}, {})
        self.crashed = False

    # identity -----------------------------------------------------------------------------------
    def ident(self, key: str) -> KeyIdentity:
        if key not in self._idents:
            if self.log is None:
                raise RecoveryError(f"plan key {key!r} has no KeyIdentity and there is no log to take it from")
            self._idents[key] = identity_from_log(self.log, key)
        return self._idents[key]

    def action_uuid(self, decl: ActionDecl, ident: KeyIdentity) -> str:
        return self.agent.action_uuid(decl.name, ident.key_format, attempt=self.plan.attempt)

    # rounds -----------------------------------------------------------------------------------------
    def run(self) -> bool:
        seqs = {k: self.plan.seq_of(k) for k in {*self.plan.restored_seq, *(i.key for i in self.plan.inputs)}}
        try:
            by_key: dict[str, list[Any]] = {}
            for p in self.plan.pending:
                if self._decl(p.action).scope is not None or p.event.type == SUBAGENT_EVENT:
                    # PR #1138: child tasks are dropped on resume; the root caller re-issues the call
                    self.warnings.append(f"dropped the restored child task {p.action} at ({p.key}, {p.seq}) "
                                         "(sub-agent child tasks are dropped on resume, spec §11.4)")
                    continue
                by_key.setdefault(p.key, []).append(p)
            for key, tasks in by_key.items():
                # open() re-submits the in-flight round's queued tasks, original events and ids (§9.5 step 2)
                seq = tasks[0].seq
                rnd = _Round(key, seq, self.ident(key), "pending")
                self.rounds[(rnd.ident.business_key, seq)] = rnd.input
                self._round(rnd, [(self._decl(t.action), t.event, None) for t in tasks])
                seqs[key] = max(seqs.get(key, -1), seq)
            for inp in self.plan.inputs:
                seq = seqs.get(inp.key, -1) + 1
                seqs[inp.key] = seq
                rnd = _Round(inp.key, seq, self.ident(inp.key), inp.display, inp.event.fingerprint)
                self.rounds[(rnd.ident.business_key, seq)] = rnd.input
                initial: list[tuple[ActionDecl, AgentEvent, int | None]] = []
                if self.plan.begin_event:
                    begin = getattr(self.agent, "begin_event", lambda _e: None)(inp.event)
                    if begin is not None:
                        begin = begin.with_id(begin.id or self.new_id())
                        initial += [(d, begin, None) for d in self.agent.listeners(begin)]
                event = inp.event if inp.event.id else inp.event.with_id(self.new_id())
                initial += [(d, event, None) for d in self.agent.listeners(event)]
                self._round(rnd, initial)
        except _Crash:
            return True
        return False

    def _decl(self, name: str) -> ActionDecl:
        for d in self.agent.actions:
            if d.name == name:
                return d
        raise RecoveryError(f"pending task names action {name!r}, which the agent does not declare")

    def _round(self, rnd: _Round, initial: list[tuple[ActionDecl, AgentEvent, int | None]]) -> None:
        queue = deque(initial)
        while queue:
            decl, event, parent = queue.popleft()
            index, outputs, _ = self.task(rnd, decl, event, parent, None)
            for out in outputs:
                if out.type == OUTPUT_EVENT:
                    continue   # goes downstream (again, for reused actions; the sink decides)
                queue.extend((d, out, index) for d in self.agent.listeners(out))
        # round complete: sensory memory is cleared (§9.3 step 5); what no task of it looked up is
        # NOT-DISPATCHED, decided now (§11.4.5), so a later eviction cannot hide it (issue #12 item 10)
        self.sensory.pop(rnd.key, None)
        self.nd_rows.extend(self._not_dispatched_at(rnd.ident.business_key, rnd.seq, rnd.input))

    def run_child(self, rnd: _Round, boot: AgentEvent, parent: int, call: _Call) -> list[AgentEvent]:
        """Dispatch a sub-agent call's child graph at the caller's key and seq until it quiesces; the
        call's result events (0.3: delegate ``_output_event`` envelopes; main: ``subagentResultEvents``)."""
        collected: list[AgentEvent] = []
        queue = deque((d, boot, parent) for d in self.agent.listeners(boot))
        while queue:
            decl, event, par = queue.popleft()
            index, outputs, results = self.task(rnd, decl, event, par, call)
            collected.extend(results)
            for out in outputs:
                if out.type == SUBAGENT_EVENT and out.attributes.get("delegateType") == OUTPUT_EVENT:
                    collected.append(out)
                    continue
                queue.extend((d, out, index) for d in self.agent.listeners(out))
        return collected

    # one task (§9.3) ----------------------------------------------------------------------------
    def task(self, rnd: _Round, decl: ActionDecl, event: AgentEvent, parent: int | None,
             call: _Call | None) -> tuple[int, list[AgentEvent], list[AgentEvent]]:
        ident = rnd.ident
        fingerprint = event.fingerprint
        action_uuid = self.action_uuid(decl, ident)
        sk = ident.state_key(rnd.seq, fingerprint, action_uuid)
        task = Task(business_key=ident.business_key, seq=rnd.seq, state_key=sk, event_uuid=fingerprint,
                    action_uuid=action_uuid, event_id=event.id, event_type=event.type, is_root=event.is_root,
                    key_format=ident.key_format, key_text=ident.key_text, action=decl.name,
                    round_input=rnd.input_fingerprint)
        self.looked_up.add(sk)
        index = len(self.rows)
        row = {"key": rnd.key, "business_key": ident.business_key, "seq": rnd.seq, "input": rnd.input,
               "action": decl.name, "event_id": event.id, "event_type": event.routing_type,
               "fingerprint": fingerprint, "state_key": sk, "parent": parent,
               "scope": call.scope if call else None, "body_ran": False, "calls_executed": 0,
               "calls_replayed": 0, "cache_ops": []}
        self.rows.append(row)
        ops: list[Any] = []
        row["cache_ops"] = ops
        core = TaskLookups(self.session, task, lambda decision: ops.extend(decision.events))
        decision = self._get(core, row)
        row.update(outcome=str(decision.outcome), reason=decision.reason,
                   entry_pos=decision.entry.pos if decision.entry is not None else None)
        if decision.outcome is Outcome.REUSE and decision.entry is not None:  # a REUSE always names its entry
            return (index, *self._reuse(decision.entry, event, decl, rnd))
        recorded: Sequence[Any] = ()
        if decision.outcome is Outcome.RERUN:
            self._step(row, core.start, lambda: self._entry(task, event, completed=False))
        else:
            value = self._value(decision.entry)
            recorded = value.call_results if value is not None else ()
        journal = SymbolicCallJournal(recorded, call_matching=self.call_matching)
        ctx = _Context(self, rnd, decl, event, journal, index, call)
        row["body_ran"] = True
        self.ledger[(rnd.key, "body", decl.name)] += 1
        self.agent.run_action(decl.name, ctx)
        self.warnings.extend(journal.warnings)
        row["calls_executed"], row["calls_replayed"] = ctx.executed, ctx.replayed
        self._step(row, core.complete,
                   self._entry(task, event, completed=True, outputs=ctx.outputs, results=ctx.results))
        return index, ctx.outputs, ctx.results

    @staticmethod
    def _get(core: TaskLookups, row: dict[str, Any]) -> LookupDecision:
        try:
            return core.get()
        except TaskFailed as failed:
            row.update(outcome=str(Outcome.FAIL), reason=failed.decision.reason, entry_pos=None)
            raise _Crash from None

    @staticmethod
    def _step(row: dict[str, Any], step: Callable[[Any], None], arg: Any) -> None:
        try:
            step(arg)
        except TaskFailed as failed:
            row.update(outcome=str(Outcome.FAIL), reason=failed.decision.reason, entry_pos=None)
            raise _Crash from None

    def _value(self, entry: Entry | None) -> Any:
        if entry is None:
            return None
        if entry.value is not None:
            return entry.value
        if entry.pos is not None and self.log is not None:
            return self.log.value(entry.pos)
        return None

    def _reuse(self, entry: Entry, event: AgentEvent, decl: ActionDecl,
               rnd: _Round) -> tuple[list[AgentEvent], list[AgentEvent]]:
        value = self._value(entry)
        if value is None:
            return [], []
        stm = self.short_term.setdefault(rnd.key, {})
        for mu in value.short_term_memory_updates:     # short-term first, then sensory (§9.3 step 2)
            stm[mu.path] = mu.value
        sensory = self.sensory.setdefault(rnd.key, {})
        for mu in value.sensory_memory_updates:
            sensory[mu.path] = mu.value
        return reused_events(value, event, decl, self.model)

    def _entry(self, task: Task, event: AgentEvent, *, completed: bool,
               outputs: Sequence[AgentEvent] = (), results: Sequence[AgentEvent] = ()) -> Entry:
        outputs, results = tuple(outputs), tuple(results)
        value = _WrittenState(lambda: _written_state(event, outputs, results, completed))
        return Entry(state_key=task.state_key, business_key=task.business_key, seq=task.seq,
                     event_uuid=task.event_uuid, action_uuid=task.action_uuid, key_format=task.key_format,
                     key_text=task.key_text, is_root=task.is_root, completed=completed, task_event_id=event.id,
                     task_event_type=event.type, output_event_ids=tuple(o.id for o in outputs if o.id),
                     value=value)

    # not dispatched ---------------------------------------------------------------------------------
    def not_dispatched(self) -> list[dict[str, Any]]:
        """Cached records of replayed rounds that no task looked up, each decided when its round ended."""
        return list(self.nd_rows)

    def _not_dispatched_at(self, bk: str, seq: int, label: str) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for entry in sorted(self.session.store.entries_at(bk, seq), key=lambda e: (e.pos is None, e.pos or 0)):
            if entry.state_key in self.looked_up:
                continue
            names, plan_key = self._naming()
            rows.append({"key": plan_key.get(bk, bk), "business_key": bk, "seq": seq, "input": label,
                         "action": names.get(entry.action_uuid, entry.action_uuid[:8]),
                         "event_id": entry.task_event_id, "event_type": entry.task_event_type,
                         "fingerprint": entry.event_uuid, "outcome": NOT_DISPATCHED,
                         "reason": "cached record of a replayed round that no task looked up",
                         "state_key": entry.state_key, "entry_pos": entry.pos, "parent": None, "scope": None,
                         "body_ran": False, "calls_executed": 0, "calls_replayed": 0, "cache_ops": []})
        return rows

    def _naming(self) -> tuple[dict[str, str], dict[str, str]]:
        """(action uuid → name, business key → plan key), rebuilt only when a key identity was added.

        Once per round these would cost O(keys) each: quadratic over a fleet (a scan window of 11k keys).
        """
        if self._named_for != len(self._idents):
            self._named = (self._action_names(),
                           {i.business_key: k for k, i in reversed(list(self._idents.items()))})
            self._named_for = len(self._idents)
        return self._named

    def _action_names(self) -> dict[str, str]:
        names = {}
        for ident in {i.key_format for i in self._idents.values()}:
            for d in self.agent.actions:
                names[self.agent.action_uuid(d.name, ident, attempt=self.plan.attempt)] = d.name
                names.setdefault(self.agent.action_uuid(d.name, ident, attempt=0), d.name)
        return names


class _WrittenState:
    """The value of a record this replay wrote, built as a codec ``ActionState`` only when something reads it
    (a later reuse of the same state key; most written records are never read again)."""

    __slots__ = ("_build", "_state")

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build: Callable[[], Any] | None = build
        self._state: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._build is not None:
            self._state, self._build = self._build(), None
        return getattr(self._state, name)


def _written_state(event: AgentEvent, outputs: Sequence[AgentEvent], results: Sequence[AgentEvent],
                   completed: bool) -> Any:
    from agent_inspect import codec
    from agent_inspect.recovery._refresh import with_subagent_result_events

    task_event = codec.Event.new(event.type, dict(event.attributes), id=event.id,
                                 event_class=event.event_class or codec.GENERIC_EVENT)
    outs = tuple(codec.Event.new(o.type, dict(o.attributes), id=o.id, upstream_event_id=o.upstream_event_id,
                                 upstream_action_name=o.upstream_action) for o in outputs)
    value = codec.ActionState(task_event=task_event, output_events=outs, completed=completed)
    if results:
        value = with_subagent_result_events(value, (codec.Event.new(
            r.type, dict(r.attributes), id=r.id, event_class=_OUTPUT_CLASS) for r in results))
    return value


def reused_events(value: Any, event: AgentEvent, decl: ActionDecl,
                  model: RuntimeModel) -> tuple[list[AgentEvent], list[AgentEvent]]:
    """What a REUSE of a completed record sends: ``(outputs to route, sub-agent result events)``.

    Stored ids are kept and the lineage is re-bound to the current task (spec §9.3). Under a runtime with
    ``subagent_results`` (main, addendum §1.1) a reused *child* sends its ``subagentResultEvents`` as
    the call's result and none of its forwarded envelopes; with ``no_rebootstrap`` a reused root
    caller does not send its stored bootstrap envelopes again.
    """
    from agent_inspect.recovery._refresh import subagent_result_events

    def rebound(e: Any) -> AgentEvent:
        return agent_event(e, upstream_event_id=event.id, upstream_action=decl.name)

    if model.subagent_results and event.type == SUBAGENT_EVENT:
        return [], [rebound(e) for e in subagent_result_events(value)]
    outputs = [rebound(e) for e in value.output_events]
    if model.no_rebootstrap and event.type != SUBAGENT_EVENT and decl.scope is None:
        outputs = [o for o in outputs if o.type != SUBAGENT_EVENT]
    return outputs, []


def predict(subject: ActionStateLog | Reconstruction | None, *, recovery: Recovery | None = None,
            session: RecoverySession | None = None, new_id: Callable[[], str] | None = None,
            **overrides: Any) -> Prediction:
    """Predict what a recovery does with ``subject`` (the static path, spec §15.6).

    ``subject`` is an ``ActionStateLog`` or a :class:`~agent_inspect.recovery.Reconstruction`, whose log and
    settings are then used. The settings are ``recovery`` (a :class:`Recovery`) or its overrides by name
    (``rule``, ``markers``, ``runtime``, ``store_flavour``, ``kafka_pending``, ``plan``, ``agent``,
    ``call_matching``, ``expected_fingerprint``, ``max_parallelism``), resolved once with
    :meth:`Recovery.resolve`: the rule defaults to the one the log's runtime ships (the original rule for
    0.3, 0.4 and main); ``markers`` select the rebuild window (None: the whole loaded log, ``[]``: a fresh
    start); ``plan`` defaults to :meth:`ReplayPlan.from_log` over the same window; ``agent`` to an
    :class:`~agent_inspect.agents.AsRecordedAgent` of the log (a rerun regenerates the recorded children with
    fresh ids). ``call_matching`` ("position" or "function-id", the #1016 variant) is how replayed durable calls
    meet their recorded slots. K2 restore checks (spec §6.5): a window with a serializer fingerprint other
    than ``expected_fingerprint`` (default: the window's most common) or a key group outside
    ``[0, max_parallelism)`` (default: not checked) fails the restore, and every task FAILs.
    The runtime also selects that runtime's recovery behaviours (:func:`agent_inspect.store.runtime_model`):
    from 0.4 on, checkpoint-time refresh rows bring the pending states of rounds in flight at the restored
    checkpoint back (RESUME with the recorded call results; ``kafka_pending`` picks the Kafka mechanism); on
    main, sub-agent calls reserve PENDING caller slots, a reused child replays its ``subagentResultEvents``,
    and a reused root caller sends no bootstrap.

    Pass ``session`` to continue from an already rebuilt store; ``new_id`` to make fresh event ids
    reproducible. The result carries the settings (:attr:`Prediction.recovery`).

    For example::

        p = ai.predict(log, markers=ai.samples.markers("production"))
        p.tasks["outcome"].value_counts(), p.ledger_totals()
    """
    log: Any = subject
    if _is_reconstruction(subject):
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
        if plan is None:
            plan = ReplayPlan.from_log(source, markers=settings.markers, runtime=info, kafka_pending=model.kafka_pending)
        if agent is None:
            from agent_inspect.agents import AsRecordedAgent

            agent = AsRecordedAgent(source)
        if session is None:
            from agent_inspect.recovery._refresh import refresh_positions

            session = rebuild(source, settings.rule, settings.markers,
                              expected_fingerprint=settings.expected_fingerprint,
                              max_parallelism=settings.max_parallelism, refresh=refresh_positions(source, model))
    sim = Simulation(log, plan, cast("Agent", agent), session, new_id or _fresh_id,
                     call_matching=settings.call_matching, runtime=model)
    crashed = sim.run()
    rows = sim.rows + ([] if crashed else sim.not_dispatched())
    tasks = pd.DataFrame(rows, columns=_TASK_COLUMNS)
    for col in ("seq", "entry_pos", "parent", "calls_executed", "calls_replayed"):
        tasks[col] = tasks[col].astype("Int64")
    tasks["body_ran"] = tasks["body_ran"].astype(bool)
    tasks["cache_ops"] = [tuple(ops) for ops in tasks["cache_ops"]]
    tasks["removed"] = [removed_by(ops) for ops in tasks["cache_ops"]]
    tasks["rule_note"] = tasks["reason"]   # the rule's own words, kept for tools and tests
    tasks["reason"] = reader_reasons(rows, session.events)
    ledger = pd.DataFrame([{"key": k, "kind": kind, "name": name, "router": None if kind == "body" else call_router(name),
                            "count": n} for (k, kind, name), n in sim.ledger.items()],
                          columns=["key", "kind", "name", "router", "count"])
    ledger["count"] = ledger["count"].astype("int64")
    return Prediction(rule=getattr(session.rule, "name", settings.rule.name), tasks=tasks, events=tuple(session.events),
                      divergences=tuple(session.divergences), ledger=ledger, crashed=crashed,
                      warnings=tuple(sim.warnings), notes=plan.notes, session=session, runtime=info,
                      subagent_results=dict(sim.subagent_results), recovery=settings)


_IDS = random.Random()


def _fresh_id() -> str:
    """A random version-4 UUID as text, like ``str(uuid.uuid4())`` at a fraction of its cost (a prediction of a
    fleet makes one per rerun output)."""
    h = f"{_IDS.getrandbits(128) & _V4_CLEAR | _V4_SET:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_V4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)
_V4_SET = (0x4000 << 64) | (0x8000 << 48)


def _is_reconstruction(obj: Any) -> bool:
    return all(hasattr(obj, a) for a in ("log", "recovery", "session", "divergences"))


def simulate(plan: ReplayPlan, agent: Agent, session: RecoverySession, *, log: Any = None,
             new_id: Callable[[], str] | None = None, call_matching: str = "position",
             runtime: str | RuntimeLike = "0.3") -> Simulation:
    """Drive ``plan`` with ``agent`` through an already rebuilt ``session`` (which it changes) and return
    the :class:`Simulation` (``rows``, ``ledger``, ``crashed``). ``predict`` is this plus the rebuild and frames.
    ``runtime`` selects the upstream runtime's behaviours (:func:`agent_inspect.store.runtime_model`).
    """
    sim = Simulation(log, plan, agent, session, new_id or _fresh_id, call_matching=call_matching,
                     runtime=runtime)
    sim.crashed = sim.run()
    return sim
