"""What a post-0.4 writer (V4 values) makes of a generated journal (addendum §1.1).

The executor writes V4 records (``"subagentResultEvents":[]`` in every one) but returns a sub-agent
child's output-typed events to the caller as forwarded envelopes in ``outputEvents`` (the V3+ model);
upstream's ``sendEventInSubagentScope`` never puts them there: they go to the scope, and the child's
completion write carries them in ``subagentResultEvents`` as ``OutputEvent``s without lineage. This
moves them so the sample shows that shape.
"""

from __future__ import annotations

from typing import Any

__all__ = ["with_result_events"]

_OUTPUT_EVENT = "org.apache.flink.agents.api.OutputEvent"


def with_result_events(log: Any) -> Any:
    """A new log whose sub-agent child completions carry their output events as ``subagentResultEvents``."""
    import msgspec

    from agent_inspect.codec import SUBAGENT_EVENT, Event, decode_action_state, encode_action_state
    from agent_inspect.log import ActionStateLog
    from agent_inspect.raw import RawBatch

    values: list[bytes | None] = []
    for value in log.raw.value:
        state = None if value is None else decode_action_state(value)
        te = None if state is None else state.task_event
        if state is None or te is None or te.event_class != SUBAGENT_EVENT or not state.completed:
            values.append(value)
            continue
        def is_result(e: Any) -> bool:
            return e.type == "_output_event" or (e.delegate is not None and e.delegate.type == "_output_event")

        results = tuple(Event(event_class=_OUTPUT_EVENT, id=e.id, type="_output_event",
                              attributes=(e.delegate or e).attributes)
                        for e in state.output_events if is_result(e))
        outputs = tuple(e for e in state.output_events if not is_result(e))
        moved = msgspec.structs.replace(state, output_events=outputs, subagent_result_events=results)
        values.append(encode_action_state(moved, value_format="V4"))
    raw = log.raw
    batch = RawBatch(list(raw.partition), list(raw.offset), list(raw.timestamp_ms), list(raw.key), values,
                     None if raw.agent_key is None else list(raw.agent_key))
    return ActionStateLog.from_raw(batch, log.source)
