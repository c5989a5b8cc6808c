"""The executor's driver of the one engine: each decision the engine makes becomes a :class:`Step`.

The engine runs inside a greenlet and this observer hands each step back to the debugger as it happens, so a replay
can pause between any two store decisions. Writes go to the run's overlay, never to a source. The executor's
what-ifs live here too: the force-rerun policy and the diff policy's shadow runs.
"""

from __future__ import annotations

import functools
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import greenlet

from agent_inspect._errors import ReplayError
from agent_inspect._glossary import first_few, plural
from agent_inspect.agents import Agent, AgentEvent
from agent_inspect.executor._options import ActionPolicy, CallServer, call_reason
from agent_inspect.executor._steps import MemoryState, RunState, Step, StepKind, StepOutcome
from agent_inspect.recovery import RemovalCauses, lookup_words, marker_warnings, removal_reason
from agent_inspect.recovery.engine import (
    CallEvent,
    CallJournal,
    CallSlot,
    IdSource,
    KeyMaker,
    Memory,
    Observer,
    PlanView,
    RecordView,
    ReplayContext,
    TaskRun,
)
from agent_inspect.recovery.engine import Engine as Core
from agent_inspect.store import Outcome

if TYPE_CHECKING:
    from agent_inspect.agents import ActionContext
    from agent_inspect.log import ActionStateLog
    from agent_inspect.recovery import Recovery, ReplayPlan
    from agent_inspect.store import CacheEvent, Entry, LookupDecision, RecoverySession

__all__ = ["Engine", "removed_text"]


class Engine(Observer):
    """Drives the one engine pass by pass for the debugger; one :class:`RunState` per pass (``log``: the read-only
    base, None for a fresh job)."""

    def __init__(self, *, log: ActionStateLog | None, agent: Agent, recovery: Recovery, plan: ReplayPlan,
                 keys: KeyMaker, calls: CallServer, attempt: int, seed: int,
                 memory_decoder: Callable[[Any], Any] | None, memory: Mapping[str, Mapping[str, Any]],
                 sensory: Mapping[str, Mapping[str, Any]], source_kind: str) -> None:
        self.recovery = recovery
        self.log, self.agent, self.keys, self.calls = log, agent, keys, calls
        self.plan = plan
        self.attempt, self.seed, self.memory_decoder = attempt, seed, memory_decoder
        self.memory, self.sensory = memory, sensory
        self.source_kind = source_kind
        self.base_session: RecoverySession | None = None
        self.restart()

    # ------------------------------------------------------------------------------ driving

    def restart(self) -> None:
        """A new pass from before the first step (the rebuild)."""
        self.run = RunState(ids=IdSource(hash((self.seed, self.attempt))))
        self.core: Core | None = None
        self.calls.restart()
        self._g = greenlet.greenlet(self._main)
        self.thread = threading.get_ident()

    def advance(self) -> Step | None:
        """Run until the next step; None when the engine has finished."""
        result = self._g.switch()
        if self._g.dead:
            self.run.finished = True
        return result if isinstance(result, Step) else None

    def rebuilt_session(self) -> RecoverySession:
        """The session the rebuild gives (made once, shared by every pass; reading it takes no step)."""
        if self.base_session is None:
            self.base_session = self.recovery.rebuild(self.log, source_kind=self.source_kind)
        return self.base_session

    def _main(self) -> None:
        plan = PlanView(self.plan, business_key=self.keys.business_key)   # seq counters belong to this pass
        self.core = Core(log=self.log, agent=self.agent, session=self.rebuilt_session().copy(), plan=plan,
                         keys=self.keys, model=self.recovery.model, attempt=self.attempt, new_id=self.run.ids.new,
                         observer=self, calls=self.calls, call_matching=self.recovery.call_matching,
                         memory_decoder=self.memory_decoder, memory=self.memory, sensory=self.sensory, state=self.run)
        self.core.run()

    @property
    def session(self) -> RecoverySession:
        """The recovery session as of the current step (only once the rebuild ran)."""
        if self.run.session is None:
            raise ReplayError("the replay has no session (the rebuild did not run); this is a bug, please report it")
        return self.run.session

    @functools.cached_property
    def known_keys(self) -> tuple[frozenset[str], tuple[str, ...]]:
        """The business keys a step can carry (the log's and the plan's) and the names they go by: what a
        breakpoint's key is checked against, and the pool of close matches."""
        plan = self.plan
        names = {str(k) for k in (*(i.key for i in plan.inputs), *(p.key for p in plan.pending),
                                  *plan.restored_seq, *plan.keys)}
        names |= {str(i.key_text) for i in plan.keys.values() if i.key_text is not None}
        if self.log is not None:
            names |= set(map(str, self.log.records["business_key"].dropna().unique()))
        return frozenset(names | {self.keys.business_key(k) for k in names}), tuple(sorted(names))

    def memory_states(self) -> dict[str, MemoryState]:
        # restored memory per business key as the core reads it (of two keys naming one business key, the last)
        stm_base = {self.keys.business_key(k): v for k, v in self.memory.items()}
        sensory_base = {self.keys.business_key(k): v for k, v in self.sensory.items()}
        out = {}
        for key in sorted(set(self.run.memory) | set(stm_base) | set(sensory_base)):
            if self.core is not None:
                stm, sensory = self.core.memory_of(key)
            else:
                stm, sensory = Memory(stm_base.get(key)), Memory(sensory_base.get(key))
            out[key] = MemoryState(stm.snapshot(), sensory.snapshot())
        return out

    def _emit(self, kind: StepKind, **fields: Any) -> Step:
        step = Step(len(self.run.steps), kind, **fields)
        self.run.steps.append(step)
        if greenlet.getcurrent() is self._g:
            self._g.parent.switch(step)
        return step

    # ------------------------------------------------------------------------------ what the engine reports

    def rebuilt(self, session: RecoverySession) -> None:
        rebuild_events = [e for e in session.events if e.step == "rebuild"]
        self.run.causes = RemovalCauses(rebuild_events)
        failed = session.restore_failure
        markers = self.recovery.markers
        said = "; ".join(marker_warnings(markers, self.log))   # e.g. markers naming none of the log's partitions
        self._emit(StepKind.REBUILD, outcome=StepOutcome.RESTORE_FAILED if failed else StepOutcome.REBUILT,
                   reason=(f"upstream fails this restore: {failed}" if failed else
                           f"{plural(len(markers or []), 'marker')}, rule {self.recovery.rule_label}"
                           + (f"; {said}" if said else "")),
                   change=f"{len(session.store)} entries cached",
                   detail={"entries": len(session.store), "cache_events": len(rebuild_events)})
        for ev in rebuild_events:
            if ev.op != "delete":
                self._cache_event_step(ev, during="rebuild")

    def dropped(self, run: TaskRun, reason: str, *, stale: bool) -> None:
        self._emit(StepKind.LOOKUP, **_common(run), outcome=StepOutcome.NOT_DISPATCHED, reason=reason,
                   detail={"restored": run.restored, "stale_logic": True} if stale else {"restored": True})

    def force_rerun(self, run: TaskRun) -> bool:
        return self.calls.policies.for_action(run.action) is ActionPolicy.FORCE_RERUN

    def looked_up(self, run: TaskRun, decision: LookupDecision, stage: str) -> None:
        """The first ``get``'s LOOKUP step (or any FAIL's), then the removals each ``get`` caused, naming that step."""
        t = run.task
        assert t is not None
        reason = self.run.causes.reason(decision.outcome.value, decision.reason, t.state_key, decision.events)
        failed = decision.outcome is Outcome.FAIL
        if stage == "first" or failed:
            policy = self.calls.policies.for_action(run.action)
            outcome = StepOutcome(decision.outcome.value)
            if stage == "first" and not failed and policy is ActionPolicy.FORCE_RERUN \
                    and outcome is not StepOutcome.RERUN:
                reason = f"run again by the force-rerun policy (the rule decided {outcome}{f': {reason}' if reason else ''})"
                outcome = StepOutcome.RERUN
            self._emit(StepKind.LOOKUP, **_common(run), outcome=outcome, reason=reason, rule_note=decision.reason,
                       detail={"restored": run.restored, "policy": policy.value, "stale_logic": False,
                               "rule_outcome": decision.outcome.value, "stage": stage})
        lookup_step = next((s.index for s in reversed(self.run.steps) if s.kind is StepKind.LOOKUP
                            and s.task == run.index), None)
        for ev in decision.events:
            self._cache_event_step(ev, during=_DURING[stage], task=run.index, action=run.action,
                                   caused_by=lookup_step)
        self.run.causes.removed(decision.events, lookup_words(run.action, t.business_key, t.seq))

    def reused(self, run: TaskRun, record: RecordView, outputs: Sequence[AgentEvent]) -> None:
        paths = _memory_paths(record)
        self._emit(StepKind.REUSE, **_common(run), outcome=StepOutcome.REUSE, reason="completed record: body skipped, "
                   "memory updates applied, outputs re-emitted",
                   change=f"memory set {paths}; outputs {[o.type for o in outputs]}" if paths or outputs else "nothing",
                   detail={"outputs": tuple(o.id for o in outputs), "memory_paths": tuple(paths)})
        if self.calls.policies.for_action(run.action) is ActionPolicy.DIFF:
            self._shadow(run, record)

    def executing(self, run: TaskRun, *, resume: bool, recorded: int) -> None:
        self.run.body_kind[run.index] = StepKind.RESUME if resume else StepKind.RERUN
        self._emit(self.run.body_kind[run.index], **_common(run), outcome=StepOutcome.RESUME if resume else StepOutcome.RERUN,
                   reason=(f"incomplete record with {plural(recorded, 'call result')}: body re-runs"
                           if resume else "no usable record: body runs from scratch"),
                   detail={"recorded_calls": recorded})

    def called(self, run: TaskRun, event: CallEvent) -> None:
        subagent = self.core.state.subagent_scopes.get(event.function_id) if self.core is not None else None
        self._emit(self.run.body_kind[run.index], **_common(run), outcome=event.outcome, call_index=event.index,
                   function_id=event.function_id, reason=call_reason(event),
                   change=f"call results {event.results_before} → {event.results_after}",
                   detail={"args_digest": event.args_digest, "status": event.status, "recorded": event.recorded,
                           "subagent": subagent})

    def wrote(self, run: TaskRun, entry: Entry, value: RecordView, what: str) -> None:
        """A write to the session is also kept in the overlay (never a source) and journaled."""
        extra = f"; memory set {_memory_paths(value)}; outputs {[o.type for o in value.outputs]}" if value.completed \
            else ""
        outcome = {"initial": StepOutcome.INITIAL, "completed": StepOutcome.COMPLETED}.get(what, what)
        self.run.overlay[entry.state_key] = value
        self.run.writes.append((entry.state_key, run.task, value))
        self.run.write_steps.append(len(self.run.steps))
        self._emit(StepKind.PERSIST, **_common(run), outcome=outcome, reason="written to the overlay (never to a source)",
                   change=f"put {entry.state_key}{extra}", detail={"journal_index": len(self.run.writes) - 1})

    def body_failed(self, run: TaskRun, error: BaseException) -> None:
        self._emit(self.run.body_kind.get(run.index, StepKind.RERUN), **_common(run), outcome=StepOutcome.FAILED,
                   reason=f"body raised {type(error).__name__}: {error}")

    def emitted(self, run: TaskRun, event: AgentEvent, *, reused: bool) -> None:
        self.run.outputs.append({"step": len(self.run.steps) - 1, "key": run.key, "seq": run.seq,
                                 "action": event.upstream_action, "event_id": event.id, "type": event.type,
                                 "attributes": dict(event.attributes), "reused": reused})

    def round_complete(self, key: str, seq: int, input_event: AgentEvent | None, cleared: int) -> None:
        self._emit(StepKind.ROUND_COMPLETE, key=key, seq=seq, outcome=StepOutcome.COMPLETE,
                   event_type=input_event.type if input_event else None,
                   event_id=input_event.id if input_event else None,
                   reason="task queue empty", change=f"sensory memory cleared ({plural(cleared, 'path')})")

    def not_dispatched(self, key: str, seq: int, label: str, entry: Entry) -> None:
        """One step per cached record of a replayed round that no task looked up (as ``predict``)."""
        assert self.core is not None   # the engine reports it from inside its run
        names = self.core.action_names()
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

    def _shadow(self, run: TaskRun, record: RecordView) -> None:
        """``diff`` policy: run the body on copies of memory, compare with the production record."""
        assert self.core is not None and run.decl is not None
        stm, sensory = self.core.memory_of(run.key)
        decode = self.calls.decoder()
        journal = CallJournal((), run=self.calls.runner(record.calls), decode=decode, java=run.decl.java)
        ctx = _ShadowContext(self.core, run, journal, short_term=Memory(stm.snapshot()),
                             sensory=Memory(sensory.snapshot()), recorded=record.calls, decode=decode)
        error = None
        try:
            self.agent.run_action(run.action, cast("ActionContext", ctx))   # it takes both call forms
        except _ResultNotRecorded:
            pass                                                           # not compared: ctx.not_called says why
        except Exception as exc:  # noqa: BLE001 - a failing shadow run is a difference, not a job failure
            error = f"{type(exc).__name__}: {exc}"
        if ctx.not_called:
            self._emit(StepKind.RERUN, **_common(run), outcome=StepOutcome.DIFF_UNAVAILABLE,
                       reason="policy diff: body run on a copy of memory, not compared with the production record",
                       change=f"not compared: the body called sub-agent {', '.join(ctx.not_called)}, whose result the "
                              "record does not hold, and a shadow run dispatches no child task; the body stopped there",
                       detail={"diff": (), "shadow": True, "memory_not_replayed": (),
                               "subagents_not_called": tuple(ctx.not_called)})
            return
        # an agent whose bodies write no memory (the as-recorded agent) cannot produce the record's memory updates:
        # comparing them would report every record that set memory as changed
        memory = bool(getattr(self.agent, "replays_memory", True))
        diffs = _compare(record, ctx, error, memory=memory)
        unreplayed = () if memory else tuple(_memory_paths(record))
        equal = "outputs and memory updates equal" if not unreplayed else "outputs equal"
        note = (f"; memory not replayed: the agent ({type(self.agent).__name__}) writes no memory, the record "
                f"sets {list(unreplayed)}" if unreplayed else "")
        self._emit(StepKind.RERUN, **_common(run), outcome=StepOutcome.DIFF_CHANGED if diffs else StepOutcome.DIFF_EQUAL,
                   reason="policy diff: body run on a copy of memory and compared with the production record",
                   change=("; ".join(diffs) if diffs else equal) + note,
                   detail={"diff": tuple(diffs), "shadow": True, "memory_not_replayed": unreplayed,
                           "subagents_not_called": ()})


class _ResultNotRecorded(ReplayError):
    """A shadow run's sub-agent call whose result the record does not hold: the body cannot go on as it did."""


class _ShadowContext(ReplayContext):
    """The context of a ``diff`` shadow run, which changes nothing: a sub-agent call gets the production record's
    result instead of dispatching the child's round; without one it is named in ``not_called`` and stops the body
    (a made-up result would make up the differences too)."""

    def __init__(self, engine: Core, run: TaskRun, calls: CallJournal, *, short_term: Memory, sensory: Memory,
                 recorded: Sequence[CallSlot], decode: Callable[[CallSlot], Any]) -> None:
        super().__init__(engine, run, calls, short_term=short_term, sensory=sensory)
        self._recorded = {slot.function_id: slot for slot in recorded}
        self._decode = decode
        self.not_called: list[str] = []

    def call_subagent(self, scope: str, event_type: str, attributes: Mapping[str, Any] | None = None, *,
                      session_id: str | None = None, call_id: str | None = None) -> Any:
        if session_id is None or call_id is None:
            session_id, call_id = self._allocate_ids(scope)
        slot = self._recorded.get(f"{session_id}#{call_id}")
        if slot is None or slot.status == "PENDING":
            self.not_called.append(scope)
            raise _ResultNotRecorded(f"sub-agent {scope}'s result is not recorded")
        value = self._decode(slot)
        if slot.status == "FAILED":
            raise value
        return value


def _common(run: TaskRun) -> dict[str, Any]:
    t = run.task
    fields: dict[str, Any] = dict(key=run.key, seq=run.seq, action=run.action, event_type=run.event.type,
                                  event_id=run.event.id, scope=run.event.scope, task=run.index)
    if t is not None:
        fields.update(fingerprint=t.event_uuid, state_key=t.state_key)
    return fields


def _memory_paths(record: RecordView) -> list[str]:
    return [p for p, _ in record.short_term] + [p for p, _ in record.sensory]


def removed_text(removed: Sequence[Entry]) -> str:
    """What a cache operation removed, grouped by round, for a step's ``change``:
    ``removed 14: user-0001@2 ×3, @3 ×2, user-0002@2``."""
    if not removed:
        return "nothing removed"
    rounds = Counter((e.business_key, e.seq) for e in removed)
    parts, last = [], None
    for (key, seq), n in rounds.items():
        parts.append(f"{'' if key == last else key}@{seq}{f' ×{n:,}' if n > 1 else ''}")
        last = key
    return f"removed {len(removed):,}: {first_few(parts, _SHOWN_ROUNDS, counted=False)}"   # the total is counted


#: rounds named in a removal's ``change`` before it says "…"
_SHOWN_ROUNDS = 8
#: what each get of a task (:class:`~agent_inspect.recovery.TaskLookups` stages) is called in a removal's detail
_DURING = {"first": "lookup", "again": "get again before the initial write",
           "bind": "re-get after the initial write", "complete": "get at completion"}


def _compare(record: RecordView, ctx: ReplayContext, error: str | None, *, memory: bool = True) -> list[str]:
    """The differences of a shadow run from the production record (memory updates only when ``memory``)."""
    diffs = []
    if error:
        diffs.append(f"body raised {error}")
    prod = [(o.type, dict(o.attributes)) for o in record.outputs]
    new = [(o.type, dict(o.attributes)) for o in ctx.outputs]
    if prod != new:
        diffs.append(f"outputs differ: production {prod} vs replay {new}")
    for label, old, cur in (("short-term", record.short_term, ctx.short_term_updates),
                            ("sensory", record.sensory, ctx.sensory_updates)) if memory else ():
        if [p for p, _ in old] != [p for p, _ in cur]:
            diffs.append(f"{label} memory paths differ: {[p for p, _ in old]} vs {[p for p, _ in cur]}")
    return diffs
