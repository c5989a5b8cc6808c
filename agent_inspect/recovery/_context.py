"""The execution context a body runs against in the engine (``predict``'s bodies and the executor's alike)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from agent_inspect._errors import ReplayError
from agent_inspect.agents import OUTPUT_EVENT, SUBAGENT_EVENT, AgentEvent, SubagentIdAllocator
from agent_inspect.recovery._calls import CallJournal, python_args_digest, python_function_id
from agent_inspect.recovery._events import OUTPUT_EVENT_CLASS, wrap_subagent
from agent_inspect.recovery._memory import Memory

if TYPE_CHECKING:
    from agent_inspect.recovery._engine import Engine, TaskRun

__all__ = ["ReplayContext", "RecordingMemory"]


class _Deferred:
    """An awaitable that runs its call when awaited; a never-awaited call leaves no trace, as upstream."""

    def __init__(self, run: Callable[[], Any]) -> None:
        self._run = run

    def __await__(self):  # type: ignore[no-untyped-def]
        if False:  # pragma: no cover - makes this a generator
            yield
        return self._run()


class RecordingMemory:
    """A memory view for one body: reads and writes the key's memory and records every write.

    For example::

        updates = []
        memory = ai.recovery.engine.RecordingMemory(ai.executor.Memory({"tier": "gold"}), updates)
        memory.set("last.answer", "it shipped")
        memory.get("tier"), updates                     # every write is recorded for the record
    """

    def __init__(self, memory: Memory, updates: list[tuple[str, Any]]) -> None:
        self._memory = memory
        self._updates = updates

    def get(self, path: str, default: Any = None) -> Any:
        return self._memory.get(path, default)

    def set(self, path: str, value: Any) -> None:
        self._memory.set(path, value)
        self._updates.append((path, value))

    def new_object(self, path: str) -> None:
        self._memory.new_object(path)
        self._updates.append((path, None))

    def __contains__(self, path: str) -> bool:
        return path in self._memory


class ReplayContext:
    """What an action body may do: send events, use memory, make durable and sub-agent calls.

    ``durable_execute(fn, *args, **kwargs)`` identifies a Python callable as upstream does (``<module>.<qualname>``
    plus the cloudpickle args digest, §13.1); ``durable_execute(function_id, args_digest, call)`` takes an explicit
    identity (Java ids use ``""``).

    For example::

        agent = ai.agents.PythonAgent()

        @agent.action("answer", listens=["_input_event"])
        def answer(event, ctx):                          # ctx is the ReplayContext
            reply = ctx.durable_execute("llm.ask", "", lambda: "it shipped")
            ctx.short_term.set("last.answer", reply)
            ctx.send_event("_output_event", {"output": reply})

        ex = ai.ReplayExecutor(agent=agent, plan={"inputs": [("user-1", "where is my order")]})
        ex.run(); ex.outputs, ex.memory["user-1"].short_term
    """

    def __init__(self, engine: Engine, run: TaskRun, calls: CallJournal, *, short_term: Memory,
                 sensory: Memory) -> None:
        self.run = run
        self.key = self.business_key = run.key
        self.seq = run.seq
        self.action = run.action
        self.event = run.event
        self.calls = calls
        self.outputs: list[AgentEvent] = []
        #: a child's result events (main: ``subagentResultEvents``, never in ``outputs``; addendum §1.1)
        self.results: list[AgentEvent] = []
        self.short_term_updates: list[tuple[str, Any]] = []
        self.sensory_updates: list[tuple[str, Any]] = []
        self._stm = RecordingMemory(short_term, self.short_term_updates)
        self._sensory = RecordingMemory(sensory, self.sensory_updates)
        self._engine = engine
        self._subcall: tuple[str, str, str] | None = None
        if run.event.type == SUBAGENT_EVENT:   # only a wrapper's attributes are read (most are parsed on first read)
            a = run.event.attributes
            self._subcall = (str(a.get("targetScope")), str(a.get("sessionId")), str(a.get("callId")))
        self._allocator: Any = None

    @property
    def short_term(self) -> RecordingMemory:
        return self._stm

    @property
    def sensory(self) -> RecordingMemory:
        return self._sensory

    # -- events -------------------------------------------------------------------------------

    def send_event(self, type: str, attributes: Mapping[str, Any] | None = None) -> None:
        """Emit an event with a fresh id; inside a sub-agent call it is re-wrapped for the same call."""
        attrs = dict(attributes or {})
        new_id = self._engine.new_id()
        if self._subcall is not None and type == OUTPUT_EVENT and self._engine.model.subagent_results:
            self.results.append(AgentEvent.of(OUTPUT_EVENT, attrs, new_id, OUTPUT_EVENT_CLASS))   # no lineage (§1.1)
            return
        if self._subcall is not None and type != SUBAGENT_EVENT:
            scope, session, call = self._subcall
            ev = wrap_subagent(scope, session, call, type, attrs, event_id=new_id,
                               upstream_event_id=self.event.id, upstream_action=self.action)
        else:
            ev = AgentEvent.of(type, attrs, new_id, None, self.event.id, self.action)
        self.outputs.append(ev)

    # -- durable calls --------------------------------------------------------------------------

    def durable_execute(self, fn: Callable[..., Any] | str, *args: Any, **kwargs: Any) -> Any:
        """Run a durable call; a matching recorded result is replayed by position (§9.4)."""
        reconciler = kwargs.pop("reconciler", None)
        fid, digest, call = self._identity(fn, args, kwargs)
        return self.calls.call(fid, digest, call, reconciler=reconciler)

    def durable_execute_async(self, fn: Callable[..., Any] | str, *args: Any, **kwargs: Any) -> Any:
        """The awaitable variant: the call is made (and recorded) only when awaited (§9.4, §13.1)."""
        return _Deferred(lambda: self.durable_execute(fn, *args, **kwargs))

    def durable_execute_reconcilable(self, fn: Callable[..., Any] | str, *args: Any, **kwargs: Any) -> Any:
        """A reconcilable durable call (a PENDING slot with the same identity runs the reconciler):
        ``(function_id, args_digest, call, reconciler)`` or ``(fn, *args, reconciler=r, **kw)``."""
        if isinstance(fn, str):
            if len(args) != 3:
                raise ReplayError("durable_execute_reconcilable(function_id, args_digest, call, reconciler) "
                                  "takes exactly these four arguments")
            digest, call, reconciler = args
            return self.calls.call(fn, digest, call, reconciler=reconciler)
        reconciler = kwargs.pop("reconciler", None)
        if reconciler is None:
            raise ReplayError("durable_execute_reconcilable needs reconciler=<zero-argument callable>")
        return self.durable_execute(fn, *args, reconciler=reconciler, **kwargs)

    @staticmethod
    def _identity(fn: Any, args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> tuple[str, str, Callable[[], Any]]:
        if isinstance(fn, str):
            if len(args) != 2 or kwargs or not callable(args[1]):
                raise ReplayError("durable_execute(function_id, args_digest, call) takes an id, a digest "
                                  "and a zero-argument callable; or pass a Python callable and its args")
            return fn, str(args[0]), args[1]
        if not callable(fn):
            raise ReplayError(f"durable_execute needs a callable or a function id, got {type(fn).__name__}")
        return (python_function_id(fn), python_args_digest(args, kwargs),
                lambda: fn(*args, **kwargs))

    # -- sub-agents ---------------------------------------------------------------------------

    def call_subagent(self, scope: str, event_type: str, attributes: Mapping[str, Any] | None = None, *,
                      session_id: str | None = None, call_id: str | None = None) -> Any:
        """Call sub-agent ``scope`` (§11.3): a durable call ``<sessionId>#<callId>`` whose result is the
        list of the attributes of the child's delegate ``_output_event``s."""
        attrs = dict(attributes or {})
        if session_id is None or call_id is None:
            session_id, call_id = self._allocate_ids(scope)
        fid = f"{session_id}#{call_id}"
        self._engine.state.subagent_scopes[fid] = scope
        child = self._engine.subagent_runner(self, scope, session_id, call_id, event_type, attrs)
        got: list[tuple[str, ...]] = []

        def run() -> list[dict[str, object]]:
            events = child()
            got.append(tuple(e.id or "" for e in events))
            return [dict(e.attributes.get("delegateAttributes") or {}) if e.type == SUBAGENT_EVENT
                    else dict(e.attributes) for e in events]

        if self._engine.model.pending_slots:
            # main: a PENDING caller slot is reserved first; a PENDING slot re-submits the call (addendum §1.1)
            result = self.calls.subagent(fid, run)
        else:
            result = self.calls.call(fid, "", run, internal=True)
        # what the caller got: the child's result events, or its own journal when the call was not made
        self._engine.state.subagent_results[fid] = got[-1] if got else "journal"
        return result

    def call_subagents(self, calls: Sequence[tuple[str, str, Mapping[str, Any], str, str]]) -> list[Any]:
        """A batch of sub-agent calls ``(scope, event type, attributes, session id, call id)``: on main their
        PENDING caller slots are reserved in one write first (``reservePendingBatch``, addendum §1.1)."""
        if self._engine.model.pending_slots:
            self.calls.reserve([f"{session}#{call_id}" for _, _, _, session, call_id in calls])
        return [self.call_subagent(scope, etype, attrs, session_id=session, call_id=call_id)
                for scope, etype, attrs, session, call_id in calls]

    def _allocate_ids(self, scope: str) -> tuple[str, str]:
        if self._allocator is None:
            key_text = self._engine.keys.key_text(self.key) or self.key     # §11.2: the key's text
            self._allocator = SubagentIdAllocator(key_text=key_text, seq=self.seq, action=self.action,
                                                  event_type=self.event.type,
                                                  event_attributes=self.event.attributes)
        return cast("tuple[str, str]", self._allocator.allocate(scope))
