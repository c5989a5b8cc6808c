"""V4 ``subagentResultEvents`` (addendum §1.1), read the one way every layer above uses."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_inspect.codec import ActionState, Event

__all__ = ["subagent_result_events"]


def subagent_result_events(state: ActionState | None) -> tuple[Event, ...]:
    """A record's ``subagentResultEvents`` (V4, addendum §1.1) as ``codec.Event`` objects; () when absent.

    The one place that reads the property: the codec's own field when it has one, else the
    tolerant path (``ActionState.extra`` keeps unknown properties as parsed JSON).

    For example::

        v4 = ai.load(ai.samples.path("production_v4"))   # () unless a V4 record carries result events
        ai.history.subagent_result_events(v4.value(int(v4.records["subagent_result_count"].idxmax())))
    """
    if state is None:
        return ()
    own = getattr(state, "result_events", None)
    if own is not None:
        return tuple(own)
    items = (getattr(state, "extra", None) or {}).get("subagentResultEvents") or ()
    if not isinstance(items, (list, tuple)):
        return ()
    from agent_inspect import codec

    out = []
    for ev in items:
        if isinstance(ev, codec.Event):
            out.append(ev)
        elif isinstance(ev, dict):
            out.append(codec.Event.new(str(ev.get("type")), ev.get("attributes") or {}, id=ev.get("id"),
                                       event_class=ev.get("@class") or codec.GENERIC_EVENT))
    return tuple(out)
