"""The agent a case file without ``[agent]`` implies: the actions its log shows, each doing again what its latest
line recorded (its calls, then its outputs)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent_inspect.agents import ActionDecl, Behaviour, Call, Emit, Step, SubagentCall
from agent_inspect.cases._notation import EventRef
from agent_inspect.cases._spec import CallSpec, LogLine

__all__ = ["agent_from_log"]


def agent_from_log(log: Sequence[LogLine]) -> tuple[tuple[ActionDecl, ...], dict[str, tuple[Behaviour, ...]]]:
    """Without ``[agent]``: actions as the log shows them, each re-doing what its latest line recorded."""
    triggers: dict[str, dict[str, None]] = {}
    scopes: dict[str, str | None] = {}
    steps: dict[tuple[str, str, str], tuple[EventRef, list[Step], list[Step]]] = {}
    boots = {(ln.event.attributes.get("sessionId"), ln.event.attributes.get("callId")): ln
             for ln in log if ln.event.delegate_type == "_input_event"}
    first_root: dict[tuple[str, int], tuple[str, str, str]] = {}
    for ln in log:
        if ln.status == "TOMB":
            continue
        ev = ln.event
        sub = ev.type == "InternalSubagentCallEvent"
        trigger = EventRef(ev.attributes["delegateType"], ev.attributes.get("delegateAttributes") or {}) if sub else ev
        triggers.setdefault(ln.action, {})[trigger.type] = None
        scopes.setdefault(ln.action, ev.attributes.get("targetScope") if sub else None)
        ident = (ln.action, trigger.type, repr(sorted(trigger.attributes.items())))
        if ev.type == "_input_event":
            first_root.setdefault((ln.key, ln.seq), ident)
        _, calls, emits = steps.get(ident, (trigger, [], []))
        if ln.calls:
            calls = [_recorded_call(c, boots) for c in ln.calls]
        if ln.status == "C":
            emits = [Emit(o.attributes["delegateType"], o.attributes.get("delegateAttributes") or {})
                     if o.type == "InternalSubagentCallEvent" else Emit(o.type, o.attributes) for o in ln.outputs]
            emits += [Emit(r.type, r.attributes) for r in ln.results]
        steps[ident] = (trigger, calls, emits)
    # a bootstrap that no recorded call explains belongs to its round's first root: that caller had not
    # recorded the call yet when the log ends (S01, S03)
    called = {c.function_id for ln in log for c in ln.calls}
    for (session, call_id), boot in boots.items():
        caller = first_root.get((boot.key, boot.seq))
        if f"{session}#{call_id}" in called or caller is None:
            continue
        trigger, calls, emits = steps[caller]
        steps[caller] = (trigger, [*calls, _subagent_step(boot.event, str(session), str(call_id))], emits)
    actions = tuple(ActionDecl(name=a, triggers=tuple(t), module="case_agent", qualname=f"CaseAgent.{a}",
                               scope=scopes[a]) for a, t in triggers.items())
    behaviours: dict[str, list[Behaviour]] = {}
    for (action, _, _), (trigger, calls, emits) in steps.items():
        behaviours.setdefault(action, []).append(Behaviour(tuple(calls + emits), trigger.type, trigger.attributes))
    return actions, {a: tuple(b) for a, b in behaviours.items()}


def _subagent_step(boot: EventRef, session: str, call_id: str) -> SubagentCall:
    a = boot.attributes
    return SubagentCall(str(a["targetScope"]), session, call_id, "_input_event", a.get("delegateAttributes") or {})


def _recorded_call(call: CallSpec, boots: Mapping[tuple[Any, Any], LogLine]) -> Step:
    session, sep, call_id = call.function_id.partition("#")
    boot = boots.get((session, call_id)) if sep else None
    if boot is not None:
        return _subagent_step(boot.event, session, call_id)
    return Call(call.function_id, call.args_digest)
