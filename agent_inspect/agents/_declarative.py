"""Declarative agents: the deterministic agents of the case files (docs/reference/cases.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_inspect.agents._protocol import SUBAGENT_EVENT, ActionContext, ActionDecl, AgentEvent, BaseAgent

__all__ = ["Emit", "Call", "SubagentCall", "SubagentBatch", "SetMemory", "Step", "Behaviour", "DeclarativeAgent",
           "DeclaredCallError"]


class DeclaredCallError(Exception):
    """Raised by a declared durable call that is declared to fail (``raises = "…"``)."""


@dataclass(frozen=True)
class Emit:
    """``send_event(type, attributes)``; a re-run emits the same attributes under a fresh id.

    For example::

        ai.agents.Emit("_output_event", {"output": "done"})   # a step: send_event(type, attributes)
    """

    type: str
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Call:
    """A durable call identified by ``function_id`` and ``args_digest`` (Java: always ``""``).

    For example::

        step = ai.agents.Call("tools.lookup_order", "ab12", result={"status": "shipped"})
        agent = ai.agents.DeclarativeAgent([ai.agents.ActionDecl("lookup", ("_input_event",))],
                                           {"lookup": [ai.agents.Behaviour((step,))]})
        ex = ai.ReplayExecutor(agent=agent, plan={"inputs": [("user-1", "order 7")]})
    ex.run(); ex.counters.calls_executed, ex.steps["kind"].tolist()
    """

    function_id: str
    args_digest: str = ""
    reconciler: str | None = None     # None: completion-only; "succeeds" | "raises": reconcilable
    result: Any = None
    raises: str | None = None
    catch: bool = False               # the body catches the call's failure and goes on (a try/except, a fallback)


@dataclass(frozen=True)
class SubagentCall:
    """A call into sub-agent ``scope`` with a bootstrap event of ``type``/``attributes`` and fixed ids.

    For example::

        call = ai.agents.SubagentCall("search", "4f2a9c-0", "4f2a9c-0-1", attributes={"query": "order 7"})
        call.scope, call.type
    """

    scope: str
    session_id: str
    call_id: str
    type: str = "_input_event"
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SubagentBatch:
    """Several sub-agent calls made together: post-0.4 main reserves their PENDING caller slots in one
    write (``reservePendingBatch``, addendum §1.1), then runs them in order.

    For example::

        batch = ai.agents.SubagentBatch((ai.agents.SubagentCall("search", "s-1", "s-1-1"),
                                         ai.agents.SubagentCall("search", "s-1", "s-1-2")))
        len(batch.calls)                               # one PENDING reservation for both (main)
    """

    calls: tuple[SubagentCall, ...]


@dataclass(frozen=True)
class SetMemory:
    """Write ``value`` at ``path`` into ``memory`` ("short_term" or "sensory").

    For example::

        ai.agents.SetMemory("user.tier", "gold"), ai.agents.SetMemory("seen", True, memory="sensory")
    """

    path: str
    value: Any
    memory: str = "short_term"


Step = Emit | Call | SubagentCall | SubagentBatch | SetMemory
"""One step of a :class:`Behaviour`: emit an event, make a durable or sub-agent call, or set memory."""


@dataclass(frozen=True)
class Behaviour:
    """What an action does for a trigger: ``trigger_type``/``trigger_attributes`` (None: any trigger).

    For example::

        chat = ai.agents.ActionDecl("chat", ("_input_event",))
        behaviour = ai.agents.Behaviour((ai.agents.Call("llm.ask", result="hi"), ai.agents.Emit("_output_event", {"o": 1})))
        agent = ai.agents.DeclarativeAgent([chat], {"chat": [behaviour]})
    """

    steps: tuple[Step, ...]
    trigger_type: str | None = None
    trigger_attributes: Mapping[str, Any] | None = None

    def matches(self, event: AgentEvent) -> bool:
        if self.trigger_type is None:
            return True
        if event.type == SUBAGENT_EVENT:
            etype, attrs = event.attributes.get("delegateType"), event.attributes.get("delegateAttributes") or {}
        else:
            etype, attrs = event.type, event.attributes
        return etype == self.trigger_type and (self.trigger_attributes is None
                                               or dict(attrs) == dict(self.trigger_attributes))


class DeclarativeAgent(BaseAgent):
    """An agent whose bodies are fixed step lists per trigger, so re-runs are deterministic.

    ``behaviours[action]`` is tried in order; the first matching :class:`Behaviour` runs. An action
    without a matching behaviour does nothing (emits nothing, calls nothing).

    For example::

        agent = ai.agents.DeclarativeAgent(
            [ai.agents.ActionDecl("triage", ("_input_event",)), ai.agents.ActionDecl("reply", ("Triaged",))],
            {"triage": [ai.agents.Behaviour((ai.agents.Emit("Triaged", {"topic": "orders"}),))],
             "reply": [ai.agents.Behaviour((ai.agents.SetMemory("last.topic", "orders"),
                                            ai.agents.Emit("_output_event", {"output": "done"})))]})
        ex = ai.ReplayExecutor(agent=agent, plan={"inputs": [("user-1", "where is my order")]})
        ex.run(); ex.outputs
    """

    calls_declared = True   # its calls are declarations (DeclaredCalls): predict makes them

    def __init__(self, actions: Sequence[ActionDecl],
                 behaviours: Mapping[str, Sequence[Behaviour]] | None = None, *,
                 begin: Sequence[tuple[AgentEvent, AgentEvent]] = ()) -> None:
        super().__init__(actions)
        self._behaviours = {k: tuple(v) for k, v in (behaviours or {}).items()}
        self._begin = tuple(begin)

    def begin_event(self, input_event: AgentEvent) -> AgentEvent | None:
        """The agent-run-begin event regenerated for ``input_event`` (``agent.begin`` in a case file)."""
        for trigger, event in self._begin:
            if trigger.type == input_event.type and dict(trigger.attributes) == dict(input_event.attributes):
                return event
        return None

    def behaviour(self, action: str, event: AgentEvent) -> Behaviour | None:
        """The behaviour ``action`` runs for ``event``, or None."""
        for b in self._behaviours.get(action, ()):
            if b.matches(event):
                return b
        return None

    def run_action(self, action: str, ctx: ActionContext) -> None:
        self.action(action)
        behaviour = self.behaviour(action, ctx.event)
        if behaviour is None:
            return
        for step in behaviour.steps:
            if isinstance(step, Emit):
                ctx.send_event(step.type, dict(step.attributes))
            elif isinstance(step, Call):
                fn = _declared_call(step)
                try:
                    if step.reconciler is None:
                        ctx.durable_execute(step.function_id, step.args_digest, fn)
                    else:
                        ctx.durable_execute_reconcilable(step.function_id, step.args_digest, fn,
                                                         _reconciler(step))
                except Exception:
                    if not step.catch:
                        raise
            elif isinstance(step, SubagentCall):
                ctx.call_subagent(step.scope, step.type, dict(step.attributes),
                                  session_id=step.session_id, call_id=step.call_id)
            elif isinstance(step, SubagentBatch):
                batch = getattr(ctx, "call_subagents", None)
                calls = [(c.scope, c.type, dict(c.attributes), c.session_id, c.call_id) for c in step.calls]
                if batch is not None:
                    batch(calls)
                else:   # a context without batches makes the calls one by one
                    for scope, etype, attrs, session, call_id in calls:
                        ctx.call_subagent(scope, etype, attrs, session_id=session, call_id=call_id)
            elif isinstance(step, SetMemory):
                view = ctx.sensory if step.memory == "sensory" else ctx.short_term
                view.set(step.path, step.value)


def _declared_call(step: Call) -> Callable[[], Any]:
    def call() -> Any:
        if step.raises:
            raise DeclaredCallError(f"{step.raises}: declared failure of {step.function_id}")
        return step.result
    return call


def _reconciler(step: Call) -> Callable[[], Any]:
    def reconcile() -> Any:
        if step.reconciler == "raises":
            raise DeclaredCallError(f"reconciler of {step.function_id} failed")
        return step.result
    return reconcile
