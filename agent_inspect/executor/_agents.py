"""One view over every agent kind the executor accepts (protocol agents, flink-agents agents)."""

from __future__ import annotations

from typing import Any, cast

from agent_inspect._errors import ReplayError
from agent_inspect.agents import ActionDecl, AgentEvent

__all__ = ["as_agent", "AgentView"]


class AgentView:
    """The executor's narrow use of an agent: routing, identity, bodies, and "has this action"."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self._decls = {d.name: d for d in agent.actions}

    def has(self, name: str) -> bool:
        return name in self._decls

    def decl(self, name: str) -> ActionDecl:
        return cast("ActionDecl", self._decls[name])

    def listeners(self, event: AgentEvent) -> list[ActionDecl]:
        return list(self.agent.listeners(event))

    def action_uuid(self, name: str, key_format: str, *, attempt: int) -> str:
        return str(self.agent.action_uuid(name, key_format, attempt=attempt))

    def run_action(self, name: str, ctx: Any) -> None:
        self.agent.run_action(name, ctx)

    def begin_event(self, event: AgentEvent) -> AgentEvent | None:
        """The ``_agent_run_begin_event`` the agent emits for input ``event`` (``agent-run.begin-event``)."""
        fn = getattr(self.agent, "begin_event", None)
        return fn(event) if fn is not None else None


def as_agent(agent: Any) -> AgentView:
    """Wrap ``agent``: anything with the :class:`agent_inspect.agents.Agent` protocol, or a
    ``flink_agents`` agent (adapted lazily; the package is never required)."""
    if isinstance(agent, AgentView):
        return agent
    if all(hasattr(agent, n) for n in ("actions", "listeners", "action_uuid", "run_action")):
        return AgentView(agent)
    from agent_inspect.agents import FlinkAgentAdapter, is_flink_agent

    if is_flink_agent(agent):
        return AgentView(FlinkAgentAdapter(agent))
    raise ReplayError(f"cannot replay with {type(agent).__name__}: pass an agent with actions/listeners/"
                      "action_uuid/run_action (e.g. agent_inspect.agents.PythonAgent)")
