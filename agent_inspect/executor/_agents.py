"""Every agent kind the executor accepts (protocol agents, flink-agents agents) as one :class:`Agent`."""

from __future__ import annotations

from typing import Any, cast

from agent_inspect._errors import ReplayError
from agent_inspect.agents import Agent, FlinkAgentAdapter, is_flink_agent

__all__ = ["as_agent"]


def as_agent(agent: Any) -> Agent:
    """``agent`` when it has the :class:`agent_inspect.agents.Agent` protocol, else a ``flink_agents`` agent
    adapted (lazily; the package is never required)."""
    if all(hasattr(agent, n) for n in ("actions", "listeners", "action_uuid", "run_action")):
        return cast("Agent", agent)
    if is_flink_agent(agent):
        return cast("Agent", FlinkAgentAdapter(agent))
    raise ReplayError(f"cannot replay with {type(agent).__name__}: pass an agent with actions/listeners/"
                      "action_uuid/run_action (e.g. agent_inspect.agents.PythonAgent)")
