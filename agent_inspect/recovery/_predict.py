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

import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from agent_inspect._errors import RecoveryError
from agent_inspect._html import Code, HtmlPart, HtmlRepr, Strong, Table, Text
from agent_inspect.agents import (
    OUTPUT_EVENT,
    SUBAGENT_EVENT,
    ActionDecl,
    Agent,
    AgentEvent,
    SubagentIdAllocator,
)
from agent_inspect.codec import call_matcher, call_router
from agent_inspect.log import resolve_runtime
from agent_inspect.recovery._plan import KeyIdentity, ReplayPlan, agent_event, identity_from_log
from agent_inspect.recovery._rebuild import Markers, rebuild
from agent_inspect.store import (
    CacheEvent,
    Divergence,
    Entry,
    LookupDecision,
    Outcome,
    RecoverySession,
    RuntimeModel,
    Task,
    runtime_model,
)

if TYPE_CHECKING:
    from agent_inspect.log import ActionStateLog, RuntimeInfo
    from agent_inspect.recovery._reconstruct import Reconstruction

__all__ = ["predict", "Prediction", "simulate", "Simulation", "SymbolicCallJournal", "CallOutcome", "NOT_DISPATCHED",
           "reused_events"]

NOT_DISPATCHED = "NOT-DISPATCHED"
_OUTPUT_CLASS = "org.apache.flink.agents.api.OutputEvent"
_TASK_COLUMNS = ["key", "business_key", "seq", "input", "action", "event_id", "event_type", "fingerprint",
                 "outcome", "reason", "state_key", "entry_pos", "parent", "scope", "body_ran", "calls_executed",
                 "calls_replayed", "cache_ops"]


class _Crash(Exception):
    """A lookup FAILed: upstream the task throws and the job restarts in a loop."""


# -- durable calls (§9.4) ---------------------------------------------------------------------------

@dataclass(frozen=True)
class CallOutcome:
    """What one durable call did on replay: ``hit`` / ``reraise`` (served from the journal),
    ``execute`` (ran for real) or ``reconcile`` (a PENDING slot's reconciler ran)."""

    function_id: str
    args_digest: str
    outcome: str
    index: int
    truncated_to: int | None = None
    status: str | None = None


@dataclass
class _Slot:
    function_id: str
    args_digest: str
    status: str
    result_payload: str | None = None
    exception_payload: str | None = None


class SymbolicCallJournal:
    """Position-matched durable-call replay of one action execution (spec §9.4), modelled symbolically.

    It decides only *which* calls are served, executed or reconciled and tracks statuses: bodies get
    no values and recorded failures are not raised. It is the predictor's, independent of the
    executor's live journal (:class:`~agent_inspect.executor.LiveCallJournal`) so the two cross-check.

    ``call_matching`` (``codec.CALL_MATCHING``) compares a call with the slot at its position by
    functionId and argsDigest ("position", the default) or by functionId only ("function-id", #1016).

    ``recorded`` is the record's call results (any objects with ``function_id``, ``args_digest``,
    ``effective_status`` or ``status``, and the payloads). :meth:`call` returns a
    :class:`CallOutcome`; ``results`` is the journal as the next write would persist it.
    """

    def __init__(self, recorded: Sequence[Any] = (), *, call_matching: str = "position") -> None:
        self._same = call_matcher(call_matching)
        self.results: list[_Slot] = [
            _Slot(r.function_id, getattr(r, "args_digest", None) or "", _status(r), getattr(r, "result_payload", None),
                  getattr(r, "exception_payload", None)) for r in recorded]
        self.index = 0
        self.warnings: list[str] = []
        self.writes = 0
        self._reserved: set[int] = set()     # slots this execution reserved (a fresh call, not a re-submit)

    def call(self, function_id: str, args_digest: str, run: Callable[[], Any] | None = None, *,
             reconciler: Callable[[], Any] | None = None) -> CallOutcome:
        """Make one call; ``run``/``reconciler`` are invoked only when the spec says they run."""
        i = self.index
        self.index += 1
        slot = self.results[i] if i < len(self.results) else None
        same = slot is not None and self._same(slot.function_id, slot.args_digest, function_id, args_digest)
        if reconciler is None:
            if same and slot is not None:
                return CallOutcome(function_id, args_digest, "reraise" if slot.status == "FAILED" else "hit", i,
                                   status=slot.status)
            cut = self._truncate(i, slot, function_id, args_digest)
            status = _invoke(run)
            self.results.append(_Slot(function_id, args_digest, status))
            self.writes += 1
            return CallOutcome(function_id, args_digest, "execute", i, cut, status)
        if same and slot is not None and slot.status == "PENDING":
            slot.status = _invoke(reconciler)
            self.writes += 1
            return CallOutcome(function_id, args_digest, "reconcile", i, status=slot.status)
        if same and slot is not None:
            return CallOutcome(function_id, args_digest, "reraise" if slot.status == "FAILED" else "hit", i,
                               status=slot.status)
        cut = self._truncate(i, slot, function_id, args_digest)
        if cut is not None:
            self.writes += 1          # the reconcile path persists the truncated list at once
        new = _Slot(function_id, args_digest, "PENDING")
        self.results.append(new)
        self.writes += 1
        new.status = _invoke(run)
        self.writes += 1
        return CallOutcome(function_id, args_digest, "execute", i, cut, new.status)

    def subagent(self, function_id: str, run: Callable[[], Any] | None) -> CallOutcome:
        """An internal sub-agent call as post-0.4 main makes it (addendum §1.1): it reserves a PENDING
        caller slot first; a terminal slot replays (the child is not dispatched); a PENDING slot re-submits
        the call with the same ids (outcome ``resubmit``: the child is dispatched again and reconciles
        against its own record); no slot reserves one, runs and finalizes."""
        i = self.index
        cut = self.reserve([function_id])
        self.index += 1
        slot = self.results[i]
        if slot.status != "PENDING":
            return CallOutcome(function_id, "", "reraise" if slot.status == "FAILED" else "hit", i,
                               status=slot.status)
        slot.status = _invoke(run)
        self.writes += 1
        if i in self._reserved:
            return CallOutcome(function_id, "", "execute", i, cut, slot.status)
        return CallOutcome(function_id, "", "resubmit", i, status=slot.status)

    def reserve(self, function_ids: Sequence[str]) -> int | None:
        """Reserve PENDING caller slots for sub-agent calls about to be made from the current index on, in
        one write (``reservePendingBatch``): slots already there with the same identity stay; a mismatch
        cuts the journal there (§9.4). Returns the index cut at, if any."""
        cut = None
        added = False
        for k, fid in enumerate(function_ids):
            j = self.index + k
            slot = self.results[j] if j < len(self.results) else None
            if slot is not None and slot.function_id == fid and slot.args_digest == "":
                continue
            if slot is not None:
                cut = self._truncate(j, slot, fid, "") if cut is None else cut
                del self.results[j:]
            self.results.append(_Slot(fid, "", "PENDING"))
            self._reserved.add(j)
            added = True
        if added:
            self.writes += 1
        return cut

    def _truncate(self, i: int, slot: _Slot | None, function_id: str, args_digest: str) -> int | None:
        if slot is None:
            return None
        self.warnings.append(
            f"Non-deterministic call detected at index {i}: expected functionId={slot.function_id}, "
            f"argsDigest={slot.args_digest}, but got functionId={function_id}, argsDigest={args_digest}. "
            "Clearing subsequent results.")
        del self.results[i:]
        return i


def _status(r: Any) -> str:
    eff = getattr(r, "effective_status", None)
    if eff is not None:
        return str(eff)
    status = getattr(r, "status", None)
    if status is not None:
        return str(status)
    return "SUCCEEDED" if getattr(r, "exception_payload", None) is None else "FAILED"


def _invoke(fn: Callable[[], Any] | None) -> str:
    if fn is None:
        return "SUCCEEDED"
    try:
        fn()
    except _Crash:
        raise    # a lookup inside a sub-agent call failed: the job fails, not the call
    except Exception:  # a failed call is journaled as FAILED, which is what the body sees
        return "FAILED"
    return "SUCCEEDED"


# -- the result ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Prediction(HtmlRepr):
    """What a recovery would do, per task, under one rule.

    ``tasks``: one row per action task in dispatch order (``outcome`` REUSE / RESUME / RERUN / FAIL),
    followed by NOT-DISPATCHED rows for cached records of replayed rounds that no task looked up.
    ``events`` / ``divergences``: every cache removal (rebuild and replay) and why.
    ``ledger``: the re-execution ledger, one row per (key, kind, name) with a ``count`` and the ``router`` a
    model-routing call belongs to (``route:<r>``, ``chat:<r>:<candidate>``, ``judge:<r>`` → ``r``; else None): kind
    "body" (an action body that runs again), "call" (a durable call executed for real, by function
    id), "replayed" (a call served from the journal), "reconciler".
    ``crashed``: the replay hit a FAIL (the job would restart in a loop) and stopped there.
    """

    rule: str
    tasks: pd.DataFrame
    events: tuple[CacheEvent, ...]
    divergences: tuple[Divergence, ...]
    ledger: pd.DataFrame
    crashed: bool = False
    warnings: tuple[str, ...] = ()
    session: RecoverySession | None = field(default=None, repr=False, compare=False)
    #: which upstream runtime the log was read as, and why (:class:`agent_inspect.log.RuntimeInfo`)
    runtime: RuntimeInfo | None = field(default=None, repr=False, compare=False)
    #: per sub-agent call (``<sessionId>#<callId>``): the ids of the result events its caller got
    #: (a reused child's stored ones, or fresh ones of a rerun), or "journal" (a terminal slot replayed)
    subagent_results: Mapping[str, tuple[str, ...] | str] = field(default_factory=dict, compare=False)

    def outcomes(self, *, labels: Mapping[str, str] | None = None) -> list[str]:
        """Per-task outcomes in the spec's notation, e.g. ``["k:A.IA=REUSE", "k:A.WA#w1=REUSE"]``."""
        out = []
        for row in self.tasks.itertuples(index=False):
            eid = (labels or {}).get(row.event_id) if row.event_id else None
            out.append(f"{row.key}:{row.input}.{row.action}" + (f"#{eid}" if eid else "") + f"={row.outcome}")
        return out

    @property
    def evictions(self) -> pd.DataFrame:
        """Every cache removal, one row each: op, step (rebuild / lookup), key, seq, removed count and
        log positions (replay writes have none), reason, divergence id."""
        return pd.DataFrame(
            [{"op": e.op, "step": e.step, "business_key": e.business_key, "seq": e.seq, "removed": len(e.removed),
              "positions": e.positions, "reason": e.reason, "divergence_id": e.divergence_id} for e in self.events],
            columns=["op", "step", "business_key", "seq", "removed", "positions", "reason", "divergence_id"])

    def reruns(self) -> int:
        """Number of action bodies that would run again (RESUME + RERUN)."""
        return int(self.tasks["body_ran"].sum()) if len(self.tasks) else 0

    def calls_executed(self) -> Counter[str]:
        """Durable calls a recovery would execute again, by function id (all keys)."""
        rows = self.ledger[self.ledger["kind"] == "call"]
        return Counter({str(n): int(c) for n, c in rows.groupby("name", observed=True)["count"].sum().items()})

    def ledger_totals(self) -> pd.DataFrame:
        """The ledger summed over keys: one row per (kind, name), with its ``router``."""
        if self.ledger.empty:
            return self.ledger.drop(columns=["key"])
        return self.ledger.groupby(["kind", "name"], as_index=False, observed=True, dropna=False).agg(
            router=("router", "first"), count=("count", "sum"))

    def by_router(self) -> pd.DataFrame:
        """Model-routing calls grouped under their router: one row per (router, kind, name), summed over keys."""
        rows = self.ledger[self.ledger["router"].notna()] if "router" in self.ledger else self.ledger.iloc[:0]
        if rows.empty:
            return pd.DataFrame(columns=["router", "kind", "name", "count"])
        return rows.groupby(["router", "kind", "name"], as_index=False, observed=True, sort=True)["count"].sum()

    def _html_parts(self) -> Iterable[HtmlPart]:
        counts = self.tasks["outcome"].value_counts().to_dict() if len(self.tasks) else {}
        yield Text(Strong("Prediction"), " under rule ", Code(self.rule), ": ",
                   ", ".join(f"{k} {int(v)}" for k, v in counts.items()),
                   *((" — ", Strong("the job crashes (restart loop)")) if self.crashed else ()))
        cols = ["key", "seq", "input", "action", "outcome", "reason"]
        yield Table(self.tasks[cols], max_rows=50)
        yield Table(self.ledger_totals(), caption="ledger")


# -- the simulation -------------------------------------------------------------------------------------


class _Memory:
    """Per-key memory view; values are opaque (Kryo payloads stay undecoded)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def get(self, path: str, default: Any = None) -> Any:
        return self._data.get(path, default)

    def set(self, path: str, value: Any) -> None:
        self._data[path] = value


@dataclass
class _Call:
    scope: str
    session_id: str
    call_id: str


class _Context:
    """The :class:`~agent_inspect.agents.ActionContext` a body runs against during prediction."""

    def __init__(self, sim: Simulation, rnd: _Round, decl: ActionDecl, event: AgentEvent, journal: SymbolicCallJournal,
                 task_index: int, call: _Call | None) -> None:
        self._sim, self._round, self._decl, self._journal = sim, rnd, decl, journal
        self._task_index, self._call = task_index, call
        self.key, self.seq, self.action, self.event = rnd.key, rnd.seq, decl.name, event
        self.business_key = rnd.ident.business_key
        self.outputs: list[AgentEvent] = []
        #: a child's result events (post-0.4 main: ``subagentResultEvents``, never in ``outputs``)
        self.results: list[AgentEvent] = []
        self.executed = 0
        self.replayed = 0
        self._allocator: SubagentIdAllocator | None = None

    @property
    def short_term(self) -> _Memory:
        return _Memory(self._sim.short_term.setdefault(self.key, {}))

    def call_subagents(self, calls: Sequence[tuple[str, str, Mapping[str, Any], str, str]]) -> list[Any]:
        """A batch of sub-agent calls ``(scope, event type, attributes, session id, call id)``: under a
        runtime with ``pending_slots`` their PENDING caller slots are reserved in one write first."""
        if self._sim.model.pending_slots:
            self._journal.reserve([f"{session}#{call_id}" for _, _, _, session, call_id in calls])
        return [self.call_subagent(scope, etype, attrs, session_id=session, call_id=call_id)
                for scope, etype, attrs, session, call_id in calls]

    @property
    def sensory(self) -> _Memory:
        return _Memory(self._sim.sensory.setdefault(self.key, {}))

    def send_event(self, type: str, attributes: Mapping[str, Any] | None = None) -> None:
        attrs = dict(attributes or {})
        if self._call is not None and type == OUTPUT_EVENT and self._sim.model.subagent_results:
            # main: an output-typed event of a child is a result event, without lineage (addendum §1.1)
            self.results.append(AgentEvent(OUTPUT_EVENT, attrs, self._sim.new_id()))
            return
        if self._call is not None:
            # a child's sendEvent is re-wrapped for the same scope, session and call (§11.1 "forward")
            attrs = {"targetScope": self._call.scope, "sessionId": self._call.session_id,
                     "callId": self._call.call_id, "delegateType": type, "delegateAttributes": attrs}
            type = SUBAGENT_EVENT
        self.outputs.append(AgentEvent(type, attrs, self._sim.new_id(), upstream_event_id=self.event.id,
                                       upstream_action=self.action))

    def _durable(self, function_id: str, args_digest: str, run: Callable[[], Any] | None,
                 reconciler: Callable[[], Any] | None, *, subagent: bool = False) -> CallOutcome:
        if subagent and self._sim.model.pending_slots:
            outcome = self._journal.subagent(function_id, run)
        else:
            outcome = self._journal.call(function_id, args_digest, run, reconciler=reconciler)
        kind = {"execute": "call", "reconcile": "reconciler", "resubmit": "resubmit"}.get(outcome.outcome, "replayed")
        self._sim.ledger[(self._round.key, kind, function_id)] += 1
        if kind == "replayed":
            self.replayed += 1
        else:
            self.executed += 1
        return outcome

    def durable_execute(self, function_id: str, args_digest: str, call: Callable[[], Any]) -> Any:
        self._durable(function_id, args_digest, call, None)
        return None

    def durable_execute_reconcilable(self, function_id: str, args_digest: str, call: Callable[[], Any],
                                     reconciler: Callable[[], Any]) -> Any:
        self._durable(function_id, args_digest, call, reconciler)
        return None

    def call_subagent(self, scope: str, event_type: str, attributes: Mapping[str, Any], *,
                      session_id: str | None = None, call_id: str | None = None) -> Any:
        if session_id is None or call_id is None:
            if self._allocator is None:
                ident = self._round.ident
                self._allocator = SubagentIdAllocator(
                    key_text=ident.key_text or ident.business_key, seq=self.seq, action=self.action,
                    event_type=self.event.type, event_attributes=self.event.attributes)
            session_id, call_id = self._allocator.allocate(scope)
        collected: list[AgentEvent] = []

        def run() -> None:
            # the bootstrap is regenerated with a fresh id and identical attributes (§11.4 point 2)
            boot = AgentEvent(SUBAGENT_EVENT, {"targetScope": scope, "sessionId": session_id, "callId": call_id,
                                               "delegateType": event_type, "delegateAttributes": dict(attributes)},
                              self._sim.new_id(), upstream_event_id=self.event.id, upstream_action=self.action)
            collected.extend(self._sim.run_child(self._round, boot, self._task_index, _Call(scope, session_id, call_id)))

        fid = f"{session_id}#{call_id}"
        outcome = self._durable(fid, "", run, None, subagent=True)
        # what the caller got: the child's result events (ids), or its own journal when the call was not made
        self._sim.subagent_results[fid] = tuple(e.id or "" for e in collected) \
            if outcome.outcome in ("execute", "resubmit") else "journal"
        return [dict(e.attributes.get("delegateAttributes") or {}) if e.type == SUBAGENT_EVENT
                else dict(e.attributes) for e in collected]


@dataclass
class _Round:
    key: str
    seq: int
    ident: KeyIdentity
    input: str
    input_fingerprint: str | None = None    # of the input that started the round (None: restored tasks)


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
        decision = self._get(task, row)
        row.update(outcome=str(decision.outcome), reason=decision.reason,
                   entry_pos=decision.entry.pos if decision.entry is not None else None)
        if decision.outcome is Outcome.REUSE and decision.entry is not None:  # a REUSE always names its entry
            return (index, *self._reuse(decision.entry, event, decl, rnd))
        recorded: Sequence[Any] = ()
        if decision.outcome is Outcome.RERUN:
            if self._get(task, row).entry is None:
                self.session.write(self._entry(task, event, completed=False))
            self._get(task, row)
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
        self._get(task, row)
        self.session.write(self._entry(task, event, completed=True, outputs=ctx.outputs, results=ctx.results))
        return index, ctx.outputs, ctx.results

    def _get(self, task: Task, row: dict[str, Any]) -> LookupDecision:
        decision = self.session.lookup(task)
        row["cache_ops"].extend(decision.events)
        if decision.outcome is Outcome.FAIL:
            row.update(outcome=str(Outcome.FAIL), reason=decision.reason, entry_pos=None)
            raise _Crash
        return decision

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
        names: dict[str, str] = {}
        plan_key = {i.business_key: k for k, i in reversed(list(self._idents.items()))}
        rows = []
        for entry in sorted(self.session.store.entries_at(bk, seq), key=lambda e: (e.pos is None, e.pos or 0)):
            if entry.state_key in self.looked_up:
                continue
            if not names:
                names = self._action_names()
            rows.append({"key": plan_key.get(bk, bk), "business_key": bk, "seq": seq, "input": label,
                         "action": names.get(entry.action_uuid, entry.action_uuid[:8]),
                         "event_id": entry.task_event_id, "event_type": entry.task_event_type,
                         "fingerprint": entry.event_uuid, "outcome": NOT_DISPATCHED,
                         "reason": "cached record of a replayed round that no task looked up",
                         "state_key": entry.state_key, "entry_pos": entry.pos, "parent": None, "scope": None,
                         "body_ran": False, "calls_executed": 0, "calls_replayed": 0, "cache_ops": []})
        return rows

    def _action_names(self) -> dict[str, str]:
        names = {}
        for ident in {i.key_format for i in self._idents.values()}:
            for d in self.agent.actions:
                names[self.agent.action_uuid(d.name, ident, attempt=self.plan.attempt)] = d.name
                names.setdefault(self.agent.action_uuid(d.name, ident, attempt=0), d.name)
        return names


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
        return replace(agent_event(e), upstream_event_id=event.id, upstream_action=decl.name)

    if model.subagent_results and event.type == SUBAGENT_EVENT:
        return [], [rebound(e) for e in subagent_result_events(value)]
    outputs = [rebound(e) for e in value.output_events]
    if model.no_rebootstrap and event.type != SUBAGENT_EVENT and decl.scope is None:
        outputs = [o for o in outputs if o.type != SUBAGENT_EVENT]
    return outputs, []


def predict(log: ActionStateLog | Reconstruction | None, plan: ReplayPlan | None = None, agent: Agent | None = None,
            *, rule: Any = None, markers: Markers = None, session: RecoverySession | None = None,
            new_id: Callable[[], str] | None = None, expected_fingerprint: str | None = None,
            max_parallelism: int | None = None, runtime: str | RuntimeInfo = "auto",
            call_matching: str = "position", kafka_pending: str | None = None) -> Prediction:
    """Predict what a recovery does with ``log`` under ``rule`` (the static path, spec §15.6).

    ``log`` is an ``ActionStateLog`` or a :class:`~agent_inspect.recovery.Reconstruction`, whose
    log, rule and markers are then used. ``rule`` defaults to the rule ``runtime`` ships ("0.3", "0.4",
    "main"; default "auto", inferred from the log): the original rule for all three. ``markers`` select the
    rebuild window: None takes the whole loaded log, ``[]`` is a fresh start. ``plan`` defaults to
    :meth:`ReplayPlan.from_log` over the same window; ``agent`` to an :class:`~agent_inspect.agents.AsRecordedAgent` of the
    log (a rerun regenerates the recorded children with fresh ids). Pass ``session`` to continue
    from an already rebuilt store; ``new_id`` to make fresh event ids reproducible.
    ``call_matching`` ("position" or "function-id", the #1016 variant) is how replayed durable calls meet
    their recorded slots. K2 restore checks (spec §6.5): a window with a serializer fingerprint other than
    ``expected_fingerprint`` (default: the window's most common) or a key group outside
    ``[0, max_parallelism)`` (default: not checked) fails the restore, and every task FAILs.
    The runtime (given or inferred) also selects that runtime's recovery behaviours
    (:func:`agent_inspect.store.runtime_model`): from 0.4 on, checkpoint-time refresh rows bring the pending
    states of rounds in flight at the restored checkpoint back (RESUME with the recorded call results;
    ``kafka_pending`` picks the Kafka mechanism); on main, sub-agent calls reserve PENDING caller slots,
    a reused child replays its ``subagentResultEvents``, and a reused root caller sends no bootstrap.
    """
    if _is_reconstruction(log):
        recon = cast("Reconstruction", log)
        log = recon.log
        rule = recon.rule if rule is None else rule
        markers = recon.markers if markers is None else markers
        recorded_runtime = getattr(recon, "runtime", None)
        if runtime == "auto" and recorded_runtime is not None:
            runtime = recorded_runtime
    info = resolve_runtime(runtime, log)
    rule = info.default_rule if rule is None else rule
    if plan is None or agent is None or session is None:
        if log is None:
            raise RecoveryError("predict without a log needs plan, agent and a rebuilt session")
        source = cast("ActionStateLog", log)
        if plan is None:
            plan = ReplayPlan.from_log(source, markers=markers)
        if agent is None:
            from agent_inspect.agents import AsRecordedAgent

            agent = AsRecordedAgent(source)
        if session is None:
            from agent_inspect.recovery._refresh import refresh_positions

            session = rebuild(source, rule, markers, expected_fingerprint=expected_fingerprint,
                              max_parallelism=max_parallelism,
                              refresh=refresh_positions(source, info, kafka_pending=kafka_pending))
    sim = Simulation(log, plan, agent, session, new_id or (lambda: str(uuid.uuid4())), call_matching=call_matching,
                     runtime=runtime_model(info, kafka_pending=kafka_pending))
    crashed = sim.run()
    rows = sim.rows + ([] if crashed else sim.not_dispatched())
    tasks = pd.DataFrame(rows, columns=_TASK_COLUMNS)
    for col in ("seq", "entry_pos", "parent", "calls_executed", "calls_replayed"):
        tasks[col] = tasks[col].astype("Int64")
    tasks["body_ran"] = tasks["body_ran"].astype(bool)
    tasks["cache_ops"] = [tuple(ops) for ops in tasks["cache_ops"]]
    ledger = pd.DataFrame([{"key": k, "kind": kind, "name": name, "router": None if kind == "body" else call_router(name),
                            "count": n} for (k, kind, name), n in sim.ledger.items()],
                          columns=["key", "kind", "name", "router", "count"])
    ledger["count"] = ledger["count"].astype("int64")
    return Prediction(rule=getattr(session.rule, "name", str(rule)), tasks=tasks, events=tuple(session.events),
                      divergences=tuple(session.divergences), ledger=ledger, crashed=crashed,
                      warnings=tuple(sim.warnings), session=session, runtime=info,
                      subagent_results=dict(sim.subagent_results))


def _is_reconstruction(obj: Any) -> bool:
    return all(hasattr(obj, a) for a in ("log", "rule", "markers", "session", "divergences"))


def simulate(plan: ReplayPlan, agent: Agent, session: RecoverySession, *, log: Any = None,
             new_id: Callable[[], str] | None = None, call_matching: str = "position",
             runtime: Any = "0.3") -> Simulation:
    """Drive ``plan`` with ``agent`` through an already rebuilt ``session`` (which it changes) and return
    the :class:`Simulation` (``rows``, ``ledger``, ``crashed``). ``predict`` is this plus the rebuild and frames.
    ``runtime`` selects the upstream runtime's behaviours (:func:`agent_inspect.store.runtime_model`).
    """
    sim = Simulation(log, plan, agent, session, new_id or (lambda: str(uuid.uuid4())), call_matching=call_matching,
                     runtime=runtime)
    sim.crashed = sim.run()
    return sim
