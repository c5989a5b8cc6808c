"""What an action body sees while the predictor runs it: memory, sub-agent calls, durable calls, the round."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_inspect.agents import (
    OUTPUT_EVENT,
    SUBAGENT_EVENT,
    ActionDecl,
    AgentEvent,
    SubagentIdAllocator,
)
from agent_inspect.recovery._plan import KeyIdentity

if TYPE_CHECKING:
    from agent_inspect.recovery._predict import Simulation

from agent_inspect.recovery._journal import CallOutcome, SymbolicCallJournal

__all__: list[str] = []  # the simulation's own parts


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
