"""Builds real action-state logs (codec encoders + ActionStateLog.from_raw) for the graph and tree tests.

The lines mirror divergence-cases.md: ``run(key, seq, action, task_event, status, outputs=, calls=)`` writes
every record of one action execution (§5.6): the initial record, one record per durable call, and the
completed record with the outputs bound to the task event (lineage for V3+).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Sequence

from agent_inspect.codec import (
    GENERIC_EVENT,
    SUBAGENT_EVENT,
    ActionState,
    CallResult,
    Event,
    encode_action_state,
    event_uuid,
    format_state_key,
    name_action_uuid,
    string_key_digest,
    subagent_ids,
    subagent_namespace_digest,
)
from agent_inspect.raw import RawBatch, SourceInfo

FINGERPRINT = base64.b64encode(hashlib.sha256(b"StringSerializer").digest()).decode()
SUCCESS = base64.b64encode(b'"ok"').decode()


def inp(text: str, id: str) -> Event:
    """``In(text)#id``: a root input event."""
    return Event.new("_input_event", {"input": text}, id=id)


def work(x: str | None, id: str) -> Event:
    """``W(x)#id`` (``W{}`` when ``x`` is None)."""
    return Event.new("WorkEvent", {} if x is None else {"x": x}, id=id)


def out(text: str, id: str) -> Event:
    return Event.new("_output_event", {"output": text}, id=id)


def sub(session: str, call: str, delegate_type: str, id: str, *, attrs: dict | None = None,
        scope: str = "reviewer", upstream: str | None = None, upstream_action: str | None = None) -> Event:
    """``Sub(session, call, type)#id``: an InternalSubagentCallEvent wrapping a delegate."""
    delegate_attrs = attrs if attrs is not None else {"input": f"{delegate_type} of {call}"}
    delegate = Event.new(delegate_type, delegate_attrs, id=f"{id}-d")
    return Event.new(
        "InternalSubagentCallEvent",
        {"targetScope": scope, "callId": call, "sessionId": session, "delegateType": delegate_type,
         "delegateAttributes": delegate_attrs},
        id=id, event_class=SUBAGENT_EVENT, delegate=delegate,
        upstream_event_id=upstream, upstream_action_name=upstream_action,
    )


def session_ids(key: str, seq: int, caller: str, trigger: Event, *, scope: str = "reviewer",
                session: int = 0, call: int = 1) -> tuple[str, str]:
    """The (sessionId, callId) a caller's SubagentIdAllocator would hand out (spec §11.2)."""
    digest = subagent_namespace_digest(key, seq, caller, trigger.type, trigger.attrs(), scope)
    ids = subagent_ids(digest, session=session, call=call)
    return ids.session_id, ids.call_id


class History:
    """One partition of records written like the upstream operator would, in order."""

    def __init__(self, *, key_format: str = "K1.5", value_format: str = "V3", partition: int = 0) -> None:
        self.key_format = key_format
        self.value_format = value_format
        self.partition = partition
        self.batch = RawBatch()

    def state_key(self, key: str, seq: int, action: str, task: Event) -> str:
        fmt = self.key_format
        return format_state_key(
            fmt, seq=None if fmt == "K0" else seq, event_uuid=event_uuid(bytes(task.attributes)),
            action_uuid=name_action_uuid(action), key_text=key, key_group=17,
            key_digest=string_key_digest(key), serializer_fingerprint=FINGERPRINT,
        )

    def _write(self, key: str, value: bytes | None) -> None:
        self.batch.append(self.partition, len(self.batch), 1_767_225_600_000 + len(self.batch),
                          key.encode(), value)

    def _state(self, task: Event, *, outputs: Sequence[Event] = (), calls: Sequence[CallResult] = (),
               completed: bool = False) -> bytes:
        state = ActionState(task_event=task, output_events=tuple(outputs), call_results=tuple(calls),
                            completed=completed)
        return encode_action_state(state, value_format=self.value_format)

    def run(self, key: str, seq: int, action: str, task: Event, status: str = "C", *,
            outputs: Iterable[Event] = (), calls: Iterable[tuple[str, str]] = ()) -> list[Event]:
        """Write one execution: status ``C`` (completed), ``I`` (initial only) or ``P`` (incomplete with calls)."""
        sk = self.state_key(key, seq, action, task)
        self._write(sk, self._state(task))
        results: list[CallResult] = []
        for function_id, call_status in calls:
            results.append(CallResult(
                function_id=function_id, args_digest="", status=call_status,
                result_payload=SUCCESS if call_status == "SUCCEEDED" else None,
                exception_payload=SUCCESS if call_status == "FAILED" else None,
            ))
            self._write(sk, self._state(task, calls=results))
        bound = [
            Event(event_class=e.event_class or GENERIC_EVENT, id=e.id, type=e.type, attributes=e.attributes,
                  delegate=e.delegate, upstream_event_id=task.id, upstream_action_name=action)
            for e in outputs
        ]
        if status == "C":
            self._write(sk, self._state(task, outputs=bound, completed=True))
        return bound

    def tomb(self, key: str, seq: int, action: str, task: Event) -> None:
        self._write(self.state_key(key, seq, action, task), None)

    def log(self):
        from agent_inspect.log import ActionStateLog

        source = SourceInfo(kind="file", location="memory://graph-tests", topic="action-state",
                            start_offsets={self.partition: 0}, end_offsets={self.partition: len(self.batch)})
        # the draft layout is ambiguous with K1 and is read only when asked for (spec §4.7)
        prefer = "K1.5-draft" if self.key_format == "K1.5-draft" else None
        return ActionStateLog.from_raw(self.batch, source, key_format=prefer)
