"""State bytes inside a Flink checkpoint: operator list state elements and keyed state of the heap backend.

Operator state: each list element starts at an offset the ``_metadata`` names, so the recovery marker is read
at its offsets without the serialization proxy before it. Keyed state (``KeyedBackendSerializationProxy``
then one block per key group, at offsets the ``_metadata`` names) comes in two layouts:

- ``"savepoint"`` (canonical savepoints): per entry a length-prefixed composite key (key-group prefix, key,
  namespace, map user key) and a length-prefixed value, so every value is found; ``Long`` values and
  ``String`` map keys are decoded, Kryo objects are kept undecoded.
- ``"full"`` (hashmap backend checkpoints): per state ``count`` entries of namespace, key and value with no
  lengths, so a key group is read up to its first non-empty state whose values are Kryo objects; the
  ``Long`` value states after it are then found by searching, accepted only when every key hashes to the
  key group.

The state names and their value serializers come from the proxy's state meta infos, found by their layout
(name, backend type, options, serializer keys), since the serializer snapshots between them have no lengths.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from agent_inspect._errors import CheckpointFormatError
from agent_inspect.codec._flink_metadata import ByteReader
from agent_inspect.codec._identity import java_long_hash, java_string_hash, key_group

__all__ = ["StateInfo", "KeyedState", "read_keyed_state", "state_infos", "read_java_string"]

_END_OF_KEY_GROUP = 0xFFFF
_SERIALIZER_KEYS = (b"KEY_SERIALIZER", b"NAMESPACE_SERIALIZER", b"VALUE_SERIALIZER", b"USER_KEY_SERIALIZER")
_HEADER = re.compile(rb"\x00[\x01-\x7f]{1}[\x20-\x7e]{1,127}\x00\x00\x00[\x00-\x04]\x00\x00\x00[\x00-\x08]", re.S)
_TYPES = ("VALUE", "OPERATOR", "BROADCAST", "PRIORITY_QUEUE")


@dataclass(frozen=True)
class StateInfo:
    """One keyed state of the backend: its ``name``, ``kind`` (VALUE, LIST, MAP, PRIORITY_QUEUE…) and the
    class of its value serializer snapshot (e.g. ``…LongSerializer$LongSerializerSnapshot``)."""

    name: str
    kind: str
    value_serializer: str


@dataclass
class KeyedState:
    """What one subtask's keyed state holds, per state name and key: decoded values where readable.

    ``values[state][key]`` is an int for ``Long`` value states, a sorted list of user keys for maps with
    ``String`` keys, and ``None`` where the value's bytes are Kryo objects this reader does not decode.
    ``not_read`` names, one sentence each, what could not be read.
    """

    key_serializer: str
    states: list[StateInfo]
    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    not_read: list[str] = field(default_factory=list)
    unread: set[str] = field(default_factory=set)


def read_java_string(r: ByteReader) -> str | None:
    """Flink's ``StringValue.writeString`` (``StringSerializer``): a varint length + 1, then varint chars."""
    length = _flink_varint(r)
    if length == 0:
        return None
    chars = []
    for _ in range(length - 1):
        chars.append(chr(_flink_varint(r)))
    return "".join(chars)


def _flink_varint(r: ByteReader) -> int:
    b = r.u8()
    if b < 0x80:
        return b
    value, shift = b & 0x7F, 7
    while True:
        b = r.u8()
        if b < 0x80:
            return value | b << shift
        value |= (b & 0x7F) << shift
        shift += 7


def state_infos(data: bytes, end: int) -> tuple[str, list[StateInfo]]:
    """The key serializer snapshot class and the states, in id order, of the proxy in ``data[:end]``."""
    r = ByteReader(data, 0, "keyed state")
    version = r.i32()
    if not 1 <= version <= 20:
        raise CheckpointFormatError(f"keyed state: unknown serialization proxy version {version}")
    if version >= 3 and r.u8():
        raise CheckpointFormatError("keyed state is snappy-compressed (execution.checkpointing.snapshot-compression):"
                                    " not read")
    if version >= 6:
        r.i32()
    key_serializer = r.utf()
    infos: list[StateInfo] = []
    pos = r.pos
    while True:
        m = _HEADER.search(data, pos, end)
        if m is None:
            break
        info, after = _try_header(data, m.start(), end)
        if info is None:
            pos = m.start() + 1
            continue
        infos.append(info)
        pos = after
    return key_serializer, infos


def _try_header(data: bytes, start: int, end: int) -> tuple[StateInfo | None, int]:
    r = ByteReader(data[:end], start, "keyed state")
    try:
        name = r.utf()
        backend = r.i32()
        options = {r.utf(): r.utf() for _ in range(r.i32())}
        n_serializers = r.i32()
        if not 1 <= n_serializers <= 4:
            return None, start
        key = r.utf()
        if key.encode() not in _SERIALIZER_KEYS:
            return None, start
        r.i32()                                        # the snapshot proxy's version
        value_serializer = r.utf() if key == "VALUE_SERIALIZER" else ""
    except CheckpointFormatError:
        return None, start
    kind = options.get("KEYED_STATE_TYPE") or (_TYPES[backend] if backend < len(_TYPES) else str(backend))
    return StateInfo(name, kind, value_serializer), r.pos


def read_keyed_state(data: bytes, layout: str, key_groups: tuple[int, int], offsets: tuple[int, ...],
                     max_parallelism: int) -> KeyedState:
    """Read one subtask's keyed state bytes (``layout`` ``"savepoint"`` or ``"full"``, see the module doc).

    For example::

        files = ai.sources.open_checkpoint("tests/fixtures/checkpoints/production/savepoint")
        operator, handle = next((op, s.managed_keyed) for op in ai.codec.parse_metadata(files.metadata).operators
                                for s in op.subtasks if s.managed_keyed is not None)
        data = handle.stream.data if handle.stream.data is not None else files.read_state_file(
            handle.stream.path or "", relative=handle.stream.relative)
        state = ai.codec.read_keyed_state(data, handle.kind, handle.key_groups, handle.offsets, operator.max_parallelism)
        sorted(state.values)                           # what ai.checkpoint.read does per subtask
    """
    first = min((o for o in offsets if o > 0), default=len(data))
    key_serializer, infos = state_infos(data, first)
    state = KeyedState(key_serializer.rsplit(".", 1)[-1], infos)
    for info in infos:
        state.values[info.name] = {}
    groups = range(key_groups[0], key_groups[1] + 1)
    prefix = 1 if max_parallelism <= 128 else 2
    if layout == "full" and _unified_layout(data, groups, offsets):
        layout = "savepoint"                           # a RocksDB full checkpoint: the canonical layout
    if layout == "savepoint":
        for group, offset in zip(groups, offsets):
            if offset > 0:
                _savepoint_group(data, offset, group, prefix, key_serializer, state)
    else:
        stopped: set[str] = set()
        ends = [*offsets[1:], len(data)]
        for group, offset, end in zip(groups, offsets, ends):
            _heap_group(data, offset, end, group, key_serializer, max_parallelism, state, stopped)
        state.unread |= stopped
        if stopped:
            state.not_read.append(f"{', '.join(sorted(stopped))}: Kryo-serialized values have no length in a "
                                  "heap-backend checkpoint, so these states are not read (the Long value states are "
                                  "found by their key group; a savepoint has everything)")
    return state


def _unified_layout(data: bytes, groups: range, offsets: tuple[int, ...]) -> bool:
    """Whether full-snapshot key groups use the canonical layout: a heap block starts with its key group as an int,
    a canonical one with a 2-byte state id and the high half of a key length (so an int of ``id << 16``)."""
    for group, offset in zip(groups, offsets):
        if group and offset and offset + 4 <= len(data):
            return int(struct.unpack(">i", data[offset:offset + 4])[0]) != group
    return False


def _value(info: StateInfo | None, raw: bytes) -> Any:
    if info is not None and info.value_serializer.endswith("LongSerializer$LongSerializerSnapshot") and len(raw) == 8:
        return int(struct.unpack(">q", raw)[0])
    return None


def _read_key(r: ByteReader, key_serializer: str) -> str:
    if key_serializer.endswith("StringSerializer$StringSerializerSnapshot"):
        return read_java_string(r) or ""
    if key_serializer.endswith("LongSerializer$LongSerializerSnapshot"):
        return str(r.i64())
    if key_serializer.endswith("IntSerializer$IntSerializerSnapshot"):
        return str(r.i32())
    raise CheckpointFormatError(f"keyed state: key serializer {key_serializer.rsplit('.', 1)[-1]} is not read "
                                "(String, Long and Integer keys are)")


def _savepoint_entries(data: bytes, offset: int) -> Iterator[tuple[int, bytes, bytes]]:
    """(state id, key bytes, value bytes) of one key group in the canonical savepoint layout."""
    r = ByteReader(data, offset, "keyed state")
    state_id = r.u16()
    while True:
        key = bytearray(r.take(r.count("key bytes")))
        value = r.take(r.count("value bytes"))
        follows = bool(key[0] & 0x80)
        key[0] &= 0x7F
        yield state_id, bytes(key), value
        if follows:
            state_id = r.u16()
            if state_id == _END_OF_KEY_GROUP:
                return


def _savepoint_group(data: bytes, offset: int, group: int, prefix: int, key_serializer: str,
                     state: KeyedState) -> None:
    for state_id, key, value in _savepoint_entries(data, offset):
        if state_id >= len(state.states):
            raise CheckpointFormatError(f"keyed state: key group {group} names state id {state_id}, "
                                        f"but the backend lists {len(state.states)} states")
        info = state.states[state_id]
        if info.kind == "PRIORITY_QUEUE":
            continue
        kr = ByteReader(key, prefix, "keyed state key")
        business_key = _read_key(kr, key_serializer)
        kr.take(1)                                     # VoidNamespace
        per_key = state.values[info.name]
        if info.kind == "MAP":
            user_key = read_java_string(kr) if info.value_serializer.endswith("MapSerializerSnapshot") else None
            keys = per_key.setdefault(business_key, [])
            if user_key is not None:
                keys.append(user_key)
                keys.sort()
        else:
            per_key[business_key] = _value(info, value)


def _heap_group(data: bytes, offset: int, end: int, group: int, key_serializer: str, max_parallelism: int,
                state: KeyedState, stopped: set[str]) -> None:
    r = ByteReader(data[:end], offset, "keyed state")
    if r.i32() != group:
        raise CheckpointFormatError(f"keyed state: key group {group}'s block at byte {offset} names another group")
    seen: set[int] = set()
    for _ in range(len(state.states)):
        if r.pos >= end:
            return
        state_id = r.u16()
        if state_id >= len(state.states):
            raise CheckpointFormatError(f"keyed state: key group {group} names state id {state_id}, "
                                        f"but the backend lists {len(state.states)} states")
        info = state.states[state_id]
        seen.add(state_id)
        n = r.count("state entries")
        if n == 0:
            continue
        if info.kind == "PRIORITY_QUEUE" or not _is_long(info):
            stopped.add(info.name)
            stopped.update(i.name for k, i in enumerate(state.states)
                           if k not in seen and not _is_long(i) and i.kind != "PRIORITY_QUEUE")
            _scan_long_states(data, r.pos, end, group, key_serializer, max_parallelism, state, seen)
            return
        for _ in range(n):
            r.take(1)                                  # VoidNamespace
            business_key = _read_key(r, key_serializer)
            state.values[info.name][business_key] = r.i64()


def _is_long(info: StateInfo) -> bool:
    return info.value_serializer.endswith("LongSerializer$LongSerializerSnapshot")


def _scan_long_states(data: bytes, start: int, end: int, group: int, key_serializer: str, max_parallelism: int,
                      state: KeyedState, seen: set[int]) -> None:
    """Find the ``Long`` value states after an undecodable one in a heap key group.

    Their block (state id, count, then namespace, key, 8-byte value per entry) is searched for and accepted
    only when every key hashes to this key group and the block ends at the group's end or at another state
    id, so bytes inside a Kryo object are not taken for it.
    """
    for state_id, info in enumerate(state.states):
        if state_id in seen or not _is_long(info):
            continue
        tag = struct.pack(">H", state_id)
        pos = data.find(tag, start, end)
        while pos >= 0:
            found = _long_block(data, pos + 2, end, group, key_serializer, max_parallelism, len(state.states))
            if found is not None:
                state.values[info.name].update(found)
                break
            pos = data.find(tag, pos + 1, end)


def _long_block(data: bytes, pos: int, end: int, group: int, key_serializer: str, max_parallelism: int,
                n_states: int) -> dict[str, int] | None:
    r = ByteReader(data[:end], pos, "keyed state")
    try:
        n = r.i32()
        if not 1 <= n <= (end - pos) // 10:
            return None
        out: dict[str, int] = {}
        for _ in range(n):
            if r.u8() != 0:                            # VoidNamespace
                return None
            business_key = _read_key(r, key_serializer)
            if key_group(_java_hash(business_key, key_serializer), max_parallelism) != group:
                return None
            out[business_key] = r.i64()
    except CheckpointFormatError:
        return None
    if r.pos != end and (r.pos + 6 > end or struct.unpack(">H", data[r.pos:r.pos + 2])[0] >= n_states):
        return None
    return out


def _java_hash(key: str, key_serializer: str) -> int:
    if key_serializer.endswith("StringSerializer$StringSerializerSnapshot"):
        return java_string_hash(key)
    if key_serializer.endswith("LongSerializer$LongSerializerSnapshot"):
        return java_long_hash(int(key))
    return int(key)
