"""The agent model shared by the static predictor and the replay executor.

An agent declares its actions (name, the event types they listen to, and what identifies them in a
state key) and runs an action body against an :class:`ActionContext`. Bodies have side effects only
through the context, so a replay is deterministic and can be repeated.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

__all__ = [
    "INPUT_EVENT",
    "OUTPUT_EVENT",
    "BEGIN_EVENT",
    "SUBAGENT_EVENT",
    "AgentEvent",
    "ActionDecl",
    "Agent",
    "ActionContext",
    "MemoryView",
    "BaseAgent",
    "action_uuid_for",
]

#: event UUIDs by the attributes' JSON bytes: a replay sends the same recorded attributes again under every rule
#: and in every rerun, so each distinct map is hashed once
_FINGERPRINTS: dict[bytes, str] = {}
_FINGERPRINTS_MAX = 1 << 16


def _fingerprint(attributes: Mapping[str, Any]) -> str:
    msgspec, event_uuid = _CODEC or _codec()
    attrs = dict(attributes)
    try:
        data = msgspec.json.encode(attrs)
        exact = msgspec.json.decode(data) == attrs   # plain JSON values only (no bytes, NaN, tuples, int keys)
    except (TypeError, msgspec.EncodeError):
        exact = False
    if not exact:
        return str(event_uuid(attrs))
    fp = _FINGERPRINTS.get(data)
    if fp is None:
        if len(_FINGERPRINTS) >= _FINGERPRINTS_MAX:
            _FINGERPRINTS.clear()
        fp = _FINGERPRINTS[data] = str(event_uuid(data))   # exact: the bytes parse back to attrs
    return fp


_T = TypeVar("_T")


class _ComputedOnce(Generic[_T]):
    """``functools.cached_property`` without its lock (Python 3.11 takes an RLock on every first read, a third of
    the cost of the engine's fingerprint of a sent event): the value lands in the instance dict, which later
    reads find before this descriptor."""

    def __init__(self, compute: Callable[[Any], _T]) -> None:
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    def __get__(self, instance: Any, owner: type | None = None) -> _T:
        if instance is None:
            return self  # type: ignore[return-value]
        value = instance.__dict__[self.name] = self.compute(instance)
        return value


if TYPE_CHECKING:
    from functools import cached_property as _computed_once
else:
    _computed_once = _ComputedOnce


_CODEC: list[Any] = []


def _codec() -> list[Any]:
    """msgspec and ``event_uuid``, imported on the first fingerprint and kept (importing them on every call cost
    0.5 µs); loading this module still imports no codec."""
    import msgspec

    from agent_inspect.codec import event_uuid

    _CODEC[:] = [msgspec, event_uuid]
    return _CODEC


INPUT_EVENT = "_input_event"
"""The type of an input event (what the source hands the agent)."""
OUTPUT_EVENT = "_output_event"
"""The type of an output event (what the agent sends downstream)."""
BEGIN_EVENT = "_agent_run_begin_event"
"""The type of the begin event a run sends first when ``agent-run.begin-event`` is on."""
SUBAGENT_EVENT = "InternalSubagentCallEvent"
"""The type of the wrapper event that carries a sub-agent call (its routing is in its attributes)."""


@dataclass(frozen=True, eq=True)
class AgentEvent:
    """One event as an agent sees it: routing ``type``, ``attributes`` (the identity) and the random ``id``.

    ``event_class`` is the Java ``@class`` (None: the generic ``Event``). For sub-agent wrappers
    (``type == "InternalSubagentCallEvent"``) the routing metadata sits in ``attributes``.

    For example::

        event = ai.agents.AgentEvent("_input_event", {"input": "where is my order"})
        event.fingerprint, event.is_root, event.with_id("evt-1").id
    """

    type: str
    attributes: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None
    event_class: str | None = None
    upstream_event_id: str | None = None
    upstream_action: str | None = None

    @property
    def is_root(self) -> bool:
        """Roots are recognised by ``type`` (spec §10.3), never by ``@class``."""
        return self.type == INPUT_EVENT

    @_computed_once
    def fingerprint(self) -> str:
        """The event UUID of the attributes (spec §4.3.1): the event segment of the state key (computed once
        per event: the engine and an as-recorded body both ask for it)."""
        return _fingerprint(self.attributes)

    @property
    def scope(self) -> str | None:
        """The sub-agent scope a wrapper routes into, else None."""
        if self.type == SUBAGENT_EVENT:
            return self.attributes.get("targetScope")
        return None

    @property
    def routing_type(self) -> str:
        """The type listeners are matched on: the delegate type for sub-agent wrappers."""
        if self.type == SUBAGENT_EVENT:
            return str(self.attributes.get("delegateType"))
        return self.type

    def with_id(self, event_id: str | None) -> AgentEvent:
        """The same event under another id (the same attributes, so the same fingerprint)."""
        return self._copy(event_id, self.upstream_event_id, self.upstream_action)

    def rebound(self, upstream_event_id: str | None, upstream_action: str | None) -> AgentEvent:
        """The same event (id, attributes, fingerprint) sent on behalf of another upstream event and action.

        For example::

            event = ai.agents.AgentEvent("_output_event", {"output": "hi"}, "evt-2")
            event.rebound("evt-1", "answer").upstream_action    # 'answer'; id and attributes unchanged
        """
        return self._copy(self.id, upstream_event_id, upstream_action)

    def _copy(self, event_id: str | None, upstream_event_id: str | None, upstream_action: str | None) -> AgentEvent:
        # the instance dict as it is: a fingerprint already known stays, attributes not yet parsed stay unparsed
        event = object.__new__(AgentEvent)
        fields = event.__dict__
        fields.update(self.__dict__)
        fields["id"] = event_id
        fields["upstream_event_id"] = upstream_event_id
        fields["upstream_action"] = upstream_action
        return event

    @classmethod
    def of(cls, type: str, attributes: Mapping[str, Any], id: str | None = None, event_class: str | None = None,
           upstream_event_id: str | None = None, upstream_action: str | None = None, *,
           fingerprint: str | None = None) -> AgentEvent:
        """The event with these fields, and its ``fingerprint`` when the caller already knows it (a replayed
        record's event keeps the one its stored bytes give).

        For example::

            ai.agents.AgentEvent.of("_input_event", {"input": "hi"}, "evt-1") == ai.agents.AgentEvent(
                "_input_event", {"input": "hi"}, "evt-1")
        """
        # the replay makes one per replayed event: filling the instance dict skips the frozen dataclass's six
        # object.__setattr__ calls (frozen guards assignment, not construction)
        event = object.__new__(cls)
        fields = event.__dict__
        fields["type"] = type
        fields["attributes"] = attributes
        fields["id"] = id
        fields["event_class"] = event_class
        fields["upstream_event_id"] = upstream_event_id
        fields["upstream_action"] = upstream_action
        if fingerprint is not None:
            fields["fingerprint"] = fingerprint   # the cached_property's slot
        return event

    @classmethod
    def stored(cls, type: str, parse: Callable[[], Mapping[str, Any]], id: str | None, event_class: str | None,
               upstream_event_id: str | None, upstream_action: str | None, fingerprint: str) -> AgentEvent:
        """:meth:`of` for an event read from a stored record: ``parse()`` gives its attribute map on the first read
        of ``attributes`` (a replay reads few of them), ``fingerprint`` is that of the stored bytes.

        For example::

            stored = ai.codec.Event.new("_input_event", {"input": "hi"}, id="evt-1")
            event = ai.agents.AgentEvent.stored(stored.type, stored.attrs, stored.id, None, None, None,
                                                ai.codec.event_uuid(stored.attributes))
            event.attributes, event == ai.agents.AgentEvent("_input_event", {"input": "hi"}, "evt-1")
        """
        event = object.__new__(cls)
        fields = event.__dict__
        fields["type"] = type
        fields["_parse_attributes"] = parse
        fields["id"] = id
        fields["event_class"] = event_class
        fields["upstream_event_id"] = upstream_event_id
        fields["upstream_action"] = upstream_action
        fields["fingerprint"] = fingerprint
        return event


class _ParsedOnRead:
    """``AgentEvent.attributes`` of an event made by :meth:`AgentEvent.stored`, parsed on the first read; every
    other event holds its attributes in its instance dict, which attribute reads find before this descriptor."""

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            raise AttributeError("attributes")
        fields = instance.__dict__
        parse = fields.get("_parse_attributes")
        if parse is None:
            raise AttributeError("attributes")
        value = fields["attributes"] = parse()
        return value


# after the dataclass is made: it removes a field's class attribute that has no plain default
AgentEvent.attributes = _ParsedOnRead()  # type: ignore[assignment]


@dataclass(frozen=True)
class ActionDecl:
    """One declared action.

    ``triggers`` are event types in declaration order (for actions of a sub-agent, the delegate
    types inside ``scope``). ``module``/``qualname`` feed the K1 hash-based action UUID of Python
    actions; ``java=True`` marks a Java action whose hash-based UUID changes with every JVM (§4.4).

    For example::

        decl = ai.agents.ActionDecl("chat", ("ChatRequest",), module="my_agent", qualname="ChatAgent.chat")
        ai.agents.action_uuid_for(decl, "K1.5"), ai.agents.action_uuid_for(decl, "K2")
    """

    name: str
    triggers: tuple[str, ...]
    module: str | None = None
    qualname: str | None = None
    java: bool = False
    scope: str | None = None


class MemoryView(Protocol):
    def get(self, path: str, default: Any = None) -> Any: ...
    def set(self, path: str, value: Any) -> None: ...


@runtime_checkable
class ActionContext(Protocol):
    """What a body may do. Everything observable goes through here.

    For example::

        def count_visits(event, ctx):                  # ctx: an ActionContext (the executor's ReplayContext)
            ctx.sensory.set("visits", 1)
            status = ctx.durable_execute(str.upper, event.attributes["input"])   # a Python callable
            ctx.send_event("_output_event", {"key": ctx.key, "seq": ctx.seq, "status": status})

        agent = ai.agents.PythonAgent()
        agent.add(ai.agents.ActionDecl("count_visits", ("_input_event",)), count_visits)
        ex = ai.ReplayExecutor(agent=agent, plan={"inputs": [("user-1", "shipped")]})
        ex.run(); ex.outputs                       # the event it sent, with the call's result
    """

    key: str
    seq: int
    action: str
    event: AgentEvent

    @property
    def short_term(self) -> MemoryView: ...
    @property
    def sensory(self) -> MemoryView: ...

    def send_event(self, type: str, attributes: Mapping[str, Any] | None = None) -> None:
        """Emit an event (fresh random id); inside a sub-agent it is re-wrapped for the same call."""

    def durable_execute(self, function_id: str, args_digest: str, call: Callable[[], Any]) -> Any:
        """A completion-only durable call (§9.4): a recorded result is replayed by position."""

    def durable_execute_reconcilable(self, function_id: str, args_digest: str,
                                     call: Callable[[], Any], reconciler: Callable[[], Any]) -> Any:
        """A reconcilable durable call: a PENDING slot with the same identity runs ``reconciler``."""

    def call_subagent(self, scope: str, event_type: str, attributes: Mapping[str, Any], *,
                      session_id: str | None = None, call_id: str | None = None) -> Any:
        """Call a sub-agent (§11.3): a durable call ``<sessionId>#<callId>`` whose result is the child outputs."""


@runtime_checkable
class Agent(Protocol):
    """The agent protocol: declared actions, routing, action identity and bodies.

    For example::

        agent = ai.agents.AsRecordedAgent(log)         # any Agent: actions, listeners, identity, bodies
        isinstance(agent, ai.agents.Agent), [a.name for a in agent.actions][:3]
    """

    @property
    def actions(self) -> Sequence[ActionDecl]: ...

    def listeners(self, event: AgentEvent) -> list[ActionDecl]:
        """The actions that handle ``event``, in declaration order."""

    def action_uuid(self, action: str, key_format: str, *, attempt: int = 0) -> str:
        """The action UUID segment of a state key for ``key_format`` (``attempt`` matters for Java K1/K1.5)."""

    def run_action(self, action: str, ctx: ActionContext) -> None:
        """Run the body of ``action`` on ``ctx.event``."""


@runtime_checkable
class DeclaredCalls(Protocol):
    """An agent whose durable calls are declarations: a declared result or failure, nothing outside the job. So
    ``predict`` makes them, as the executor does, and a declared failure reaches the body in both. ``predict`` never
    makes another agent's calls (a ``PythonAgent``'s model and tools): it counts them as made, and they succeed.

    For example::

        agent = ai.agents.AsRecordedAgent(log)      # its calls replay the record: declarations
        isinstance(agent, ai.agents.DeclaredCalls), agent.calls_declared
    """

    #: True: every durable call of this agent's bodies is a declaration
    calls_declared: bool


@runtime_checkable
class RoundBeginEvents(Protocol):
    """An agent that knows each round's own ``_agent_run_begin_event`` (``agent-run.begin-event``), not only the
    one an input's attributes give: a key that sends the same input twice starts two rounds with different begin
    events. The engine asks it with the round's business key and seq; other agents are asked ``begin_event``.

    For example::

        agent = ai.agents.AsRecordedAgent(log)      # read back from the log: every recorded round's begin event
        isinstance(agent, ai.agents.RoundBeginEvents)
    """

    def begin_event_of_round(self, input_event: AgentEvent, key: str, seq: int) -> AgentEvent | None:
        """The begin event of the round ``input_event`` starts as round ``seq`` of business key ``key``."""


def action_uuid_for(decl: ActionDecl, key_format: str, *, attempt: int = 0) -> str:
    """Action UUID of ``decl`` in ``key_format`` (spec §4.4).

    K2 uses the name. Earlier formats hash the action: Python actions from module, qualname and
    triggers (stable), Java actions from class identity, which we model as one UUID per attempt.

    For example::

        decl = ai.agents.ActionDecl("chat", ("ChatRequest",), module="my_agent", qualname="ChatAgent.chat")
        ai.agents.action_uuid_for(decl, "K2") == ai.codec.name_action_uuid("chat")
    """
    from agent_inspect import codec

    if key_format == "K2":
        return codec.name_action_uuid(decl.name)
    if decl.java:
        return codec.uuid3(f"java-action:{decl.name}:attempt-{attempt}".encode())
    module = decl.module or "agent"
    qualname = decl.qualname or f"Agent.{decl.name}"
    return codec.python_action_uuid(decl.name, module, qualname, list(decl.triggers))


class BaseAgent:
    """Routing and identity from a list of :class:`ActionDecl`; subclasses implement ``run_action``.

    For example::

        class Echo(ai.agents.BaseAgent):
            def run_action(self, action, ctx):      # the body of ``action`` on ctx.event
                ctx.send_event("_output_event", {"output": ctx.event.attributes["input"]})

        agent = Echo([ai.agents.ActionDecl("echo", ("_input_event",))])
        ex = ai.ReplayExecutor(agent=agent, plan={"inputs": [("user-1", "hi")]})
        ex.run(); ex.outputs
    """

    #: Whether bodies replay their memory updates. False for an agent whose bodies never write memory (the
    #: as-recorded agent): a ``diff`` policy then compares outputs only and says memory was not replayed.
    #: Agents without the attribute count as replaying memory.
    replays_memory: ClassVar[bool] = True

    def __init__(self, actions: Sequence[ActionDecl]) -> None:
        self._actions = tuple(actions)
        self._by_name = {a.name: a for a in self._actions}
        self._routes: dict[tuple[str | None, str], list[ActionDecl]] = {}
        for decl in self._actions:
            for trigger in decl.triggers:
                self._routes.setdefault((decl.scope, trigger), []).append(decl)

    @property
    def actions(self) -> Sequence[ActionDecl]:
        return self._actions

    def action(self, name: str) -> ActionDecl:
        try:
            return self._by_name[name]
        except KeyError:
            from agent_inspect._errors import ReplayError

            raise ReplayError(f"agent has no action {name!r}; declare it or fix the name") from None

    def listeners(self, event: AgentEvent) -> list[ActionDecl]:
        return list(self._routes.get((event.scope, event.routing_type), ()))

    def action_uuid(self, action: str, key_format: str, *, attempt: int = 0) -> str:
        return action_uuid_for(self.action(action), key_format, attempt=attempt)

    def begin_event(self, input_event: AgentEvent) -> AgentEvent | None:
        """The ``_agent_run_begin_event`` of the round ``input_event`` starts (None: the agent has none)."""
        return None

    def run_action(self, action: str, ctx: ActionContext) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


def finish_inline(result: Any) -> None:
    """Run an async action body to completion on the caller's thread.

    Durable awaitables complete at once in a replay (recorded, stubbed or executed inline), so a
    body's coroutine never has to wait for an event loop.
    """
    if inspect.iscoroutine(result):
        try:
            while True:
                result.send(None)
        except StopIteration:
            pass
