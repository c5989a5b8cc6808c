"""A synthetic Flink 2.x ``_metadata`` (format version 6) with an agent operator of many subtasks, and what the
fixture checkpoints' keyed restore must be.

Used where a real Flink run cannot give the shape (1,000 subtasks): the layout is the one the committed
real checkpoints have (tests/fixtures/checkpoints/), inline ``recoveryMarker`` elements in Kryo 5.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_inspect.checkpoint import CheckpointTask, KeyedRestore


#: a real Flink 2.x checkpoint's ``_metadata``: its trailing Java-serialized ``CheckpointProperties`` end ours
_REAL = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints" / "flink2-p1-inline" / "checkpoints" / "chk-4"


def _utf(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">H", len(raw)) + raw


def _varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _zigzag(v: int) -> bytes:
    return _varint((v << 1) ^ (v >> 63))


def kryo5_hashmap(marker: Mapping[int, int]) -> bytes:
    """``writeClassAndObject`` of a ``HashMap<Integer, Long>`` as Flink 2.x's Kryo 5 writes it."""
    name = b"java.util.HashMap"
    out = bytearray(b"\x01\x00" + name[:-1] + bytes([name[-1] | 0x80]) + b"\x01" + _varint(len(marker) + 1))
    for p, o in marker.items():
        out += b"\x02" + _zigzag(p) + b"\x09" + _zigzag(o)
    return bytes(out)


def incremental_keyed_handle(checkpoint_id: int, key_group: int) -> bytes:
    """A RocksDB incremental keyed state handle (``INCREMENTAL_KEY_GROUPS_HANDLE_V2``) with no files."""
    return (b"\x0b" + struct.pack(">q", checkpoint_id) + _utf("rocksdb-backend-id") + struct.pack(">iiq", key_group, 1, 0)
            + b"\x01" + _utf("meta") + struct.pack(">i", 3) + b"abc" + struct.pack(">ii", 0, 0) + _utf("handle-id"))


def synthetic_metadata(markers: Sequence[Mapping[int, int]], *, checkpoint_id: int = 7,
                       incremental: bool = False) -> bytes:
    """One agent operator (uid ``agent-operator``) whose subtask i wrote ``markers[i]`` inline; with
    ``incremental``, each subtask also has a RocksDB incremental keyed state handle."""
    out = bytearray(struct.pack(">iiqi", 0x4960672D, 6, checkpoint_id, 0))
    out += struct.pack(">i", 1)                                  # one operator
    out += _utf("agent-operator") + _utf("agent-operator")
    out += struct.pack(">qqii", 1, 2, len(markers), max(128, len(markers)))
    out += b"\x00"                                               # no coordinator state
    out += struct.pack(">i", len(markers))
    for i, marker in enumerate(markers):
        element = kryo5_hashmap(marker)
        out += struct.pack(">ii", i, 1) + b"\x04" + struct.pack(">i", 1)
        out += _utf("recoveryMarker") + b"\x01" + struct.pack(">iq", 1, 0)
        out += b"\x01" + _utf(f"file:/chk-{checkpoint_id}/{i}") + struct.pack(">i", len(element)) + element
        keyed = incremental_keyed_handle(checkpoint_id, i) if incremental else b"\x00"
        out += struct.pack(">i", 0) + keyed + b"\x00" + struct.pack(">ii", 0, 0)
    real = (_REAL / "_metadata").read_bytes()
    out += real[real.rfind(b"\xac\xed\x00\x05"):]                # the Java-serialized properties, whole
    return bytes(out)


def printed_event(value: Any) -> dict[str, Any]:
    """A decoded upstream ``Event`` as CheckpointGen prints what it wrote."""
    from agent_inspect.checkpoint._tasks import event_of

    event = event_of(value)
    assert event is not None
    return {"attributes": dict(event.attributes), "class": event.event_class, "id": event.id,
            "sourceTimestamp": value.fields["sourceTimestamp"], "type": event.type,
            "upstreamActionName": event.upstream_action, "upstreamEventId": event.upstream_event_id}


def printed_task(task: CheckpointTask, value: Any) -> dict[str, Any]:
    """A decoded ``ActionTask`` as CheckpointGen prints what it wrote."""
    return {"action": task.action, "class": task.task_class, "event": printed_event(value.fields["event"]),
            "executionId": task.execution_id, "executionStartedEventEmitted": task.started,
            "function": task.function, "key": task.key, "observationId": task.observation_id}


def tasks_and_memory_are_what_the_job_wrote(keyed: KeyedRestore, per_key: dict[str, Any]) -> None:
    """The keyed restore read from a fixture is exactly what CheckpointGen printed it wrote (``per_key``)."""
    assert dict(keyed.last_completed) == {k: v["lastCompletedSequenceNumber"] for k, v in per_key.items()
                                        if "lastCompletedSequenceNumber" in v}
    assert dict(keyed.message_seq) == {k: v["messageSequenceNumber"] for k, v in per_key.items()}
    # actionTasks: upstream's ActionTask classes, Kryo-serialized, decoded field by field
    assert all(t.decoded and t.serializer == "Kryo org.apache.flink.agents.runtime.operator.ActionTask" and t.size
               for v in keyed.action_tasks.values() for t in v)
    assert {k: [printed_task(t, raw.value) for t, raw in zip(keyed.tasks[k], v)] for k, v in keyed.action_tasks.items()} \
        == {k: v["actionTasks"] for k, v in per_key.items() if v["actionTasks"]}
    assert all(t.seq == keyed.message_seq[k] for k, v in keyed.tasks.items() for t in v)
    assert dict(keyed.task_count) == {k: len(v["actionTasks"]) for k, v in per_key.items() if v["actionTasks"]}
    assert keyed.pending_tasks == tuple(sorted(k for k, v in per_key.items() if v["actionTasks"]))
    assert keyed.pending_inputs == tuple(sorted(k for k, v in per_key.items() if v["pendingInputEvents"]))
    # pendingInputEvents: upstream's Event classes, decoded likewise
    assert {k: [printed_event(e.value) for e in v] for k, v in keyed.input_events.items()} == \
        {k: v["pendingInputEvents"] for k, v in per_key.items() if v["pendingInputEvents"]}
    # ... and as the plan takes them: each key's buffered events in order, with their ids and classes
    assert {k: [{"attributes": e.attributes, "class": e.event_class, "id": e.id, "type": e.type,
                 "upstreamActionName": e.upstream_action, "upstreamEventId": e.upstream_event_id} for e in v]
            for k, v in keyed.buffered.items()} == \
        {k: [{n: f for n, f in e.items() if n != "sourceTimestamp"} for e in v["pendingInputEvents"]]
         for k, v in per_key.items() if v["pendingInputEvents"]}
    # memory: its keys, and each value's size as Flink's serializer wrote it
    assert {k: dict(v) for k, v in keyed.short_term.items()} == {k: v["shortTermMemory"] for k, v in per_key.items()}
    assert {k: dict(v) for k, v in keyed.sensory.items()} == {k: v["sensoryMemory"] for k, v in per_key.items()}
    assert keyed.unread == ()


def real_task_element(metadata: bytes, size: int) -> bytes:
    """The Kryo bytes of the one PythonActionTask an inline keyed state holds (``size`` as the reader found it)."""
    head = b"\x01\x00org.apache.flink.agents.runtime.python.operator.PythonActionTas"
    start = metadata.find(head)
    assert start > 0 and metadata.count(head) == 1
    return metadata[start:start + size]


def _flink_string(text: str) -> bytes:
    return _varint(len(text) + 1) + b"".join(_varint(ord(c)) for c in text)


def synthetic_heap_keyed_state(proxy: bytes, state_ids: Mapping[str, int], n_keys: int, task: bytes,
                               max_parallelism: int = 128,
                               kryo_memory: bool = False) -> tuple[bytes, tuple[int, ...], dict[str, Any]]:
    """A heap-backend keyed state of ``n_keys`` keys (``user-<i>``) after a real checkpoint's serialization
    ``proxy`` (the states CheckpointGen declares, ids in ``state_ids``), one subtask holding every key group.

    Each key: messageSequenceNumber ``i``, lastCompletedSequenceNumber ``i - 1``, one action task (``task``: the
    Kryo bytes of a real one), one Kryo input event of an application class (undecodable: the reader must find
    the next block again), one
    memory entry in each memory state (a POJO, or with ``kryo_memory`` a Kryo object of an application class).
    Returns the bytes, the key-group offsets and what was written per key.
    """
    from agent_inspect.codec import key_group
    from agent_inspect.codec._identity import java_string_hash

    by_group: dict[int, list[int]] = {}
    for i in range(n_keys):
        by_group.setdefault(key_group(java_string_hash(f"user-{i}"), max_parallelism), []).append(i)
    event_class = b"com.example.InputEvent"

    def kryo(key: str) -> bytes:
        return b"\x01\x00" + event_class[:-1] + bytes([event_class[-1] | 0x80]) + b"\x01" \
            + bytes([0x80 | len(key) + 1]) + key.encode()

    out, offsets = bytearray(proxy), []
    wrote: dict[str, Any] = {}
    for group in range(max_parallelism):
        offsets.append(len(out))
        out += struct.pack(">i", group)
        keys = by_group.get(group, [])
        for name, state_id in sorted(state_ids.items(), key=lambda kv: kv[1]):
            out += struct.pack(">Hi", state_id, len(keys) if not name.startswith("_timer") else 0)
            if name.startswith("_timer"):
                continue
            for i in keys:
                key = f"user-{i}"
                out += b"\x00" + _flink_string(key)
                if name == "messageSequenceNumber":
                    out += struct.pack(">q", i)
                elif name == "lastCompletedSequenceNumber":
                    out += struct.pack(">q", i - 1)
                elif name == "actionTasks":
                    out += struct.pack(">i", 1) + task
                elif name == "pendingInputEvents":
                    out += struct.pack(">i", 1) + kryo(key)
                else:                                  # a memory map: one entry
                    value = kryo(key) if kryo_memory else b"\x02\x00" + _flink_string(key)
                    out += struct.pack(">i", 1) + _flink_string("last_input") + b"\x00" + value
                wrote[key] = i
    return bytes(out), tuple(offsets), wrote
