"""The classes a Flink Agents operator's ``actionTasks`` and ``pendingInputEvents`` hold, as Kryo's
``FieldSerializer`` writes them (upstream main @8ad3a32; the addendum's §6).

``FieldSerializer`` (Kryo 2.24 and 5 alike) writes every non-static, non-transient field of the class and its
superclasses, sorted by field name, with no names or lengths: so a class is read by knowing its fields. Each field
is one of:

- ``("boolean" | "int" | "long", )``: a primitive (``int``/``long`` as zig-zag varints);
- ``("final", cls)``: a field whose declared type is a final class (``String``, ``UUID``, ``Long``,
  ``ExecutionTraceContext``, ``Class[]``): no class is written, only a reference marker, then the value (a
  ``UUID`` by a serializer of its own, see :mod:`~agent_inspect.codec._kryo`);
- ``("object", generics)``: any other declared type: the value's class, then (unless a boxed primitive) a reference
  marker and the value. ``generics`` are the declared type arguments Kryo passes to a map or collection serializer
  (``Map<String, Object>``: ``("string", None)``, so keys are written without their class).

A class not listed here is never guessed at: the reader names it and stops.
"""

from __future__ import annotations

__all__ = ["LAYOUTS", "Field"]

Field = tuple[str, str, object]
"""(field name, kind, argument): see the module doc."""

_STRING_MAP = ("string", None)
_EVENT: tuple[Field, ...] = (
    ("attributes", "object", _STRING_MAP), ("id", "final", "java.util.UUID"),
    ("sourceTimestamp", "final", "long"), ("type", "final", "string"),
    ("upstreamActionName", "final", "string"), ("upstreamEventId", "final", "java.util.UUID"))
_TASK: tuple[Field, ...] = (
    ("action", "object", None), ("event", "object", None), ("executionStartedEventEmitted", "boolean", None),
    ("key", "object", None), ("observationId", "final", "string"),
    ("traceContext", "final", "org.apache.flink.agents.api.trace.ExecutionTraceContext"))
_API = "org.apache.flink.agents.api."
_EVENTS = ("Event", "InputEvent", "OutputEvent", *(f"event.{name}Event" for name in (
    "AgentRunBegin", "ChatRequest", "ChatResponse", "ContextRetrievalRequest", "ContextRetrievalResponse",
    "LongTermGet", "LongTermSearch", "LongTermUpdate", "SensoryRead", "SensoryWrite", "ShortTermRead",
    "ShortTermWrite", "ToolRequest", "ToolResponse")))

LAYOUTS: dict[str, tuple[Field, ...]] = {
    **{_API + name: _EVENT for name in _EVENTS},
    "org.apache.flink.agents.runtime.python.operator.PythonActionTask": _TASK,
    "org.apache.flink.agents.runtime.python.operator.PythonGeneratorActionTask": _TASK,
    "org.apache.flink.agents.runtime.operator.JavaActionTask": tuple(sorted(
        (*_TASK, ("executionStarted", "boolean", None)))),
    "org.apache.flink.agents.plan.actions.Action": (
        ("config", "object", _STRING_MAP), ("exec", "object", None), ("name", "final", "string"),
        ("triggerConditions", "object", ("string",))),
    "org.apache.flink.agents.plan.PythonFunction": (("module", "final", "string"), ("qualName", "final", "string")),
    "org.apache.flink.agents.plan.JavaFunction": (
        ("methodName", "final", "string"), ("parameterTypes", "final", "java.lang.Class[]"),
        ("qualName", "final", "string")),
    "org.apache.flink.agents.api.trace.ExecutionTraceContext": (
        ("agentName", "final", "string"), ("businessKey", "final", "string"),
        ("entityMetadata", "object", _STRING_MAP), ("entityName", "final", "string"),
        ("entityType", "final", "string"), ("executionId", "final", "string"), ("inputRunId", "final", "string"),
        ("parentExecutionId", "final", "string")),
}
