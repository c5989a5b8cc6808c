"""A new user's debugger session: a breakpoint that could never stop says so; counts read in words."""

from __future__ import annotations

import pytest

import agent_inspect as ai
from agent_inspect.executor import Breakpoint


@pytest.fixture(scope="module")
def log() -> ai.ActionStateLog:
    return ai.load(ai.samples.path("production"))


def test_a_breakpoint_at_an_action_the_agent_lacks_is_refused(log: ai.ActionStateLog) -> None:
    """A typo in the action ran the whole replay without stopping; now it names the close action."""
    ex = ai.ReplayExecutor(log, markers=ai.samples.markers("production"))
    with pytest.raises(ai.ReplayError, match=r"'trige' is not an action of the agent.*did you mean 'triage'"):
        ex.add_breakpoint(action="trige")
    assert ex.breakpoints == [] and ex.current is None
    ex.breakpoints.append(Breakpoint(action="trige"))   # the list is the user's: run() checks it too
    with pytest.raises(ai.ReplayError, match="would never stop"):
        ex.run()
    ex.breakpoints.clear()
    ex.add_breakpoint(action="triage")
    stop = ex.run()
    assert stop is not None and stop.action == "triage"


def test_one_step_reads_as_one_step(log: ai.ActionStateLog) -> None:
    ex = ai.ReplayExecutor(log, markers=ai.samples.markers("production"))
    ex.step()
    assert "(1 step," in repr(ex) and "1 step," in ex._repr_html_() and "1 steps" not in ex._repr_html_()


def test_a_policy_for_an_action_the_agent_lacks_is_refused(log: ai.ActionStateLog) -> None:
    """policies={"actions": {"chatt": "force-rerun"}} changed nothing and said nothing; now it names 'chat'."""
    markers = ai.samples.markers("production")
    with pytest.raises(ai.ReplayError, match=r"'chatt'; did you mean 'chat'\?.*its actions: approve, audit, chat"):
        ai.ReplayExecutor(log, markers=markers, policies={"actions": {"chatt": "force-rerun"}})
    ex = ai.ReplayExecutor(log, markers=markers, policies={"actions": {"chat": "force-rerun"}})
    base = ai.ReplayExecutor(log, markers=markers)
    ex.run(), base.run()
    assert ex.counters.rerun > base.counters.rerun > 0
