"""Build real logs for recovery/history tests: codec keys and values through ActionStateLog.from_raw."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from agent_inspect.codec import (
    ActionState,
    CallResult,
    Event,
    encode_action_state,
    event_uuid,
    format_state_key,
    java_string_hash,
    key_group,
    name_action_uuid,
    string_key_digest,
)
from agent_inspect.log import ActionStateLog
from agent_inspect.raw import RawBatch, SourceInfo

FINGERPRINT = "A" * 43 + "="
INPUT_CLASS = "org.apache.flink.agents.api.InputEvent"
_ids = itertools.count(1)


def fresh_id() -> str:
    return f"00000000-0000-4000-8000-{next(_ids):012d}"


@dataclass(frozen=True)
class Ev:
    """An event: type, attributes, id."""

    type: str
    attrs: dict[str, Any]
    id: str

    @property
    def fp(self) -> str:
        return event_uuid(self.attrs)


def inp(value: str, eid: str | None = None) -> Ev:
    return Ev("_input_event", {"input": value}, eid or fresh_id())


def work(value: str, eid: str | None = None) -> Ev:
    return Ev("WorkEvent", {"x": value}, eid or fresh_id())


@dataclass
class LogBuilder:
    """Appends the writes of action executions (spec §5.6) to one partition per business key."""

    fmt: str = "K1.5"
    kind: str = "kafka"
    batch: RawBatch = field(default_factory=RawBatch)
    offsets: dict[int, int] = field(default_factory=dict)
    partitions: dict[str, int] = field(default_factory=dict)
    action_uuids: dict[str, str] = field(default_factory=dict)

    def state_key(self, key: str, seq: int, action: str, ev: Ev, *, action_uuid: str | None = None) -> str:
        au = action_uuid or self.action_uuids.get(action) or name_action_uuid(action)
        group = key_group(java_string_hash(key), 128)
        digest = string_key_digest(key)
        return format_state_key(self.fmt, seq=seq, event_uuid=ev.fp, action_uuid=au, key_text=key,
                                key_group=group, key_digest=digest, serializer_fingerprint=FINGERPRINT)

    def _write(self, key: str, sk: str, value: bytes | None) -> int:
        part = self.partitions.setdefault(key, 0)
        off = self.offsets.get(part, 0)
        self.offsets[part] = off + 1
        self.batch.append(part, off, 1_700_000_000_000 + off, sk.encode(), value)
        return off

    def run(self, key: str, seq: int, action: str, ev: Ev, status: str = "C", *,
            outs: list[Ev] = (), calls: list[tuple[str, str]] = (), action_uuid: str | None = None,
            upstream: str | None = None, initial: bool = True) -> list[Ev]:
        """The writes of one execution: initial, one per call, completed when status is "C"."""
        sk = self.state_key(key, seq, action, ev, action_uuid=action_uuid)
        task = Event.new(ev.type, ev.attrs, id=ev.id, upstream_event_id=upstream,
                         event_class=INPUT_CLASS if ev.type == "_input_event" else
                         "org.apache.flink.agents.api.Event")
        if status == "TOMB":
            self._write(key, sk, None)
            return []
        if initial:
            self._write(key, sk, encode_action_state(ActionState(task_event=task)))
        done: list[CallResult] = []
        for fn, st in calls:
            done.append(CallResult(function_id=fn, args_digest="2a7286cdad649b6b", status=st))
            self._write(key, sk, encode_action_state(ActionState(task_event=task, call_results=tuple(done))))
        if status == "C":
            outputs = tuple(Event.new(o.type, o.attrs, id=o.id, upstream_event_id=ev.id,
                                      upstream_action_name=action) for o in outs)
            self._write(key, sk, encode_action_state(ActionState(task_event=task, output_events=outputs,
                                                                 completed=True)))
        return list(outs)

    def tombstone(self, key: str, seq: int, action: str, ev: Ev) -> None:
        self._write(key, self.state_key(key, seq, action, ev), None)

    def log(self) -> ActionStateLog:
        src = SourceInfo(kind=self.kind, location="memory://test", topic="t",
                         start_offsets={p: 0 for p in self.offsets}, end_offsets=dict(self.offsets))
        return ActionStateLog.from_raw(self.batch, src)

    def marker(self) -> dict[int, int]:
        """The current end offsets (what a checkpoint stores)."""
        return dict(self.offsets)
