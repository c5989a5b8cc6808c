"""The lone-surrogate reader and the value cleaner walk a value once, together: a value with every part the walk
touches (unknown properties, a snake-case lineage name, a delegate event, memory values, output events) reads the
same with a lone surrogate in it as without, up to that string."""

from __future__ import annotations

import json

from agent_inspect.codec import decode_action_state

VALUE = {
    "taskEvent": {"@class": "org.apache.flink.agents.api.Event", "id": "e1", "type": "_input_event",
                  "attributes": {"input": "CUT"}, "futureEventField": 1,
                  "delegate": {"id": "d1", "type": "inner", "attributes": {"note": "CUT"}, "upstream_event_id": "u0"}},
    "outputEvents": [{"id": "o1", "type": "done", "attributes": {"output": "CUT"}, "upstream_event_id": "e1"}],
    "shortTermMemoryUpdates": [{"path": "answer", "value": "CUT", "ttl": 3}],
    "sensoryMemoryUpdates": [],
    "callResults": [],
    "completed": True,
    "futureStateField": {"x": 1},
}


def _decoded(cut: str) -> tuple[object, ...]:
    state = decode_action_state(json.dumps(VALUE).replace("CUT", cut).encode("utf-8"))
    ev, out, mu = state.task_event, state.output_events[0], state.short_term_memory_updates[0]
    return (bytes(ev.attributes), ev.extra, bytes(ev.delegate.attributes), ev.delegate.upstream_event_id,
            out.upstream_event_id, bytes(out.attributes), bytes(mu.value), mu.extra, state.extra)


def test_a_lone_surrogate_changes_only_its_string() -> None:
    plain = _decoded("B")
    lone = _decoded("B\\ud800")
    assert lone == tuple(p.replace(b'"B"', b'"B\\uD800"') if isinstance(p, bytes) else p for p in plain)
    assert lone[0] == b'{"input":"B\\uD800"}' and lone[1] == {"futureEventField": 1} and lone[3] == "u0"
