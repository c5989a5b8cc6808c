"""Adapter for agents written with the ``flink-agents`` Python package (imported lazily, never required).

Actions are found where flink-agents declares them: methods marked by its ``@action`` decorator
(trigger names on ``_trigger_conditions`` in 0.4, ``_listen_events`` in 0.3; event classes in 0.1/0.2)
and actions added with ``Agent.add_action`` (the ``actions`` mapping). Bodies run as ``body(event, ctx)``
against a runner-context look-alike over the executor's context: ``send_event``, ``short_term_memory``,
``sensory_memory``, ``durable_execute(fn, *args, reconciler=None, **kwargs)`` and its async variant.

Limits: trigger conditions that are expressions (not plain event-type names) are not routed;
resources (chat models, tools, vector stores) are not resolved — a body that needs them should call
them through ``durable_execute`` so the replay's call policy serves them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

from agent_inspect._errors import ReplayError
from agent_inspect.agents._protocol import SUBAGENT_EVENT, ActionDecl, AgentEvent, BaseAgent, finish_inline

if TYPE_CHECKING:
    from agent_inspect.agents._protocol import ActionContext

__all__ = ["FlinkAgentAdapter", "is_flink_agent"]

_PLAIN_TYPE = re.compile(r"^[A-Za-z_][\w.$]*$")


def is_flink_agent(obj: object) -> bool:
    """True for instances of a ``flink_agents`` Agent subclass (checked without importing the package).

    For example::

        ai.agents.is_flink_agent(object())             # True only for a flink_agents Agent instance
    """
    return any((k.__module__ or "").startswith("flink_agents.") and k.__name__ == "Agent"
               for k in type(obj).__mro__)


class FlinkAgentAdapter(BaseAgent):
    """Presents a flink-agents ``Agent`` instance through the :class:`~agent_inspect.agents.Agent` protocol.

    For example::

        agent = ai.agents.AsRecordedAgent(log)
        ai.agents.is_flink_agent(agent)                # False: only flink_agents Agent instances are wrapped
        # ai.ReplayExecutor(log, agent=ai.agents.FlinkAgentAdapter(MyFlinkAgent()))   # with flink-agents installed
    """

    def __init__(self, agent: object) -> None:
        self.agent = agent
        self._bodies: dict[str, Callable[..., Any]] = {}
        decls: list[ActionDecl] = []
        for name, triggers, fn in _declared_actions(agent):
            if name in self._bodies:
                continue
            module = getattr(fn, "__module__", None) or "<unknown>"
            qualname = getattr(fn, "__qualname__", None) or name
            decls.append(ActionDecl(name, tuple(triggers), module=module, qualname=qualname))
            self._bodies[name] = fn
        if not decls:
            raise ReplayError(f"{type(agent).__name__} declares no actions; mark them with flink-agents @action")
        super().__init__(decls)

    def run_action(self, action: str, ctx: ActionContext) -> None:
        body = self._bodies.get(action)
        if body is None:
            raise ReplayError(f"agent has no action {action!r}")
        finish_inline(body(_to_flink_event(ctx.event), _RunnerContext(ctx)))


def _declared_actions(agent: Any) -> Iterable[tuple[str, list[str], Callable[..., Any]]]:
    for klass in reversed(type(agent).__mro__):
        for name, attr in vars(klass).items():
            fn = attr.__func__ if isinstance(attr, (staticmethod, classmethod)) else attr
            if not callable(fn):
                continue
            raw = getattr(fn, "_trigger_conditions", None) or getattr(fn, "_listen_events", None)
            if raw:
                yield name, _trigger_names(raw), fn
    added = getattr(agent, "actions", None)
    if isinstance(added, dict):
        for name, spec in added.items():
            triggers, func = spec[0], spec[1]
            yield str(name), _trigger_names(triggers), _callable_of(func)


def _trigger_names(raw: Iterable[Any]) -> list[str]:
    names = []
    for t in raw:
        if isinstance(t, str):
            if _PLAIN_TYPE.match(t):
                names.append(t)
        elif isinstance(t, type):       # 0.1/0.2: event classes
            names.append(getattr(t, "EVENT_TYPE", None) or f"{t.__module__}.{t.__qualname__}")
    return names


def _callable_of(func: Any) -> Callable[..., Any]:
    if callable(func) and not hasattr(func, "qualname"):
        return cast("Callable[..., Any]", func)
    for attr in ("func", "_func", "callable"):
        fn = getattr(func, attr, None)
        if callable(fn):
            return cast("Callable[..., Any]", fn)
    module, qualname = getattr(func, "module", None), getattr(func, "qualname", None)
    if module and qualname:
        import importlib

        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        return cast("Callable[..., Any]", obj)
    raise ReplayError(f"cannot run action function {func!r}; pass a Python callable")


def _to_flink_event(event: AgentEvent) -> Any:
    from flink_agents.api.events import event as fa_event

    etype, attrs = event.type, dict(event.attributes)
    if event.type == SUBAGENT_EVENT:
        etype, attrs = str(attrs.get("delegateType")), dict(attrs.get("delegateAttributes") or {})
    base = fa_event.Event(id=event.id, type=etype, attributes=attrs)
    for cls_name in ("InputEvent", "OutputEvent"):
        cls = getattr(fa_event, cls_name, None)
        if cls is not None and getattr(cls, "EVENT_TYPE", None) == etype and hasattr(cls, "from_event"):
            return cls.from_event(base)
    return base


def _from_flink_event(event: Any) -> tuple[str, dict[str, Any]]:
    etype = event.get_type() if hasattr(event, "get_type") else getattr(event, "type", None)
    attrs = getattr(event, "attributes", None)
    if not etype:
        raise ReplayError(f"cannot send {type(event).__name__}: the event has no type")
    return str(etype), dict(attrs or {})


class _Awaitable:
    def __init__(self, fn: Callable[[], Any]) -> None:
        self._fn = fn

    def __await__(self):  # type: ignore[no-untyped-def]
        if False:  # pragma: no cover - makes this a generator
            yield
        return self._fn()


class _RunnerContext:
    """The subset of flink-agents' RunnerContext a body uses, backed by the executor's context."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx

    def send_event(self, event: Any) -> None:
        self._ctx.send_event(*_from_flink_event(event))

    @property
    def short_term_memory(self) -> Any:
        return self._ctx.short_term

    @property
    def sensory_memory(self) -> Any:
        return self._ctx.sensory

    def durable_execute(self, func: Callable[..., Any], *args: Any, reconciler: Callable[[], Any] | None = None,
                        **kwargs: Any) -> Any:
        return self._ctx.durable_execute(func, *args, reconciler=reconciler, **kwargs)

    def durable_execute_async(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        # upstream records an async call only when it is awaited (§9.4), so run it then
        return _Awaitable(lambda: self.durable_execute(func, *args, **kwargs))

    def __getattr__(self, name: str) -> Any:
        raise ReplayError(f"RunnerContext.{name} is not available in a replay; "
                          "reach external resources through durable_execute")
