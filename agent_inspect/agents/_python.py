"""Agents written as plain Python: actions declared with a decorator, bodies run against a context."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, overload

from agent_inspect._errors import ReplayError
from agent_inspect.agents._protocol import (
    SUBAGENT_EVENT,
    ActionContext,
    ActionDecl,
    AgentEvent,
    BaseAgent,
    finish_inline,
)

__all__ = ["PythonAgent"]

Body = Callable[[AgentEvent, ActionContext], Any]


class PythonAgent(BaseAgent):
    """An agent whose actions are Python functions ``body(event, ctx)``.

    Bodies must have side effects only through ``ctx`` (events, memory, durable calls): the replay
    executor re-runs them to step backwards. The action's K1 identity uses the function's module and
    qualname (override with ``module=``/``qualname=`` to match a production agent plan).

    For example::

        agent = ai.agents.PythonAgent()

        @agent.action("process_input", listens=["_input_event"])
        def process_input(event, ctx):
            answer = ctx.durable_execute("llm.ask", "", lambda: event.attributes["input"].upper())
            ctx.short_term.set("last.answer", answer)
            ctx.send_event("_output_event", {"output": answer})

        ex = ai.ReplayExecutor(agent=agent, plan={"inputs": [("user-1", "hello")]})
    ex.run(); ex.outputs, ex.memory["user-1"].short_term
    """

    def __init__(self, actions: Iterable[ActionDecl] = ()) -> None:
        super().__init__(tuple(actions))
        self._bodies: dict[str, Body] = {}

    @overload
    def action(self, name: str, *, listens: None = None, scope: str | None = None,
               module: str | None = None, qualname: str | None = None, java: bool = False) -> ActionDecl: ...

    @overload
    def action(self, name: str, *, listens: Iterable[str], scope: str | None = None,
               module: str | None = None, qualname: str | None = None,
               java: bool = False) -> Callable[[Body], Body]: ...

    def action(self, name: str, *, listens: Iterable[str] | None = None, scope: str | None = None,
               module: str | None = None, qualname: str | None = None,
               java: bool = False) -> ActionDecl | Callable[[Body], Body]:
        """Decorator declaring ``name`` as an action listening to the event types ``listens``.

        Without ``listens`` it returns the declared :class:`ActionDecl` of ``name`` (the base lookup).
        """
        if listens is None:
            return super().action(name)
        triggers = tuple(listens)
        if not triggers:
            raise ReplayError(f"action {name!r} listens to nothing; pass listens=[event types]")

        def register(body: Body) -> Body:
            decl = ActionDecl(name, triggers, module=module or body.__module__,
                              qualname=qualname or body.__qualname__, java=java, scope=scope)
            self.add(decl, body)
            return body

        return register

    def add(self, decl: ActionDecl, body: Body) -> None:
        """Declare one action with its body (what the decorator does)."""
        if decl.name in self._bodies:
            raise ReplayError(f"action {decl.name!r} is declared twice; give each action a unique name")
        self._bodies[decl.name] = body
        BaseAgent.__init__(self, (*self.actions, decl))

    def subagent(self, scope: str, child: PythonAgent) -> None:
        """Make ``child``'s actions reachable as sub-agent ``scope`` (routed by delegate type, §11).

        Actions the child already routes into its own sub-agents keep their scope, so nested calls
        reach the grandchild, not the child (scope names are resource names, unique in a plan).
        """
        for decl in child.actions:
            inner = ActionDecl(decl.name, decl.triggers, decl.module, decl.qualname, decl.java,
                               decl.scope or scope)
            self.add(inner, child._bodies[decl.name])

    def run_action(self, action: str, ctx: ActionContext) -> None:
        try:
            body = self._bodies[action]
        except KeyError:
            raise ReplayError(f"agent has no action {action!r}; declare it with @agent.action") from None
        event = ctx.event
        if event.type == SUBAGENT_EVENT:
            # bodies of a sub-agent see the delegate; the wrapper stays on ctx.event
            a = event.attributes
            event = AgentEvent(str(a.get("delegateType")), a.get("delegateAttributes") or {}, event.id,
                               None, event.upstream_event_id, event.upstream_action)
        finish_inline(body(event, ctx))
