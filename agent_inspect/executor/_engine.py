"""The task engine of the replay executor: rebuild, rounds, tasks, bodies and writes (spec §9.3).

The engine runs inside a greenlet and hands each :class:`Step` back to its driver as it happens, so
the debugger can pause between any two store decisions. It never writes to a source: writes go to
the run's overlay, which production mode reads as a journal.

Why it is long: one task's §9.3 sequence (lookup, initial write, body, call records, completion) reads
top to bottom here; splitting it would scatter one operator step over modules.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import greenlet

from agent_inspect._errors import ReplayError
from agent_inspect.agents import OUTPUT_EVENT, SUBAGENT_EVENT, ActionDecl, AgentEvent
from agent_inspect.executor._agents import AgentView
from agent_inspect.executor._calls import CallEvent, LiveCallJournal
from agent_inspect.executor._context import ReplayContext
from agent_inspect.executor._events import IdSource, wrap_subagent
from agent_inspect.executor._memory import Memory
from agent_inspect.executor._plan import PlanView
from agent_inspect.executor._policy import ActionPolicy
from agent_inspect.executor._record import RecordView
from agent_inspect.executor._serve import CallServer, call_reason
from agent_inspect.executor._state import JobFailed, MemoryState, RunState, TaskQueue
from agent_inspect.executor._statekeys import KeyMaker
from agent_inspect.executor._steps import Step, StepKind, StepOutcome
from agent_inspect.recovery import RemovalCauses, TaskFailed, TaskLookups, removal_reason

if TYPE_CHECKING:
    from agent_inspect._types import RuntimeLike
    from agent_inspect.log import ActionStateLog
    from agent_inspect.store import CacheEvent, Entry, LookupDecision, RecoverySession, Task

__all__ = ["Engine", "action_name", "removed_text"]


class Engine:
    """Drives the recovery store and the agent task by task; one :class:`RunState` per pass.

    ``log`` is the read-only base (None: a fresh job); ``rule`` anything ``rules.resolve_rule`` takes.
    """

    def __init__(self, *, log: ActionStateLog | None, agent: AgentView, rule: object,
                 markers: list[dict[int, int]] | None, plan: PlanView, keys: KeyMaker, calls: CallServer,
                 attempt: int, seed: int, memory_decoder: Callable[[Any], Any] | None,
                 memory: Mapping[str, Mapping[str, Any]], sensory: Mapping[str, Mapping[str, Any]],
                 source_kind: str | None, expected_fingerprint: str | None, max_parallelism: int | None,
                 call_matching: str = "position", runtime: str | RuntimeLike = "0.3",
                 kafka_pending: str | None = None) -> None:
        from agent_inspect.store import runtime_model

        #: the upstream runtime's recovery behaviours (issue #12; :func:`agent_inspect.store.runtime_model`)
        self.model = runtime_model(runtime, kafka_pending=kafka_pending)
        self.log = log
        self.agent = agent
        self.rule = rule
        self.markers = markers
        self.plan = plan
        self.keys = keys
        self.calls = calls
        self.attempt = attempt
        self.seed = seed
        self.memory_decoder = memory_decoder
        self.base_stm = {self.business_key(k): dict(v) for k, v in memory.items()}
        self.base_sensory = {self.business_key(k): dict(v) for k, v in sensory.items()}
        self.source_kind = source_kind
        self.expected_fingerprint = expected_fingerprint
        self.max_parallelism = max_parallelism
        self.call_matching = call_matching
        self.base_session: RecoverySession | None = None
        self.restart()

    # ------------------------------------------------------------------------------ driving

    def restart(self) -> None:
        """A new pass from before the first step (the rebuild)."""
        self.run = RunState(ids=IdSource(hash((self.seed, self.attempt))))
        self.calls.restart()
        self._g = greenlet.greenlet(self._main)
        self.thread = threading.get_ident()

    def advance(self) -> Step | None:
        """Run until the next step; None when the engine has finished."""
        result = self._g.switch()
        if self._g.dead:
            self.run.finished = True
        return result if isinstance(result, Step) else None

    @property
    def session(self) -> RecoverySession:
        """The recovery session as of the current step (only once the rebuild ran)."""
        if self.run.session is None:
            raise ReplayError("the replay has no session (the rebuild did not run); this is a bug, please report it")
        return self.run.session

    @property
    def ids(self) -> IdSource:
        return self.run.ids

    def business_key(self, key: str) -> str:
        try:
            return self.keys.business_key(key)
        except ReplayError:
            return key

    def record(self, step: Step) -> Step:
        self.run.steps.append(step)
        return step

    def memory_of(self, key: str) -> tuple[Memory, Memory]:
        mem = self.run.memory.get(key)
        if mem is None:
            mem = (Memory(self.base_stm.get(key)), Memory(self.base_sensory.get(key)))
            self.run.memory[key] = mem
        return mem

    def memory_states(self) -> dict[str, MemoryState]:
        """Per business key: snapshots of short-term and sensory memory now."""
        out = {}
        for key in sorted(set(self.run.memory) | set(self.base_stm) | set(self.base_sensory)):
            stm, sensory = self.memory_of(key)
            out[key] = MemoryState(stm.snapshot(), sensory.snapshot())
        return out

    def action_names(self) -> dict[str, str]:
        """Action name per action uuid of this attempt (and of attempt 0)."""
        fmt, names = self.keys.format, {}
        for d in self.agent.agent.actions:
            names[self.agent.action_uuid(d.name, fmt, attempt=self.attempt)] = d.name
            names.setdefault(self.agent.action_uuid(d.name, fmt, attempt=0), d.name)
        return names

    def _emit(self, kind: StepKind, **fields: Any) -> Step:
        step = self.record(Step(len(self.run.steps), kind, **fields))
        if greenlet.getcurrent() is self._g:
            self._g.parent.switch(step)
        return step

    # ------------------------------------------------------------------------------ the job

    def _main(self) -> None:
        plan = PlanView(self.plan.plan, business_key=self.business_key)   # seq counters belong to this run
        try:
            self._rebuild()
            for key, seq, tasks in plan.restored_rounds():
                self._round(self.keys.business_key(key), seq, tasks, restored=True)
            for key, event in plan.inputs:
                self.run.inputs_started += 1
                seq = plan.next_seq(key)
                ev = event if event.id is not None else event.with_id(self.run.ids.new())
                todo: list[tuple[ActionDecl | str, AgentEvent]] = []
                if self.plan.plan.begin_event:
                    # agent-run.begin-event: the begin event's tasks are queued before the input's (§9.2)
                    begin = self.agent.begin_event(ev)
                    if begin is not None:
                        begin = begin if begin.id is not None else begin.with_id(self.run.ids.new())
                        todo += [(d, begin) for d in self.agent.listeners(begin)]
                todo += [(d, ev) for d in self.agent.listeners(ev)]
                self._round(self.keys.business_key(key), seq, todo, input_event=ev)
            self._not_dispatched()
        except JobFailed as failed:
            self.run.failure = failed

    def _rebuild(self) -> None:
        from agent_inspect.executor._rebuild import rebuild_session

        if self.base_session is None:
            self.base_session = rebuild_session(self.log, self.rule, self.markers,
                                                source_kind=self.source_kind,
                                                expected_fingerprint=self.expected_fingerprint,
                                                max_parallelism=self.max_parallelism, runtime=self.model)
        session = self.base_session.copy()
        self.run.session = session
        rebuild_events = [e for e in session.events if e.step == "rebuild"]
        self.run.causes = RemovalCauses(rebuild_events)
        failed = session.restore_failure
        self._emit(StepKind.REBUILD, outcome=StepOutcome.RESTORE_FAILED if failed else StepOutcome.REBUILT,
                   reason=(f"upstream fails this restore: {failed}" if failed else
                           f"{len(self.markers or [])} marker(s), rule {session.rule.name}"),
                   change=f"{len(session.store)} entries cached",
                   detail={"entries": len(session.store), "cache_events": len(rebuild_events)})
        for ev in rebuild_events:
            if ev.op == "delete":
                continue
            self._cache_event_step(ev, during="rebuild")

    def _not_dispatched(self) -> None:
        """One step per cached record of a replayed round that no task looked up (as ``predict``), each
        decided when its round ended (§11.4.5), so a later eviction cannot hide it (issue #12 item 10)."""
        names: dict[str, str] | None = None
        for key, seq, entry in self.run.not_dispatched:
            if names is None:
                names = self.action_names()
            self._emit(StepKind.NOT_DISPATCHED, key=key, seq=seq,
                       action=names.get(entry.action_uuid, entry.action_uuid[:8]),
                       event_type=entry.task_event_type, event_id=entry.task_event_id,
                       fingerprint=entry.event_uuid, state_key=entry.state_key,
                       outcome=StepOutcome.NOT_DISPATCHED,
                       reason="cached record of a replayed round that no task looked up",
                       detail={"pos": entry.pos})

    def _cache_event_step(self, ev: CacheEvent, *, during: str, task: int | None = None,
                          action: str | None = None, caused_by: int | None = None) -> None:
        """One removal; ``caused_by`` is the index of the lookup step whose get removed it."""
        kind = StepKind.INVALIDATION if ev.op == "invalidate" else StepKind.EVICTION
        divergence = self.session.divergences[ev.divergence_id].kind if ev.divergence_id is not None else None
        self._emit(kind, key=ev.business_key, seq=ev.seq, action=action, outcome=ev.op,
                   reason=removal_reason(ev, divergence), rule_note=ev.reason, change=removed_text(ev.removed), task=task,
                   detail={"removed": len(ev.removed), "during": during, "divergence_id": ev.divergence_id,
                           "state_keys": tuple(e.state_key for e in ev.removed),
                           "positions": ev.positions, "caused_by": caused_by})

    # ------------------------------------------------------------------------------ rounds and tasks

    def _round(self, key: str, seq: int, tasks: Sequence[tuple[ActionDecl | str, AgentEvent]], *,
               restored: bool = False, input_event: AgentEvent | None = None) -> None:
        queue: TaskQueue = deque()
        for decl, ev in tasks:
            if restored and ev.type == SUBAGENT_EVENT:
                # §11.4: child tasks are dropped on resume; their root caller re-issues the call
                self._emit(StepKind.LOOKUP, key=key, seq=seq, action=action_name(decl), event_type=ev.type,
                           event_id=ev.id, outcome=StepOutcome.NOT_DISPATCHED, task=self._next_task(),
                           reason="restored child task dropped on resume (§11.4)",
                           detail={"restored": True})
                continue
            queue.append((decl, ev, restored))
        if queue or not restored:
            self.run.rounds[(key, seq)] = None
        self.run.seq_of[key] = seq
        self.run.active = (key, seq, queue)
        self.run.round_input = input_event.fingerprint if input_event is not None else None
        self._dispatch(key, seq, queue, collector=None)
        self.run.active = self.run.current = None
        if (key, seq) in self.run.rounds:
            self.run.not_dispatched.extend(
                (key, seq, e) for e in sorted(self.session.store.entries_at(key, seq),
                                              key=lambda e: (e.pos is None, e.pos or 0))
                if e.state_key not in self.run.looked_up)
        _, sensory = self.memory_of(key)
        cleared = len(sensory)
        sensory.clear()
        self.run.last_completed[key] = seq
        self._emit(StepKind.ROUND_COMPLETE, key=key, seq=seq, outcome=StepOutcome.COMPLETE,
                   event_type=input_event.type if input_event else None,
                   event_id=input_event.id if input_event else None,
                   reason="task queue empty", change=f"sensory memory cleared ({cleared} paths)")

    def _dispatch(self, key: str, seq: int, queue: TaskQueue, *, collector: list[dict[str, object]] | None) -> None:
        while queue:
            decl, ev, restored = queue.popleft()
            if collector is None:
                self.run.current = (decl, ev)
            n_steps = len(self.run.steps)
            outs = self._task(key, seq, decl, ev, restored=restored)
            if collector is not None:     # main: a child's result events answer its call (addendum §1.1)
                collector.extend(dict(r.attributes) for r in self.run.last_results)
            reused = any(s.kind is StepKind.REUSE for s in self.run.steps[n_steps:])
            for out in outs:
                self._route(key, seq, out, queue, collector, reused=reused)

    def _route(self, key: str, seq: int, ev: AgentEvent, queue: TaskQueue,
               collector: list[dict[str, object]] | None, *, reused: bool = False) -> None:
        delegate_output = ev.type == SUBAGENT_EVENT and ev.attributes.get("delegateType") == OUTPUT_EVENT
        if delegate_output and collector is not None:
            collector.append(dict(ev.attributes.get("delegateAttributes") or {}))
            return
        if ev.type == OUTPUT_EVENT or delegate_output:
            self.run.outputs.append({"step": len(self.run.steps) - 1, "key": key, "seq": seq,
                                     "action": ev.upstream_action, "event_id": ev.id, "type": ev.type,
                                     "attributes": dict(ev.attributes), "reused": reused})
            return
        for decl in self.agent.listeners(ev):
            queue.append((decl, ev, False))

    def _next_task(self) -> int:
        self.run.task_ordinal += 1
        return self.run.task_ordinal

    def _task(self, key: str, seq: int, decl: ActionDecl | str, event: AgentEvent, *,
              restored: bool) -> list[AgentEvent]:
        from agent_inspect.store import Outcome, Task

        task_no = self._next_task()
        self.run.last_results = []
        name = action_name(decl)
        common: dict[str, Any] = dict(key=key, seq=seq, action=name, event_type=event.type, event_id=event.id,
                                      scope=event.scope, task=task_no)
        if not self.agent.has(name):
            # a restored in-flight task whose action the candidate agent does not have (stale logic, #1069)
            self._emit(StepKind.LOOKUP, **common, outcome=StepOutcome.NOT_DISPATCHED,
                       reason=f"action {name!r} is not in the candidate agent (stale logic of a restored task)",
                       detail={"restored": restored, "stale_logic": True})
            return []
        action = self.agent.decl(name)
        fp = event.fingerprint
        auuid = self.agent.action_uuid(name, self.keys.format, attempt=self.attempt)
        sk = self.keys.state_key(key, seq, fp, auuid)
        self.run.looked_up.add(sk)
        t = Task(business_key=key, seq=seq, state_key=sk, event_uuid=fp, action_uuid=auuid, event_id=event.id,
                 event_type=event.type, is_root=event.is_root, key_format=self.keys.format,
                 key_text=self.keys.key_text(key), action=name, round_input=self.run.round_input)
        common.update(fingerprint=fp, state_key=sk)
        policy = self.calls.policies.for_action(name)
        detail = {"restored": restored, "policy": policy.value, "stale_logic": False}
        core = TaskLookups(self.session, t, on_lookup=lambda d: self._looked_up(core, d, common, detail),
                           write=lambda entry: self._persist(t, entry.value, common, entry=entry))
        try:
            decision = core.get()
            record = self._read(decision.entry) if decision.entry is not None else None
            forced = policy is ActionPolicy.FORCE_RERUN and decision.outcome is not Outcome.RERUN
            if decision.outcome is Outcome.REUSE and not forced and record is not None:
                outs = self._reuse(t, action, event, record, common)
                if policy is ActionPolicy.DIFF:
                    self._shadow(t, action, event, record, common)
                return outs
            return self._execute(core, action, event, None if forced else record, common,
                                 served_from=record if forced else None)
        except TaskFailed as failed:   # a FAIL at any get ends the task and fails the job (§9.3)
            raise JobFailed(f"lookup of {name} at ({key}, {seq}) failed: {failed.decision.reason}") from None

    def _looked_up(self, core: TaskLookups, decision: LookupDecision, common: dict[str, Any],
                   detail: dict[str, Any]) -> None:
        """Steps for one ``get`` of the task: the first one's LOOKUP step (or any FAIL's), then the removals it
        caused, each naming that step."""
        from agent_inspect.store import Outcome

        t, name, task_no, stage = core.task, common["action"], common["task"], core.stage
        reason = self.run.causes.reason(decision.outcome.value, decision.reason, t.state_key, decision.events)
        failed = decision.outcome is Outcome.FAIL
        if stage == "first" or failed:
            outcome = StepOutcome(decision.outcome.value)
            if stage == "first" and not failed and self.calls.policies.for_action(name) is ActionPolicy.FORCE_RERUN \
                    and outcome is not StepOutcome.RERUN:
                reason = f"run again by the force-rerun policy (the rule decided {outcome}{f': {reason}' if reason else ''})"
                outcome = StepOutcome.RERUN
            self._emit(StepKind.LOOKUP, **common, outcome=outcome, reason=reason, rule_note=decision.reason,
                       detail={**detail, "rule_outcome": decision.outcome.value, "stage": stage})
        lookup_step = next((s.index for s in reversed(self.run.steps) if s.kind is StepKind.LOOKUP
                            and s.task == task_no), None)
        for ev in decision.events:
            self._cache_event_step(ev, during=_DURING[stage], task=task_no, action=name, caused_by=lookup_step)
        self.run.causes.removed(decision.events, f"the lookup of task {task_no} ({t.business_key}, seq {t.seq}, {name})")

    def _read(self, entry: Entry) -> RecordView:
        if entry.pos is None:
            view = self.run.overlay.get(entry.state_key)
            if view is None and entry.value is not None:
                view = entry.value if isinstance(entry.value, RecordView) else \
                    RecordView.from_state(entry.value, memory_decoder=self.memory_decoder)
            if view is None:
                raise ReplayError(f"no value for replay write {entry.state_key}; this is a bug, please report it")
            return view
        state = self.log.value(entry.pos) if self.log is not None else None
        if state is None:
            raise ReplayError(f"no logged value for {entry.state_key} at {entry.pos}; this is a bug, please report it")
        return RecordView.from_state(state, memory_decoder=self.memory_decoder)

    # ------------------------------------------------------------------------------ bodies

    def _reuse(self, t: Task, decl: ActionDecl, event: AgentEvent, record: RecordView,
               common: dict[str, Any]) -> list[AgentEvent]:
        stm, sensory = self.memory_of(t.business_key)
        for path, value in record.short_term:      # short-term first, then sensory (§9.3, §12)
            stm.set(path, value)
        for path, value in record.sensory:
            sensory.set(path, value)
        outs = [_rebind(o, event.id, decl.name) for o in record.outputs]
        if self.model.subagent_results and event.type == SUBAGENT_EVENT:
            # main: a reused child answers with its result events; its forwarded envelopes stay unsent
            self.run.last_results = [_rebind(r, event.id, decl.name) for r in record.results]
            outs = []
        elif self.model.no_rebootstrap and event.type != SUBAGENT_EVENT and decl.scope is None:
            outs = [o for o in outs if o.type != SUBAGENT_EVENT]   # a root caller's stored bootstrap
        paths = [p for p, _ in record.short_term] + [p for p, _ in record.sensory]
        self._emit(StepKind.REUSE, **common, outcome=StepOutcome.REUSE, reason="completed record: body skipped, "
                   "memory updates applied, outputs re-emitted",
                   change=f"memory set {paths}; outputs {[o.type for o in outs]}" if paths or outs else "nothing",
                   detail={"outputs": tuple(o.id for o in outs), "memory_paths": tuple(paths)})
        return outs

    def _execute(self, core: TaskLookups, decl: ActionDecl, event: AgentEvent, record: RecordView | None,
                 common: dict[str, Any], *, served_from: RecordView | None) -> list[AgentEvent]:
        t = core.task
        resume = record is not None and not record.completed
        kind = StepKind.RESUME if resume else StepKind.RERUN
        recorded = record.calls if record is not None and resume else ()
        if served_from is not None:
            # force-rerun, a what-if beyond §9.3: the cached record is overwritten as if nothing were cached
            core.write(self._entry(t, RecordView(task_event=event)))
            core.get("bind")
        elif record is None:
            core.start(lambda: self._entry(t, RecordView(task_event=event)))
        stm, sensory = self.memory_of(t.business_key)
        journal = LiveCallJournal(
            recorded,
            persist=lambda results: self._persist(t, RecordView(task_event=event, calls=results), common,
                                                  what=f"call results ({len(results)})"),
            report=lambda ce: self._call_step(kind, ce, common),
            run=self.calls.runner(served_from.calls if served_from is not None else ()),
            decode=self.calls.decoder(), call_matching=self.call_matching,
            java=decl.java)
        ctx = ReplayContext(self, key=t.business_key, seq=t.seq, action=decl.name, event=event, calls=journal,
                            short_term=stm, sensory=sensory, subcall=_subcall(event))
        self._emit(kind, **common, outcome=StepOutcome.RESUME if resume else StepOutcome.RERUN,
                   reason=(f"incomplete record with {len(recorded)} call result(s): body re-runs"
                           if resume else "no usable record: body runs from scratch"),
                   detail={"recorded_calls": len(recorded)})
        try:
            self.agent.run_action(decl.name, ctx)
        except ReplayError as exc:
            raise JobFailed(str(exc), exc) from None
        except Exception as exc:  # noqa: BLE001 - a failing body fails the simulated job, like upstream
            self._emit(kind, **common, outcome=StepOutcome.FAILED,
                       reason=f"body raised {type(exc).__name__}: {exc}")
            raise JobFailed(f"action {decl.name} at ({t.business_key}, {t.seq}) raised {exc!r}", exc) from None
        done = RecordView(task_event=event, short_term=tuple(ctx.short_term_updates),
                          sensory=tuple(ctx.sensory_updates), outputs=tuple(ctx.outputs), completed=True,
                          results=tuple(ctx.results))
        core.complete(self._entry(t, done))
        self.run.last_results = list(ctx.results)
        return list(ctx.outputs)

    def _shadow(self, t: Task, decl: ActionDecl, event: AgentEvent, record: RecordView,
                common: dict[str, Any]) -> None:
        """``diff`` policy: run the body on copies of memory, compare with the production record."""
        stm, sensory = self.memory_of(t.business_key)
        shadow_stm, shadow_sensory = Memory(stm.snapshot()), Memory(sensory.snapshot())
        journal = LiveCallJournal((), run=self.calls.runner(record.calls), decode=self.calls.decoder(), java=decl.java)
        ctx = ReplayContext(self, key=t.business_key, seq=t.seq, action=decl.name, event=event, calls=journal,
                            short_term=shadow_stm, sensory=shadow_sensory, subcall=_subcall(event))
        error = None
        try:
            self.agent.run_action(decl.name, ctx)
        except Exception as exc:  # noqa: BLE001 - a failing shadow run is a difference, not a job failure
            error = f"{type(exc).__name__}: {exc}"
        diffs = _compare(record, ctx, error)
        self._emit(StepKind.RERUN, **common, outcome=StepOutcome.DIFF_CHANGED if diffs else StepOutcome.DIFF_EQUAL,
                   reason="policy diff: body run on a copy of memory and compared with the production record",
                   change="; ".join(diffs) if diffs else "outputs and memory updates equal",
                   detail={"diff": tuple(diffs), "shadow": True})

    def _entry(self, t: Task, value: RecordView) -> Entry:
        from agent_inspect.store import Entry

        calls = value.calls
        return Entry(state_key=t.state_key, business_key=t.business_key, seq=t.seq, event_uuid=t.event_uuid,
                     action_uuid=t.action_uuid, key_format=t.key_format, key_text=t.key_text,
                     is_root=t.is_root, completed=value.completed, task_event_id=t.event_id,
                     task_event_type=t.event_type, output_event_ids=tuple(o.id or "" for o in value.outputs),
                     call_count=len(calls), calls_pending=sum(c.status == "PENDING" for c in calls),
                     calls_succeeded=sum(c.status == "SUCCEEDED" for c in calls),
                     calls_failed=sum(c.status == "FAILED" for c in calls),
                     pos=None, attempt=self.attempt, value=value)

    def _persist(self, t: Task, value: RecordView, common: dict[str, Any], *, entry: Entry | None = None,
                 what: str | None = None) -> None:
        """Write ``value`` (initial, call results or completed) to the session and the overlay, and report it."""
        extra = ""
        if value.completed:
            what = what or StepOutcome.COMPLETED
            paths = [p for p, _ in value.short_term] + [p for p, _ in value.sensory]
            extra = f"; memory set {paths}; outputs {[o.type for o in value.outputs]}"
        else:
            what = what or StepOutcome.INITIAL
        self.session.write(entry if entry is not None else self._entry(t, value))
        self.run.overlay[t.state_key] = value
        self.run.writes.append((t.state_key, t, value))
        self.run.write_steps.append(len(self.run.steps))
        self._emit(StepKind.PERSIST, **common, outcome=what, reason="written to the overlay (never to a source)",
                   change=f"put {t.state_key}{extra}", detail={"journal_index": len(self.run.writes) - 1})

    def _call_step(self, kind: StepKind, ce: CallEvent, common: dict[str, Any]) -> None:
        self._emit(kind, **common, outcome=ce.outcome, call_index=ce.index, function_id=ce.function_id,
                   reason=call_reason(ce), change=f"call results {ce.results_before} → {ce.results_after}",
                   detail={"args_digest": ce.args_digest, "status": ce.status, "recorded": ce.recorded})

    def subagent_runner(self, ctx: ReplayContext, scope: str, session_id: str, call_id: str,
                        event_type: str, attributes: Mapping[str, object]) -> Callable[[], list[dict[str, object]]]:
        """The durable call of a sub-agent call: the child round runs inline at the caller's key and seq."""
        def run() -> list[dict[str, object]]:
            boot = wrap_subagent(scope, session_id, call_id, event_type, attributes, event_id=self.run.ids.new(),
                                 upstream_event_id=ctx.event.id, upstream_action=ctx.action)
            collected: list[dict[str, object]] = []
            queue: TaskQueue = deque((d, boot, False) for d in self.agent.listeners(boot))
            self._dispatch(ctx.key, ctx.seq, queue, collector=collected)
            return collected

        run._agent_inspect_subagent = True  # type: ignore[attr-defined]
        return run


def action_name(decl: ActionDecl | str) -> str:
    return decl if isinstance(decl, str) else decl.name


def removed_text(removed: Sequence[Entry]) -> str:
    """What a cache operation removed, grouped by round, for a step's ``change``:
    ``removed 14: user-0001@2 ×3, @3 ×2, user-0002@2``."""
    if not removed:
        return "nothing removed"
    rounds = Counter((e.business_key, e.seq) for e in removed)
    parts, last = [], None
    for (key, seq), n in rounds.items():
        parts.append(f"{'' if key == last else key}@{seq}{f' ×{n}' if n > 1 else ''}")
        last = key
    more = " …" if len(parts) > _SHOWN_ROUNDS else ""
    return f"removed {len(removed)}: {', '.join(parts[:_SHOWN_ROUNDS])}{more}"


#: rounds named in a removal's ``change`` before it says "…"
_SHOWN_ROUNDS = 8
#: what each get of a task (:class:`~agent_inspect.recovery.TaskLookups` stages) is called in a removal's detail
_DURING = {"first": "lookup", "again": "get again before the initial write",
           "bind": "re-get after the initial write", "complete": "get at completion"}


def _subcall(event: AgentEvent) -> tuple[str, str, str] | None:
    if event.type != SUBAGENT_EVENT:
        return None
    a = event.attributes
    return (str(a.get("targetScope")), str(a.get("sessionId")), str(a.get("callId")))


def _rebind(ev: AgentEvent, upstream_id: str | None, action: str) -> AgentEvent:
    return AgentEvent(ev.type, ev.attributes, ev.id, ev.event_class, upstream_id, action)


def _compare(record: RecordView, ctx: ReplayContext, error: str | None) -> list[str]:
    diffs = []
    if error:
        diffs.append(f"body raised {error}")
    prod = [(o.type, dict(o.attributes)) for o in record.outputs]
    new = [(o.type, dict(o.attributes)) for o in ctx.outputs]
    if prod != new:
        diffs.append(f"outputs differ: production {prod} vs replay {new}")
    for label, old, cur in (("short-term", record.short_term, ctx.short_term_updates),
                            ("sensory", record.sensory, ctx.sensory_updates)):
        if [p for p, _ in old] != [p for p, _ in cur]:
            diffs.append(f"{label} memory paths differ: {[p for p, _ in old]} vs {[p for p, _ in cur]}")
    return diffs
