"""The one recovery engine: spec §9.3 over a rebuilt session, round by round, task by task.

Every verb that replays runs this loop (``predict`` with symbolic calls, the executor with live bodies); drivers
see it through :class:`Observer` and serve calls through :class:`CallService`.

Why it is long: one round's FIFO, one task's §9.3 sequence and a sub-agent call's inline child round read top
to bottom here; split, one operator step would scatter over modules.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from agent_inspect._errors import ReplayError
from agent_inspect.agents import INPUT_EVENT, OUTPUT_EVENT, SUBAGENT_EVENT, ActionDecl, AgentEvent, RoundBeginEvents
from agent_inspect.recovery._calls import CallEvent, CallJournal, CallSlot, Executor, decode_recorded, run_for_real
from agent_inspect.recovery._context import ReplayContext
from agent_inspect.recovery._core import TaskFailed, TaskLookups
from agent_inspect.recovery._events import wrap_subagent
from agent_inspect.recovery._memory import Memory
from agent_inspect.recovery._prediction import lookup_words
from agent_inspect.recovery._record import RecordView, recorded_views
from agent_inspect.store import Entry, LookupDecision, Outcome, RecoverySession, RuntimeModel, Task

if TYPE_CHECKING:
    from agent_inspect.log import ActionStateLog
    from agent_inspect.recovery._plan import KeyIdentity
    from agent_inspect.recovery._planview import PlanView
    from agent_inspect.recovery._statekeys import KeyMaker

__all__ = ["Engine", "EngineState", "JobFailed", "Observer", "CallService", "TaskRun", "TaskQueue"]

#: the members as module constants: reading one off the enum class costs about 60 ns (a lookup or two per get)
_REUSE, _RERUN = Outcome.REUSE, Outcome.RERUN

TaskQueue = deque[tuple[ActionDecl | str, AgentEvent, bool, int | None]]
"""A round's FIFO of (action, event, restored, parent task)."""


class JobFailed(BaseException):
    """The replayed job failed (a lookup threw, a body raised, a call was denied)."""

    def __init__(self, reason: str, error: BaseException | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.error = error


@dataclass(slots=True, eq=False)
class TaskRun:
    """One dispatched task as observers see it: where it runs, what it got, what the store decided.

    For example::

        run = ai.recovery.engine.TaskRun(0, "user-1", 1, "hello", "chat", ai.agents.AgentEvent("_input_event"))
        run.key, run.seq, run.action, run.restored     # what every Observer hook is told
    """

    index: int                       # ordinal of the task in this run
    key: str                         # business key
    seq: int
    input: str                       # the round's input (its label), or "pending" for a restored round
    action: str
    event: AgentEvent
    decl: ActionDecl | None = None   # None: the agent has no such action (a restored task's stale logic)
    parent: int | None = None        # the task whose output triggered this one
    scope: str | None = None         # the sub-agent scope of a child task
    restored: bool = False
    task: Task | None = None         # its store identity, once looked up
    plan_key: str = ""               # the key as the plan names it (two Flink keys may share a business key, #1099)


class Observer:
    """What a driver sees of a run; every hook is optional. Hooks must not change the engine's state.

    For example::

        from agent_inspect.recovery.engine import Observer

        class EverythingReruns(Observer):               # force_rerun: the one what-if an observer may answer
            def force_rerun(self, run):
                return True

        EverythingReruns().force_rerun(None), Observer().force_rerun(None)   # the default keeps the rule's answer
    """

    def rebuilt(self, session: RecoverySession) -> None:
        """The session is rebuilt (before the first task)."""

    def dropped(self, run: TaskRun, reason: str, *, stale: bool) -> None:
        """A restored task is not dispatched (a child task on resume, or an action the agent lacks)."""

    def looked_up(self, run: TaskRun, decision: LookupDecision, stage: str) -> None:
        """One ``get`` of a task (``stage``: first, again, bind, complete), with the cache events it caused."""

    def force_rerun(self, run: TaskRun) -> bool:
        """Whether to run the body although the rule decided otherwise (a what-if policy)."""
        return False

    def reused(self, run: TaskRun, record: RecordView, outputs: Sequence[AgentEvent]) -> None:
        """A REUSE: memory updates applied, ``outputs`` re-emitted, no body."""

    def executing(self, run: TaskRun, *, resume: bool, recorded: int) -> None:
        """A body is about to run (``recorded``: call results a RESUME replays from)."""

    def called(self, run: TaskRun, event: CallEvent) -> None:
        """One durable-call decision inside a body."""

    def wrote(self, run: TaskRun, entry: Entry, value: RecordView, what: str) -> None:
        """A record was put: ``what`` is "initial", "completed" or "call results (n)"."""

    def body_failed(self, run: TaskRun, error: BaseException) -> None:
        """A body raised: the job fails."""

    def emitted(self, run: TaskRun, event: AgentEvent, *, reused: bool) -> None:
        """An output left the agent (an ``_output_event``, or a child's delegate output outside a call)."""

    def round_complete(self, key: str, seq: int, input_event: AgentEvent | None, cleared: int) -> None:
        """A round's queue is empty; its sensory memory (``cleared`` paths) is cleared."""

    def not_dispatched(self, key: str, seq: int, label: str, entry: Entry) -> None:
        """A cached record of a replayed round that no task looked up (decided when its round ended)."""


class CallService(Protocol):
    """How calls that must run are served, and how recorded payloads become values.

    For example::

        from agent_inspect.recovery import engine

        class Stubbed(engine.DirectCalls):              # serve every call that must run with a stub
            def runner(self, production_calls):
                return lambda function_id, args_digest, call, index: ("SUCCEEDED", "stub")

        Stubbed().runner(())("llm.ask", "", lambda: "real", 0)   # pass it as Engine(..., calls=Stubbed())
    """

    def runner(self, production_calls: Sequence[CallSlot]) -> Executor: ...

    def decoder(self) -> Callable[[CallSlot], Any]: ...


class DirectCalls:
    """Calls run as the body makes them; recorded payloads stay inert (never unpickled).

    For example::

        calls = ai.recovery.engine.DirectCalls()        # the default: run declared calls, payloads stay inert
        slot = ai.executor.CallSlot("llm.ask", "", "SUCCEEDED", result_payload=b'"it shipped"')
        calls.decoder()(slot)
    """

    def runner(self, production_calls: Sequence[CallSlot]) -> Executor:
        return run_for_real

    def decoder(self) -> Callable[[CallSlot], Any]:
        return decode_recorded


@dataclass
class EngineState:
    """What one pass owns; drivers read it between steps (checkpoints read the round in flight).

    For example::

        state = ai.recovery.engine.EngineState()        # what one pass owns; a driver may pass its own
        state.inputs_started, state.seq_of, state.failure
    """

    session: RecoverySession | None = None
    memory: dict[str, tuple[Memory, Memory]] = field(default_factory=dict)      # per business key
    seq_of: dict[str, int] = field(default_factory=dict)                        # messageSequenceNumber per key
    last_completed: dict[str, int] = field(default_factory=dict)
    inputs_started: int = 0
    active: tuple[str, int, TaskQueue] | None = None     # the top-level round in flight: key, seq, queue
    current: tuple[ActionDecl | str, AgentEvent] | None = None   # its task being processed
    rounds: dict[tuple[str, int], str] = field(default_factory=dict)            # replayed rounds → input label
    not_dispatched: list[tuple[str, int, str, Entry]] = field(default_factory=list)
    looked_up: set[str] = field(default_factory=set)
    #: per sub-agent call ``<sessionId>#<callId>``: the result event ids the caller got, or "journal"
    subagent_results: dict[str, tuple[str, ...] | str] = field(default_factory=dict)
    #: per sub-agent call ``<sessionId>#<callId>``: the sub-agent it called (its ``targetScope``)
    subagent_scopes: dict[str, str] = field(default_factory=dict)
    tasks: int = 0
    warnings: list[str] = field(default_factory=list)     # the call journals' non-determinism warnings
    failure: JobFailed | None = None


class Engine:
    """One pass of a replay plan through a rebuilt session (spec §9.3), reported to an :class:`Observer`.

    ``session`` is this pass's own copy (the engine changes it); ``keys`` resolves each plan key's identity;
    ``new_id`` makes fresh event ids; ``deliver=False`` runs bodies with the symbolic call journal (no values;
    failures re-raised as in a live replay, recorded ones inert: ``predict``, which also passes ``calls`` that
    make no call of an agent whose calls are not declarations). ``memory``/``sensory`` are
    restored memory per business key.

    For example::

        from agent_inspect.recovery import engine

        class Reruns(engine.Observer):                  # sees every decision, changes nothing
            bodies = 0
            def executing(self, run, *, resume, recorded):
                self.bodies += 1

        r = ai.Recovery.for_log(log, markers=markers)
        plan, keys, seen = r.replay_plan(log), engine.KeyMaker(log, key_format=None), Reruns()
        keys.register(plan.keys)
        run = engine.Engine(log=log, agent=ai.agents.AsRecordedAgent(log), session=r.rebuild(log),
                            plan=engine.PlanView(plan, business_key=keys.business_key), keys=keys, model=r.model,
                            attempt=plan.attempt, new_id=engine.IdSource(0).new, observer=seen, deliver=False)
        run.run(), seen.bodies                           # the failure that stopped the job (None), bodies re-run
    """

    def __init__(self, *, log: ActionStateLog | None, agent: Any, session: RecoverySession, plan: PlanView,
                 keys: KeyMaker, model: RuntimeModel, attempt: int, new_id: Callable[[], str],
                 observer: Observer | None = None, calls: CallService | None = None, deliver: bool = True,
                 call_matching: str = "position", memory_decoder: Callable[[Any], Any] | None = None,
                 memory: Mapping[str, Mapping[str, Any]] | None = None,
                 sensory: Mapping[str, Mapping[str, Any]] | None = None,
                 state: EngineState | None = None) -> None:
        self.log, self.agent, self.plan, self.keys, self.model = log, agent, plan, keys, model
        self.attempt, self.new_id, self.deliver = attempt, new_id, deliver
        self.observer = observer if observer is not None else Observer()
        self.calls: CallService = calls if calls is not None else DirectCalls()
        self.call_matching, self.memory_decoder = call_matching, memory_decoder
        self._base_stm = {keys.business_key(k): dict(v) for k, v in (memory or {}).items()}
        self._base_sensory = {keys.business_key(k): dict(v) for k, v in (sensory or {}).items()}
        self.state = state if state is not None else EngineState()
        self.state.session = session
        self.session = session
        self._decls = {d.name: d for d in agent.actions}
        self._uuids: dict[tuple[str, str], str] = {}
        self._idents: dict[str, tuple[KeyIdentity, Callable[[int, str, str], str]]] = {}   # per plan key
        # only an observer that overrides force_rerun can answer a what-if
        self._what_if = type(self.observer).force_rerun is not Observer.force_rerun
        self._named: tuple[int, dict[str, str]] = (-1, {})
        self._plan_key = ""
        self._round_input: str | None = None
        self._rebuilt: dict[str, int] = {}
        self._recorded = recorded_views(log) if log is not None else None

    # ------------------------------------------------------------------------------ the job

    def run(self) -> JobFailed | None:
        """Run the plan to its end; the failure that stopped the job, if any."""
        state, plan = self.state, self.plan
        self.observer.rebuilt(self.session)
        # the record each task re-dispatches, as the rebuild cached it (a divergence's trigger, even once evicted)
        self._rebuilt = {e.state_key: e.pos for e in self.session.store.entries() if e.pos is not None}
        try:
            for key, seq, tasks in plan.restored_rounds():
                self._round(key, seq, "pending", tasks, restored=True)
            for inp in plan.inputs:
                state.inputs_started += 1
                seq = plan.next_seq(inp.key, inp.seq)
                event = inp.event if inp.event.id is not None else inp.event.with_id(self.new_id())
                todo: list[tuple[ActionDecl | str, AgentEvent]] = []
                if plan.plan.begin_event:
                    # agent-run.begin-event: the begin event's tasks are queued before the input's (§9.2)
                    begin = _begin_event(self.agent, event, self.keys.business_key(inp.key), seq)
                    if begin is not None:
                        begin = begin if begin.id is not None else begin.with_id(self.new_id())
                        todo += [(d, begin) for d in self.agent.listeners(begin)]
                todo += [(d, event) for d in self.agent.listeners(event)]
                self._round(inp.key, seq, inp.display, todo, input_event=event)
            for key, seq, label, entry in state.not_dispatched:
                self.observer.not_dispatched(key, seq, label, entry)
        except JobFailed as failed:
            state.failure = failed
        return state.failure

    def memory_of(self, key: str) -> tuple[Memory, Memory]:
        """Short-term and sensory memory of business key ``key`` (restored memory until written)."""
        mem = self.state.memory.get(key)
        if mem is None:
            mem = self.state.memory[key] = (Memory(self._base_stm.get(key)), Memory(self._base_sensory.get(key)))
        return mem

    def action_names(self) -> dict[str, str]:
        """Action name per action uuid of this attempt (and of attempt 0), for every key format in use."""
        formats = {self.keys.identity(k).key_format for k in self.state.seq_of} | {self.keys.format}
        if self._named[0] != len(formats):
            names: dict[str, str] = {}
            for fmt in formats:
                for d in self.agent.actions:
                    names[self.agent.action_uuid(d.name, fmt, attempt=self.attempt)] = d.name
                    names.setdefault(self.agent.action_uuid(d.name, fmt, attempt=0), d.name)
            self._named = (len(formats), names)
        return self._named[1]

    # ------------------------------------------------------------------------------ rounds

    def _round(self, plan_key: str, seq: int, label: str, tasks: Sequence[tuple[ActionDecl | str, AgentEvent]], *,
               restored: bool = False, input_event: AgentEvent | None = None) -> None:
        state, key = self.state, self.keys.business_key(plan_key)
        self._plan_key = plan_key
        queue: TaskQueue = deque()
        for decl, event in tasks:
            name = decl if isinstance(decl, str) else decl.name
            known = self._decls.get(name)
            if restored and (event.type == SUBAGENT_EVENT or (known is not None and known.scope is not None)):
                # PR #1138: child tasks are dropped on resume; their root caller re-issues the call (§11.4)
                run = TaskRun(state.tasks, key, seq, label, name, event, known, restored=True, plan_key=plan_key)
                state.tasks += 1
                self.observer.dropped(run, "restored child task dropped on resume (§11.4)", stale=False)
                continue
            queue.append((decl, event, restored, None))
        state.rounds[(key, seq)] = label
        state.seq_of[key] = seq
        state.active = (key, seq, queue)
        self._round_input = input_event.fingerprint if input_event is not None else None
        self._dispatch(key, seq, label, queue, None, None)
        state.active = state.current = None
        # what no task of the round looked up is NOT-DISPATCHED, decided now (§11.4.5), so a later eviction
        # cannot hide it (issue #12 item 10)
        unseen = [e for e in self.session.store.entries_at(key, seq) if e.state_key not in state.looked_up]
        if unseen:
            state.not_dispatched.extend((key, seq, label, e) for e in sorted(unseen,
                                                                             key=lambda e: (e.pos is None, e.pos or 0)))
        _, sensory = self.memory_of(key)
        cleared = len(sensory)
        sensory.clear()            # round complete: sensory memory is cleared (§9.3 step 5)
        state.last_completed[key] = seq
        self.observer.round_complete(key, seq, input_event, cleared)

    def _dispatch(self, key: str, seq: int, label: str, queue: TaskQueue, call: _Call | None,
                  collected: list[AgentEvent] | None) -> None:
        """Run ``queue`` to empty; inside a sub-agent call, ``collected`` gathers the call's result events."""
        state, decls, listeners = self.state, self._decls, self.agent.listeners
        scope = call.scope if call else None
        while queue:
            decl, event, restored, parent = queue.popleft()
            if call is None:
                state.current = (decl, event)
            name = decl if isinstance(decl, str) else decl.name
            index = state.tasks
            state.tasks = index + 1
            run = TaskRun(index, key, seq, label, name, event, decls.get(name), parent, scope, restored, None,
                          self._plan_key)
            outputs, results, reused = self._task(run)
            if collected is not None:
                collected.extend(results)
            for out in outputs:
                out_type = out.type
                delegate_output = out_type == SUBAGENT_EVENT and out.attributes.get("delegateType") == OUTPUT_EVENT
                if delegate_output and collected is not None:
                    collected.append(out)      # 0.3: a child's output envelope answers its call
                elif out_type == OUTPUT_EVENT or delegate_output:
                    self.observer.emitted(run, out, reused=reused)   # downstream (again, for a reuse)
                else:
                    for d in listeners(out):
                        queue.append((d, out, False, index))

    # ------------------------------------------------------------------------------ one task (§9.3)

    def _task(self, run: TaskRun) -> tuple[list[AgentEvent], list[AgentEvent], bool]:
        decl = run.decl
        if decl is None:
            # a restored in-flight task whose action the agent does not have (stale logic, #1069)
            self.observer.dropped(run, f"action {run.action!r} is not in the candidate agent "
                                       "(stale logic of a restored task)", stale=True)
            return [], [], False
        known = self._idents.get(run.plan_key)
        if known is None:
            ident = self.keys.identity(run.plan_key)
            known = self._idents[run.plan_key] = (ident, ident.state_keys())
        ident, state_keys = known
        event = run.event
        fingerprint = event.fingerprint
        uuid_key = (run.action, ident.key_format)
        action_uuid = self._uuids.get(uuid_key)
        if action_uuid is None:
            action_uuid = self._uuids[uuid_key] = self.agent.action_uuid(run.action, ident.key_format,
                                                                         attempt=self.attempt)
        state_key = state_keys(run.seq, fingerprint, action_uuid)
        self.state.looked_up.add(state_key)
        task = run.task = Task(run.key, run.seq, state_key, fingerprint, action_uuid, event.id, event.type,
                               event.type == INPUT_EVENT, ident.key_format, ident.key_text, run.action,
                               self._round_input)
        core = _RunLookups(self, run, task)
        try:
            decision = core.get(pos=self._rebuilt.get(state_key))
            record = self._read(decision.entry) if decision.entry is not None else None
            forced = self._what_if and decision.outcome is not _RERUN and self.observer.force_rerun(run)
            if decision.outcome is _REUSE and record is not None and not forced:
                outputs, results = self._reuse(run, decl, record)
                return outputs, results, True
            outputs, results = self._execute(core, run, decl, None if forced else record,
                                             served_from=record if forced else None)
        except TaskFailed as failed:   # a FAIL at any get ends the task and fails the job (§9.3)
            raise JobFailed(f"{lookup_words(run.action, run.key, run.seq)} failed: {failed.decision.reason}",
                            failed) from None
        return outputs, results, False

    def _read(self, entry: Entry) -> RecordView:
        value = entry.value
        if value is None and entry.pos is not None and self.log is not None:
            if self.memory_decoder is None and self._recorded is not None:
                return self._recorded(entry.pos)
            value = self.log.value(entry.pos)
        if value is None:
            raise ReplayError(f"no value for {entry.state_key} (pos {entry.pos}); this is a bug, please report it")
        return value if isinstance(value, RecordView) else RecordView.from_state(value,
                                                                                 memory_decoder=self.memory_decoder)

    def _reuse(self, run: TaskRun, decl: ActionDecl, record: RecordView) -> tuple[list[AgentEvent], list[AgentEvent]]:
        """§9.3 step 2: short-term then sensory updates, outputs re-emitted re-bound. Under main a reused child
        answers with its result events only; a reused root caller sends no bootstrap again (addendum §1.1)."""
        stm, sensory = self.memory_of(run.key)
        for path, value in record.short_term:
            stm.set(path, value)
        for path, value in record.sensory:
            sensory.set(path, value)
        event = run.event
        results: list[AgentEvent] = []
        outputs = [_rebind(o, event.id, decl.name) for o in record.outputs]
        if self.model.subagent_results and event.type == SUBAGENT_EVENT:
            results, outputs = [_rebind(r, event.id, decl.name) for r in record.results], []
        elif self.model.no_rebootstrap and event.type != SUBAGENT_EVENT and decl.scope is None:
            outputs = [o for o in outputs if o.type != SUBAGENT_EVENT]
        self.observer.reused(run, record, outputs)
        return outputs, results

    def _execute(self, core: TaskLookups, run: TaskRun, decl: ActionDecl, record: RecordView | None, *,
                 served_from: RecordView | None) -> tuple[list[AgentEvent], list[AgentEvent]]:
        event = run.event
        resume = record is not None and not record.completed
        recorded = record.calls if record is not None and resume else ()
        if served_from is not None:
            # force-rerun, a what-if beyond §9.3: the cached record is overwritten as if nothing were cached
            core.write(self._entry(run, RecordView(task_event=event)))
            core.get("bind")
        elif record is None:
            core.start(lambda: self._entry(run, RecordView(event)))
        stm, sensory = self.memory_of(run.key)
        journal = CallJournal(
            recorded,
            persist=lambda results: self._put(run, RecordView(event, (), (), (), results),
                                              f"call results ({len(results)})"),
            report=lambda ce: self.observer.called(run, ce),
            run=self.calls.runner(served_from.calls if served_from is not None else ()),
            decode=self.calls.decoder(), call_matching=self.call_matching, java=decl.java, deliver=self.deliver)
        ctx = ReplayContext(self, run, journal, short_term=stm, sensory=sensory)
        self.observer.executing(run, resume=resume, recorded=len(recorded))
        try:
            self.agent.run_action(decl.name, ctx)
        except ReplayError as exc:
            raise JobFailed(str(exc), exc) from None
        except Exception as exc:  # noqa: BLE001 - a failing body fails the replayed job, like upstream
            self.observer.body_failed(run, exc)
            raise JobFailed(f"action {decl.name} at ({run.key}, {run.seq}) raised {exc!r}", exc) from None
        self.state.warnings.extend(journal.warnings)
        # in field order: task event, short-term, sensory, outputs, calls, completed, results
        done = RecordView(event, tuple(ctx.short_term_updates), tuple(ctx.sensory_updates), tuple(ctx.outputs), (),
                          True, tuple(ctx.results))
        core.complete(self._entry(run, done))
        return list(ctx.outputs), list(ctx.results)

    def _entry(self, run: TaskRun, value: RecordView) -> Entry:
        t = run.task
        assert t is not None
        calls = value.calls
        if calls:
            statuses = [c.status for c in calls]
            pending, succeeded, failed = (statuses.count("PENDING"), statuses.count("SUCCEEDED"),
                                          statuses.count("FAILED"))
        else:
            pending = succeeded = failed = 0
        # in field order (binding 20 keywords costs a third of the construction; one per write)
        return Entry(t.state_key, t.business_key, t.seq, t.event_uuid, t.action_uuid, t.key_format, t.key_text,
                     t.is_root, value.completed, t.event_id, t.event_type,
                     tuple([o.id or "" for o in value.outputs]) if value.outputs else (), len(calls),
                     pending, succeeded, failed, None, self.attempt, None, value)

    def _put(self, run: TaskRun, value: RecordView, what: str) -> None:
        self._wrote(run, self._entry(run, value), what)

    def _wrote(self, run: TaskRun, entry: Entry, what: str | None = None) -> Entry:
        landed = self.session.write(entry)
        self.observer.wrote(run, entry, entry.value, what or ("completed" if entry.completed else "initial"))
        return landed

    # ------------------------------------------------------------------------------ sub-agent calls

    def subagent_runner(self, ctx: ReplayContext, scope: str, session_id: str, call_id: str,
                        event_type: str, attributes: Mapping[str, object]) -> Callable[[], list[AgentEvent]]:
        """The durable call of a sub-agent call (§11.3–§11.4): the child round runs inline at the caller's key
        and seq until it quiesces; returns the call's result events (0.3: the delegate ``_output_event``
        envelopes; main: ``subagentResultEvents``)."""
        def run() -> list[AgentEvent]:
            # the bootstrap is regenerated with a fresh id and identical attributes (§11.4 point 2)
            boot = wrap_subagent(scope, session_id, call_id, event_type, attributes, event_id=self.new_id(),
                                 upstream_event_id=ctx.event.id, upstream_action=ctx.action)
            collected: list[AgentEvent] = []
            queue: TaskQueue = deque((d, boot, False, ctx.run.index) for d in self.agent.listeners(boot))
            self._dispatch(ctx.key, ctx.seq, ctx.run.input, queue, _Call(scope, session_id, call_id), collected)
            return collected

        return run


class _RunLookups(TaskLookups):
    """One task's gets and puts, each reported to the engine's observer (a method, not two closures per task)."""

    __slots__ = ("engine", "run")

    def __init__(self, engine: Engine, run: TaskRun, task: Task) -> None:
        # TaskLookups.__init__'s fields set here: one call less per task
        self.session, self.task, self.stage, self.decided = engine.session, task, "first", None
        self.engine, self.run = engine, run

    def looked_up(self, decision: LookupDecision) -> None:
        self.engine.observer.looked_up(self.run, decision, self.stage)

    def write(self, entry: Entry) -> object:
        return self.engine._wrote(self.run, entry)


@dataclass(frozen=True, slots=True)
class _Call:
    scope: str
    session_id: str
    call_id: str


def _begin_event(agent: Any, event: AgentEvent, key: str, seq: int) -> AgentEvent | None:
    if isinstance(agent, RoundBeginEvents):   # it knows each round's own: one input sent twice is two rounds
        return agent.begin_event_of_round(event, key, seq)
    fn = getattr(agent, "begin_event", None)
    return fn(event) if fn is not None else None


def _rebind(ev: AgentEvent, upstream_id: str | None, action: str) -> AgentEvent:
    if ev.upstream_event_id == upstream_id and ev.upstream_action == action:
        return ev   # already bound so (a reused parent kept its recorded id): events are immutable
    return ev.rebound(upstream_id, action)
