"""Keyed state bytes of the heap (hashmap) backend inside a Flink checkpoint: every state, decoded where its
serializer allows.

One subtask's keyed state is the ``KeyedBackendSerializationProxy`` (format version, compression flag, the key
serializer snapshot, then per state its meta info: name, backend type, options, serializer snapshots; see
:mod:`~agent_inspect.codec._flink_serializers`), then one block per key group at the offsets ``_metadata``
names. Two block layouts:

- ``"savepoint"`` (canonical savepoints, and RocksDB full checkpoints): per entry a length-prefixed composite key
  (key-group prefix, key, namespace, a map's user key) and a length-prefixed value; list values are their
  elements joined by a ``,`` byte. Every value's size is known, decodable or not.
- ``"full"`` (hashmap backend checkpoints): the key group as an int, then per state its id, an entry count and
  per entry namespace, key and value as the state's serializer writes them (a list with its element count, a
  map with its size and a null flag per value), with no lengths. A value this reader cannot decode (a Kryo
  object of a class it does not know, corrupt bytes, a POJO subclass) has no known end, so the block is left
  there: the rest of the key group is found again at the next state block that parses to the group's end (or
  to another undecodable value) with every key in that key group, and the skipped bytes are named.

What is read lands in :class:`KeyedState`; what is not is named, one sentence each, in ``not_read``.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from agent_inspect._errors import CheckpointFormatError
from agent_inspect._glossary import plural
from agent_inspect.codec._flink_metadata import ByteReader
from agent_inspect.codec._flink_serializers import (
    Serializer,
    Undecodable,
    read_serializer_snapshot,
    read_value,
    simple_serializer,
)
from agent_inspect.codec._identity import java_long_hash, java_string_hash, key_group
from agent_inspect.codec._kryo import KRYO5

__all__ = ["StateInfo", "StateValue", "KeyedState", "read_keyed_state", "state_infos"]

_END_OF_KEY_GROUP = 0xFFFF
_LIST_DELIMITER = 0x2C
_SERIALIZER_KEYS = (b"KEY_SERIALIZER", b"NAMESPACE_SERIALIZER", b"VALUE_SERIALIZER", b"USER_KEY_SERIALIZER")
_HEADER = re.compile(rb"\x00[\x01-\x7f]{1}[\x20-\x7e]{1,127}\x00\x00\x00[\x00-\x04]\x00\x00\x00[\x00-\x08]", re.S)
_TYPES = ("VALUE", "OPERATOR", "BROADCAST", "PRIORITY_QUEUE")
_VOID = Serializer("void", "VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot")


@dataclass(frozen=True)
class StateInfo:
    """One keyed state of the backend: its ``name``, ``kind`` (VALUE, LIST, MAP, PRIORITY_QUEUE…), the class of
    its value serializer snapshot, and ``serializer``/``namespace``, what the snapshots say (None when the meta
    info could not be followed: then its values are not decoded)."""

    name: str
    kind: str
    value_serializer: str
    serializer: Serializer | None = None
    namespace: Serializer | None = None


@dataclass(frozen=True)
class StateValue:
    """One list element or map value: its ``value`` when ``decoded`` (a POJO as a dict of its fields, an upstream
    Kryo class as a :class:`~agent_inspect.codec.KryoObject`), its ``size`` in bytes (None where the layout gives
    an undecodable value no length) and the ``serializer`` that wrote it; ``why`` says why it was not decoded.

    For example::

        ai.checkpoint.read("tests/fixtures/checkpoints/production/checkpoints").keyed.action_tasks["user-0009"]
    """

    serializer: str
    size: int | None
    value: Any = None
    decoded: bool = False
    why: str = ""


@dataclass
class KeyedState:
    """What one subtask's keyed state holds, per state name and key.

    ``values[state][key]``: a VALUE state's decoded value (an int for ``Long``; None when not decoded); a LIST
    state's elements as :class:`StateValue`; a MAP state's ``{user key: StateValue}``. ``counts[state][key]``:
    a list's element count where it is known even though not every element was read. ``unread``: the states
    some of whose values were not decoded or not found; ``not_read`` says what and where, one sentence each.
    """

    key_serializer: str
    states: list[StateInfo]
    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    not_read: list[str] = field(default_factory=list)
    unread: set[str] = field(default_factory=set)


def state_infos(data: bytes, end: int) -> tuple[str, list[StateInfo], Serializer | None, str | None]:
    """The serialization proxy in ``data[:end]``: the key serializer snapshot class, the states in id order, the
    key serializer, and why the meta infos were only scanned for (None when they were read in full)."""
    r = ByteReader(data[:end], 0, "keyed state")
    version = r.i32()
    if not 1 <= version <= 20:
        raise CheckpointFormatError(f"keyed state: unknown serialization proxy version {version}")
    if version >= 3 and r.u8():
        raise CheckpointFormatError("keyed state is snappy-compressed (execution.checkpointing.snapshot-compression):"
                                    " not read")
    start = r.pos
    if version >= 6:
        r.i32()                                        # the snapshot proxy's version
    try:
        key = read_serializer_snapshot(r)
        infos = [_meta_info(r) for _ in range(r.u16())]
        return f"{key.snapshot}", infos, key, None
    except CheckpointFormatError as exc:
        why = str(exc)
    r.pos = start + (4 if version >= 6 else 0)
    key_serializer = r.utf()
    return key_serializer, _scan_meta_infos(data, r.pos, end), None, why


def _meta_info(r: ByteReader) -> StateInfo:
    name = r.utf()
    backend = r.i32()
    options = {r.utf(): r.utf() for _ in range(r.count("state options", 64))}
    serializers: dict[str, Serializer] = {}
    for _ in range(r.count("state serializers", 8)):
        role = r.utf()
        r.i32()                                        # the snapshot proxy's version
        serializers[role] = read_serializer_snapshot(r)
    value = serializers.get("VALUE_SERIALIZER")
    kind = options.get("KEYED_STATE_TYPE") or (_TYPES[backend] if backend < len(_TYPES) else str(backend))
    return StateInfo(name, kind, value.snapshot if value else "", value, serializers.get("NAMESPACE_SERIALIZER"))


def _scan_meta_infos(data: bytes, pos: int, end: int) -> list[StateInfo]:
    """The states' names, kinds and value serializer classes, found by their layout (name, backend type, options,
    serializer keys) when a serializer snapshot between them could not be followed."""
    infos: list[StateInfo] = []
    while (m := _HEADER.search(data, pos, end)) is not None:
        info, after = _try_header(data, m.start(), end)
        if info is None:
            pos = m.start() + 1
            continue
        infos.append(info)
        pos = after
    return infos


def _try_header(data: bytes, start: int, end: int) -> tuple[StateInfo | None, int]:
    r = ByteReader(data[:end], start, "keyed state")
    try:
        name = r.utf()
        backend = r.i32()
        options = {r.utf(): r.utf() for _ in range(r.i32())}
        if not 1 <= r.i32() <= 4:
            return None, start
        key = r.utf()
        if key.encode() not in _SERIALIZER_KEYS:
            return None, start
        r.i32()
        value_serializer = r.utf() if key == "VALUE_SERIALIZER" else ""
    except CheckpointFormatError:
        return None, start
    kind = options.get("KEYED_STATE_TYPE") or (_TYPES[backend] if backend < len(_TYPES) else str(backend))
    # only a simple value serializer is known from its class name alone
    return StateInfo(name, kind, value_serializer.rsplit(".", 1)[-1], simple_serializer(value_serializer)), r.pos


def read_keyed_state(data: bytes, layout: str, key_groups: tuple[int, int], offsets: tuple[int, ...],
                     max_parallelism: int, kryo_generation: int = KRYO5) -> KeyedState:
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
    key_name, infos, key, why = state_infos(data, first)
    state = KeyedState(key_name.rsplit(".", 1)[-1], infos)
    if why is not None:
        state.not_read.append(f"the states' serializers: {why}; their values are not decoded")
    for info in infos:
        state.values[info.name] = {}
    groups = range(key_groups[0], key_groups[1] + 1)
    reader = _Groups(data, state, key or _key_from_name(key_name), max_parallelism, kryo_generation)
    if layout == "full" and _unified_layout(data, groups, offsets):
        layout = "savepoint"                           # a RocksDB full checkpoint: the canonical layout
    if layout == "savepoint":
        for group, offset in zip(groups, offsets):
            if offset > 0:
                reader.savepoint_group(offset, group)
        state.not_read.extend(_undecoded(state, name) for name in sorted(state.unread))
    else:
        ends = [*offsets[1:], len(data)]
        for group, offset, end in zip(groups, offsets, ends):
            reader.heap_group(offset, end, group)
    return state


def _key_from_name(snapshot_class: str) -> Serializer:
    return simple_serializer(snapshot_class) or Serializer("unknown", snapshot_class.rsplit(".", 1)[-1])


def _unified_layout(data: bytes, groups: range, offsets: tuple[int, ...]) -> bool:
    """Whether full-snapshot key groups use the canonical layout: a heap block starts with its key group as an int,
    a canonical one with a 2-byte state id and the high half of a key length (so an int of ``id << 16``)."""
    for group, offset in zip(groups, offsets):
        if group and offset and offset + 4 <= len(data):
            return int(struct.unpack(">i", data[offset:offset + 4])[0]) != group
    return False


@dataclass
class _Block:
    """One heap state block as parsed: its entries (key → value) and the list counts, committed only when kept."""

    state_id: int
    end: int
    values: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    stopped: str | None = None                         # why it stopped at an undecodable value
    first_key: str | None = None
    entries_left: int = 0


class _Groups:
    """Reads key groups of one subtask's keyed state into its :class:`KeyedState`."""

    def __init__(self, data: bytes, state: KeyedState, key: Serializer, max_parallelism: int,
                 kryo_generation: int) -> None:
        self.data, self.state, self.key, self.max_parallelism = data, state, key, max_parallelism
        self.generation = kryo_generation
        if key.kind not in ("string", "long", "int"):
            raise CheckpointFormatError(f"keyed state: key serializer {key.snapshot} is not read "
                                        "(String, Long and Integer keys are)")

    # -- the canonical layout
    def savepoint_group(self, offset: int, group: int) -> None:
        prefix = 1 if self.max_parallelism <= 128 else 2
        for state_id, key, value in _savepoint_entries(self.data, offset):
            info = self._info(state_id, group)
            if info.kind == "PRIORITY_QUEUE":
                continue
            kr = ByteReader(key, prefix, "keyed state key")
            business_key = str(read_value(kr, self.key, self.generation))
            read_value(kr, info.namespace or _VOID, self.generation)
            per_key = self.state.values[info.name]
            ser = info.serializer
            if info.kind == "MAP":
                user_key_ser, value_ser = ser.children if ser is not None and ser.kind == "map" else (None, None)
                user_key = self._decode_or_none(kr, user_key_ser)
                item = self._sized(value[1:], value_ser, info.name) if value[:1] == b"\x00" \
                    else StateValue(_label(value_ser), 0, None, True)          # a null value: its flag only
                per_key.setdefault(business_key, {})[str(user_key)] = item
            elif info.kind == "LIST":
                element = ser.children[0] if ser is not None and ser.kind == "list" else None
                items = self._delimited(value, element, info.name)
                per_key[business_key] = items
                if all(item.decoded for item in items):
                    self.state.counts.setdefault(info.name, {})[business_key] = len(items)
            else:
                per_key[business_key] = self._sized(value, ser, info.name).value

    def _delimited(self, value: bytes, element: Serializer | None, state: str) -> list[StateValue]:
        out: list[StateValue] = []
        r = ByteReader(value, 0, "keyed state list")
        while r.pos < len(value):
            start = r.pos
            try:
                if element is None:
                    raise Undecodable("its serializer snapshot was not read")
                item = read_value(r, element, self.generation)
                size = r.pos - start
                if r.pos < len(value) and r.u8() != _LIST_DELIMITER:
                    raise Undecodable(f"no list delimiter after an element at byte {r.pos - 1}")
            except CheckpointFormatError as exc:
                # the rest cannot be split into elements without decoding them: one value, named with its size
                self.state.unread.add(state)
                out.append(StateValue(_label(element), len(value) - start, why=_why(exc)))
                return out
            out.append(StateValue(_label(element), size, item, True))
        return out

    def _sized(self, raw: bytes, ser: Serializer | None, state: str) -> StateValue:
        try:
            if ser is None:
                raise Undecodable("its serializer snapshot was not read")
            r = ByteReader(raw, 0, "keyed state value")
            value = read_value(r, ser, self.generation)
            if r.pos != len(raw):
                raise Undecodable(f"{len(raw) - r.pos} bytes left after the value")
        except CheckpointFormatError as exc:
            self.state.unread.add(state)
            return StateValue(_label(ser), len(raw), why=_why(exc))
        return StateValue(_label(ser), len(raw), value, True)

    def _decode_or_none(self, r: ByteReader, ser: Serializer | None) -> Any:
        if ser is None:
            return None
        try:
            return read_value(r, ser, self.generation)
        except CheckpointFormatError:
            return None

    def _info(self, state_id: int, group: int) -> StateInfo:
        if state_id >= len(self.state.states):
            raise CheckpointFormatError(f"keyed state: key group {group} names state id {state_id}, "
                                        f"but the backend lists {len(self.state.states)} states")
        return self.state.states[state_id]

    # -- the heap layout
    def heap_group(self, offset: int, end: int, group: int) -> None:
        # positions below are within the key group's bytes (one copy per group, whatever the file's size)
        chunk = self.data[offset:end]
        r = ByteReader(chunk, 0, f"keyed state of key group {group}")
        if r.i32() != group:
            raise CheckpointFormatError(f"keyed state: key group {group}'s block at byte {offset} names another group")
        left = set(range(len(self.state.states)))
        stopped_at = None
        blocks = self._chain(chunk, r.pos, group, set(left))
        while blocks:
            for block in blocks:
                self._commit(block)
                left.discard(block.state_id)
            last = blocks[-1]
            if last.stopped is None:
                break
            name = stopped_at = self.state.states[last.state_id].name
            self.state.unread.add(name)
            found = self._resync(chunk, last.end, group, left) if left else (len(chunk), [])  # the last block: to the end
            skipped = (found[0] if found is not None else len(chunk)) - last.end
            self._size_the_one_skipped(name, last, skipped if found is not None else None)
            more = f"; {last.entries_left} more entries not read" if last.entries_left else ""
            self.state.not_read.append(f"{name} in key group {group} (key {last.first_key}): {last.stopped}; "
                                       f"{skipped} bytes without a length in a heap checkpoint skipped{more}")
            blocks = found[1] if found is not None else []
        lost = sorted(self.state.states[i].name for i in left if self.state.states[i].kind != "PRIORITY_QUEUE")
        if stopped_at is not None and lost:
            self.state.unread.update(lost)
            self.state.not_read.append(f"key group {group}: {', '.join(lost)} not found after {stopped_at}")

    def _chain(self, chunk: bytes, pos: int, group: int, left: set[int]) -> list[_Block]:
        """The state blocks from ``pos`` to the group's end or to one that stops at an undecodable value; bytes
        that are not blocks raise."""
        blocks: list[_Block] = []
        while pos < len(chunk):
            block = self._block(chunk, pos, group, left)
            blocks.append(block)
            left.discard(block.state_id)
            if block.stopped is not None:
                break
            pos = block.end
        return blocks

    def _size_the_one_skipped(self, name: str, block: _Block, skipped: int | None) -> None:
        """When the skipped bytes held exactly one undecodable list element (the block's last value), that is its
        size. (A map's entries after an undecodable value are not known, so a map value is never sized so.)"""
        if skipped is None or block.entries_left or block.first_key is None:
            return
        held = self.state.values[name].get(next(reversed(block.values), ""))
        if isinstance(held, list) and [v.size for v in held].count(None) == 1 and held[-1].size is None:
            held[-1] = replace(held[-1], size=skipped)

    def _commit(self, block: _Block) -> None:
        name = self.state.states[block.state_id].name
        self.state.values[name].update(block.values)
        self.state.counts.setdefault(name, {}).update(block.counts)

    def _block(self, chunk: bytes, pos: int, group: int, left: set[int]) -> _Block:
        """Parse one state block at ``pos`` of a key group's bytes; raise on bytes that are not one (an undecodable
        value stops it)."""
        r = ByteReader(chunk, pos, f"keyed state of key group {group}")
        state_id = r.u16()
        if state_id not in left:
            raise CheckpointFormatError(f"keyed state: key group {group} names state id {state_id} at byte {pos}, "
                                        f"not one of its {len(self.state.states)} states still to come")
        info = self.state.states[state_id]
        n = r.count("state entries")
        block = _Block(state_id, r.pos)
        for i in range(n):
            read_value(r, info.namespace or _VOID, self.generation)
            business_key = str(read_value(r, self.key, self.generation))
            if self._hash_group(business_key) != group:
                raise CheckpointFormatError(f"keyed state: key {business_key!r} at byte {r.pos} is not in key group "
                                            f"{group}")
            block.first_key = block.first_key or business_key
            try:
                block.values[business_key] = self._heap_value(r, info, business_key, block)
            except Undecodable as exc:
                block.stopped, block.end, block.entries_left = _why(exc), r.pos, n - i - 1
                return block
        block.end = r.pos
        return block

    def _heap_value(self, r: ByteReader, info: StateInfo, business_key: str, block: _Block) -> Any:
        ser = info.serializer
        if ser is None or info.kind == "PRIORITY_QUEUE":
            raise Undecodable("its serializer snapshot was not read" if ser is None else "timers are not read")
        if info.kind == "LIST" and ser.kind == "list":
            n = r.count("list elements")
            block.counts[business_key] = n
            element = ser.children[0]
            out: list[StateValue] = []
            try:
                for _ in range(n):
                    start = r.pos
                    item = read_value(r, element, self.generation)
                    out.append(StateValue(element.label, r.pos - start, item, True))
            except Undecodable as exc:
                # the count is known, the elements' ends are not: the rest are named, without a size
                block.values[business_key] = [*out, *[StateValue(element.label, None, why=_why(exc))] * (n - len(out))]
                raise
            return out
        if info.kind == "MAP" and ser.kind == "map":
            user_key_ser, value_ser = ser.children
            entries: dict[str, StateValue] = {}
            for _ in range(r.count("map entries")):
                user_key = str(read_value(r, user_key_ser, self.generation))
                if r.u8():
                    entries[user_key] = StateValue(value_ser.label, 0, None, True)
                    continue
                start = r.pos
                try:
                    item = read_value(r, value_ser, self.generation)
                except Undecodable as exc:
                    block.values[business_key] = {**entries, user_key: StateValue(value_ser.label, None, why=_why(exc))}
                    raise
                entries[user_key] = StateValue(value_ser.label, r.pos - start, item, True)
            return entries
        return read_value(r, ser, self.generation)

    def _resync(self, chunk: bytes, start: int, group: int, left: set[int]) -> tuple[int, list[_Block]] | None:
        """The first position after an undecodable value where the rest of the key group's blocks parse (to the
        group's end, or through at least one entry up to another undecodable value), with those blocks."""
        tags = re.compile(b"(?=" + b"|".join(re.escape(struct.pack(">H", i)) for i in sorted(left)) + b")", re.S)
        for m in tags.finditer(chunk, start, len(chunk) - 4):   # a block is at least a 2-byte id and a 4-byte count
            pos = m.start()
            try:
                blocks = self._chain(chunk, pos, group, set(left))
            except CheckpointFormatError:
                continue
            if blocks and (blocks[-1].stopped is None or sum(len(b.values) for b in blocks) > 0):
                return pos, blocks
        return None

    def _hash_group(self, business_key: str) -> int:
        if self.key.kind == "string":
            java_hash = java_string_hash(business_key)
        elif self.key.kind == "long":
            java_hash = java_long_hash(int(business_key))
        else:
            java_hash = int(business_key)
        return key_group(java_hash, self.max_parallelism)


def _undecoded(state: KeyedState, name: str) -> str:
    """One sentence for a state with values not decoded in the canonical layout, where each still has its size."""
    items = [v for per_key in state.values[name].values()
             for v in (per_key if isinstance(per_key, list) else per_key.values() if isinstance(per_key, dict) else ())
             if isinstance(v, StateValue) and not v.decoded]
    why = items[0].why if items else "its values were not decoded"
    return (f"{name}: {plural(len(items), 'value')} of {sum(v.size or 0 for v in items)} bytes in all not decoded, each "
            f"named with its size ({why})")


def _label(ser: Serializer | None) -> str:
    return ser.label if ser is not None else "an unknown serializer"


def _why(exc: CheckpointFormatError) -> str:
    return str(exc).removeprefix("keyed state: ")


def _savepoint_entries(data: bytes, offset: int) -> Iterator[tuple[int, bytes, bytes]]:
    """(state id, key bytes, value bytes) of one key group in the canonical savepoint layout."""
    r = ByteReader(data, offset, "keyed state")
    state_id = r.u16()
    while True:
        key = bytearray(r.take(r.count("key bytes")))
        value = r.take(r.count("value bytes"))
        if not key:
            raise CheckpointFormatError(f"keyed state: an empty key at byte {r.pos}")
        follows = bool(key[0] & 0x80)
        key[0] &= 0x7F
        yield state_id, bytes(key), value
        if follows:
            state_id = r.u16()
            if state_id == _END_OF_KEY_GROUP:
                return
