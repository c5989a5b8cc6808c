"""The agent protocol and declarative agents."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

import agent_inspect.agents as agents
from agent_inspect import ReplayError
from agent_inspect.agents import (
    ActionContext,
    ActionDecl,
    Agent,
    AgentEvent,
    Behaviour,
    Call,
    DeclarativeAgent,
    Emit,
    SetMemory,
    SubagentCall,
    action_uuid_for,
)


def test_public_names():
    assert set(agents.__all__) >= {   # the executor adds its Python agent
        "Agent", "ActionDecl", "ActionContext", "AgentEvent", "MemoryView", "BaseAgent", "action_uuid_for",
        "INPUT_EVENT", "OUTPUT_EVENT", "BEGIN_EVENT", "SUBAGENT_EVENT", "DeclarativeAgent", "AsRecordedAgent",
        "Behaviour", "Emit", "Call", "SubagentCall", "SetMemory", "DeclaredCallError"}
    for name in agents.__all__:
        assert getattr(agents, name) is not None


def test_action_uuids_per_key_format():
    decl = ActionDecl("process_input", ("_input_event",), "my_agent", "MyAgent.process_input")
    # spec §4.4 test vectors
    assert action_uuid_for(decl, "K1") == "cd464c8a-2428-3f02-b0ac-787c88c69ef6"
    assert action_uuid_for(decl, "K1.5") == "cd464c8a-2428-3f02-b0ac-787c88c69ef6"
    assert action_uuid_for(decl, "K2") == "80908fa5-68c8-3df4-b9f1-b5765f3ee2c7"
    java = ActionDecl("process_input", ("_input_event",), java=True)
    assert action_uuid_for(java, "K1.5", attempt=1) == action_uuid_for(java, "K1.5", attempt=1)
    assert action_uuid_for(java, "K1.5", attempt=1) != action_uuid_for(java, "K1.5", attempt=2)
    assert action_uuid_for(java, "K2", attempt=1) == action_uuid_for(java, "K2", attempt=2)


def test_listeners_in_declaration_order_and_by_scope():
    agent = DeclarativeAgent([
        ActionDecl("IB", ("_input_event",)), ActionDecl("IA", ("_input_event", "Other")),
        ActionDecl("CA", ("_input_event",), scope="child"), ActionDecl("CB", ("CE",), scope="child"),
    ])
    assert isinstance(agent, Agent)
    assert [d.name for d in agent.listeners(AgentEvent("_input_event", {"input": "x"}))] == ["IB", "IA"]
    assert [d.name for d in agent.listeners(AgentEvent("Other"))] == ["IA"]
    sub = AgentEvent("InternalSubagentCallEvent", {"targetScope": "child", "sessionId": "s", "callId": "c",
                                                   "delegateType": "CE", "delegateAttributes": {}})
    assert [d.name for d in agent.listeners(sub)] == ["CB"]
    assert agent.listeners(AgentEvent("Nobody")) == []
    with pytest.raises(ReplayError, match="no action 'X'"):
        agent.action_uuid("X", "K2")


def test_event_identity():
    ev = AgentEvent("_input_event", {"input": "A"}, "id-1")
    assert ev.is_root and ev.fingerprint == "ef422f05-799e-3801-8be4-9277a0a90861"
    assert ev.with_id("id-2").fingerprint == ev.fingerprint and ev.with_id("id-2").id == "id-2"
    assert not AgentEvent("WorkEvent", {}, event_class="org.apache.flink.agents.api.InputEvent").is_root


@dataclass
class Recorder:
    """An ActionContext that records what a body asks for."""

    event: AgentEvent
    key: str = "k"
    seq: int = 5
    action: str = "A"
    log: list[tuple[Any, ...]] = field(default_factory=list)
    stm: dict[str, Any] = field(default_factory=dict)

    class _Mem:
        def __init__(self, data):
            self.data = data

        def get(self, path, default=None):
            return self.data.get(path, default)

        def set(self, path, value):
            self.data[path] = value

    @property
    def short_term(self):
        return self._Mem(self.stm)

    @property
    def sensory(self):
        return self._Mem({})

    def send_event(self, type, attributes=None):
        self.log.append(("emit", type, attributes))

    def durable_execute(self, function_id, args_digest, call):
        self.log.append(("call", function_id, args_digest, call()))

    def durable_execute_reconcilable(self, function_id, args_digest, call, reconciler):
        self.log.append(("reconcilable", function_id, args_digest, reconciler()))

    def call_subagent(self, scope, event_type, attributes, *, session_id=None, call_id=None):
        self.log.append(("subagent", scope, event_type, attributes, session_id, call_id))


def test_declarative_bodies_run_their_steps_in_order():
    agent = DeclarativeAgent(
        [ActionDecl("A", ("_input_event",))],
        {"A": [Behaviour((Emit("W", {"x": "a"}),), "_input_event", {"input": "A"}),
               Behaviour((Call("f", "d", result=7), Call("crm", "e", reconciler="succeeds", result="ok"),
                          SubagentCall("child", "s0", "s0-1"), SetMemory("user.tier", "gold")))]})
    specific = Recorder(AgentEvent("_input_event", {"input": "A"}))
    assert isinstance(specific, ActionContext)
    agent.run_action("A", specific)
    assert specific.log == [("emit", "W", {"x": "a"})]
    other = Recorder(AgentEvent("_input_event", {"input": "B"}))
    agent.run_action("A", other)
    assert other.log == [("call", "f", "d", 7), ("reconcilable", "crm", "e", "ok"),
                         ("subagent", "child", "_input_event", {}, "s0", "s0-1")]
    assert other.stm == {"user.tier": "gold"}


def test_declared_failures_raise():
    agent = DeclarativeAgent([ActionDecl("A", ("_input_event",))], {"A": [Behaviour((Call("f", raises="boom"),))]})
    with pytest.raises(agents.DeclaredCallError, match="boom"):
        agent.run_action("A", Recorder(AgentEvent("_input_event", {})))


def test_begin_events_per_input():
    begin = AgentEvent("_agent_run_begin_event", {"memory": "m0"})
    agent = DeclarativeAgent([ActionDecl("BA", ("_agent_run_begin_event",))],
                             begin=[(AgentEvent("_input_event", {"input": "A"}), begin)])
    assert agent.begin_event(AgentEvent("_input_event", {"input": "A"}, "x")) == begin
    assert agent.begin_event(AgentEvent("_input_event", {"input": "B"})) is None


def test_a_caught_declared_failure_lets_the_body_go_on():
    agent = DeclarativeAgent([ActionDecl("A", ("_input_event",))], {"A": [Behaviour((
        Call("chat:r:primary", raises="timeout", catch=True), Call("chat:r:fallback"), Emit("W", {"x": "a"})))]})
    ctx = Recorder(AgentEvent("_input_event", {}))
    agent.run_action("A", ctx)
    assert ("emit", "W", {"x": "a"}) in ctx.log
