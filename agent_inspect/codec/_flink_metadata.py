"""Flink checkpoint ``_metadata`` files: the subset a restore of the agent operator needs (addendum §6).

Layout (Flink's ``Checkpoints`` / ``MetadataV2V3SerializerBase`` / ``MetadataV3..V6Serializer``): magic
``0x4960672D``, a format version, the checkpoint id, master states, then per operator its id, parallelism,
coordinator state and per subtask the managed/raw operator state handles, managed/raw keyed state handles
and the unaligned-checkpoint channel state. Versions 4+ append the Java-serialized
``CheckpointProperties``; 5+ put the operator's name and uid first; 6 changes the channel state
handles. Flink 1.20 writes version 4, Flink 2.x version 6.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from agent_inspect._errors import CheckpointFormatError
from agent_inspect.codec._flink_properties import properties_end

__all__ = ["MAGIC", "SUPPORTED_VERSIONS", "StreamHandle", "OperatorStateHandle", "KeyedStateHandle",
           "SubtaskState", "OperatorState", "CheckpointMetadata", "parse_metadata", "ByteReader"]

MAGIC = 0x4960672D
SUPPORTED_VERSIONS = (3, 4, 5, 6)

_MASTER_STATE_MAGIC = 0xC96B1696
# stream / keyed state handle type bytes
_NULL, _BYTES, _FILE, _KEY_GROUPS, _PARTITIONABLE, _INCREMENTAL, _RELATIVE, _SAVEPOINT_KEY_GROUPS = range(8)
_CHANGELOG, _CHANGELOG_BYTES, _CHANGELOG_FILE, _INCREMENTAL_V2, _KEY_GROUPS_V2 = 8, 9, 10, 11, 12
_CHANGELOG_FILE_V2, _CHANGELOG_V2 = 13, 14
_MODES = ("SPLIT_DISTRIBUTE", "UNION", "BROADCAST")


class ByteReader:
    """Big-endian reads over bytes, as Java's ``DataInputStream`` writes them; running past the end raises."""

    __slots__ = ("data", "pos", "what")

    def __init__(self, data: bytes, pos: int = 0, what: str = "_metadata") -> None:
        self.data, self.pos, self.what = data, pos, what

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise CheckpointFormatError(f"{self.what} is truncated: needed {n} bytes at byte {self.pos}, "
                                        f"{len(self.data)} in all")
        out = self.data[self.pos:end]
        self.pos = end
        return out

    def u8(self) -> int:
        if self.pos >= len(self.data):
            return self.take(1)[0]                     # raises, saying where
        self.pos += 1
        return self.data[self.pos - 1]

    def i16(self) -> int:
        return int(struct.unpack(">h", self.take(2))[0])

    def u16(self) -> int:
        return int(struct.unpack(">H", self.take(2))[0])

    def i32(self) -> int:
        return int(struct.unpack(">i", self.take(4))[0])

    def i64(self) -> int:
        return int(struct.unpack(">q", self.take(8))[0])

    def utf(self) -> str:
        """Java's ``writeUTF``: a 2-byte length, then modified UTF-8."""
        raw = self.take(self.u16())
        return raw.replace(b"\xc0\x80", b"\x00").decode("utf-8", errors="replace")

    def count(self, what: str, limit: int | None = None) -> int:
        n = self.i32()
        bound = len(self.data) - self.pos if limit is None else limit
        if n < 0 or n > bound:
            past_end = n >= 0 and limit is None  # more than the bytes left: most likely a cut-off file
            raise CheckpointFormatError(f"{self.what} is {'truncated or corrupt' if past_end else 'corrupt'}: {n} {what} "
                                        f"at byte {self.pos - 4}" + (f", {bound} bytes left" if past_end else ""))
        return n


@dataclass(frozen=True)
class StreamHandle:
    """Where some state bytes are: ``data`` inline in ``_metadata``, or a file at ``path``.

    ``relative`` paths (savepoints) are relative to the directory holding ``_metadata``.
    """

    data: bytes | None = None
    path: str | None = None
    size: int | None = None
    relative: bool = False


@dataclass(frozen=True)
class OperatorStateHandle:
    """One subtask's operator state: per state name, its distribution mode and element offsets."""

    states: dict[str, tuple[str, tuple[int, ...]]]
    stream: StreamHandle | None


@dataclass(frozen=True)
class KeyedStateHandle:
    """One subtask's keyed state: ``kind`` is ``"full"`` (key groups at ``offsets`` in ``stream``),
    ``"savepoint"`` (the same, canonical format), ``"incremental"`` or ``"changelog"`` (not read)."""

    kind: str
    key_groups: tuple[int, int]
    offsets: tuple[int, ...] = ()
    stream: StreamHandle | None = None


@dataclass(frozen=True)
class SubtaskState:
    index: int
    managed_operator: OperatorStateHandle | None = None
    raw_operator: OperatorStateHandle | None = None
    managed_keyed: KeyedStateHandle | None = None
    raw_keyed: KeyedStateHandle | None = None
    finished: bool = False


@dataclass(frozen=True)
class OperatorState:
    operator_id: str
    parallelism: int
    max_parallelism: int
    name: str | None = None
    uid: str | None = None
    subtasks: tuple[SubtaskState, ...] = ()
    finished: bool = False


@dataclass(frozen=True)
class CheckpointMetadata:
    """The parsed ``_metadata``: format ``version``, ``checkpoint_id``, operators, and the savepoint flag
    read from the trailing checkpoint properties (None when the version has none)."""

    version: int
    checkpoint_id: int
    operators: tuple[OperatorState, ...]
    savepoint: bool | None = None
    properties: bytes = field(default=b"", repr=False)


def parse_metadata(data: bytes) -> CheckpointMetadata:
    """Parse a ``_metadata`` file; bad or truncated input raises :class:`CheckpointFormatError` (a file cut inside
    its trailing checkpoint properties too: they must end where their one Java object does).

    For example::

        data = open("tests/fixtures/checkpoints/production/checkpoints/chk-4/_metadata", "rb").read()
        meta = ai.codec.parse_metadata(data)
        meta.checkpoint_id, meta.version, len(meta.operators)
    """
    r = ByteReader(data)
    if len(data) < 8:
        raise CheckpointFormatError(f"_metadata is truncated: {len(data)} bytes, not even the header")
    magic = r.i32() & 0xFFFFFFFF
    if magic != MAGIC:
        raise CheckpointFormatError(f"not a Flink checkpoint _metadata file: magic number {magic:#010x}, "
                                    f"expected {MAGIC:#010x}")
    version = r.i32()
    if version not in SUPPORTED_VERSIONS:
        raise CheckpointFormatError(f"unknown checkpoint metadata version {version}: this reader knows versions "
                                    f"{', '.join(map(str, SUPPORTED_VERSIONS))} (Flink 1.11 to 2.x)")
    checkpoint_id = r.i64()
    if checkpoint_id < 0:
        raise CheckpointFormatError(f"_metadata is corrupt: checkpoint id {checkpoint_id}")
    for _ in range(r.count("master states")):
        if r.i32() & 0xFFFFFFFF != _MASTER_STATE_MAGIC:
            raise CheckpointFormatError(f"_metadata is corrupt: bad master state magic at byte {r.pos - 4}")
        r.take(r.count("master state bytes"))
    operators = tuple(_operator(r, version) for _ in range(r.count("operators")))
    properties = data[r.pos:]
    savepoint = None
    if version >= 4:
        if not properties.startswith(b"\xac\xed\x00\x05"):
            raise CheckpointFormatError(f"_metadata is truncated or corrupt: version {version} ends with the "
                                        f"Java-serialized checkpoint properties, found "
                                        f"{properties[:8].hex() or 'nothing'} at byte {r.pos}")
        if properties_end(properties) == -1:
            raise CheckpointFormatError(f"_metadata is truncated: it ends inside the checkpoint properties that start "
                                        f"at byte {r.pos}, {len(data)} bytes in all")
        savepoint = b"SavepointType" in properties
    return CheckpointMetadata(version, checkpoint_id, operators, savepoint, properties)


def _operator(r: ByteReader, version: int) -> OperatorState:
    name = uid = None
    if version >= 5:
        name, uid = r.utf() or None, r.utf() or None
    low, high = r.i64(), r.i64()
    operator_id = struct.pack(">qq", high, low).hex()   # Flink prints upper part first
    parallelism, max_parallelism = r.i32(), r.i32()
    if parallelism <= 0 or max_parallelism <= 0:
        raise CheckpointFormatError(f"_metadata is corrupt: operator {operator_id} has parallelism "
                                    f"{parallelism}/{max_parallelism}")
    coordinator = _stream(r)
    if coordinator is not None and coordinator.data is None:
        raise CheckpointFormatError(f"_metadata is corrupt: operator {operator_id}'s coordinator state is not inline")
    n = r.i32()
    if n < 0:
        return OperatorState(operator_id, parallelism, max_parallelism, name, uid, (), finished=True)
    if n > len(r.data) - r.pos:
        raise CheckpointFormatError(f"_metadata is corrupt: {n} subtask states at byte {r.pos - 4}")
    subtasks = []
    for _ in range(n):
        stored = r.i32()
        if stored < 0:
            subtasks.append(SubtaskState(-stored - 1, finished=True))
            continue
        subtasks.append(_subtask(r, stored))
    return OperatorState(operator_id, parallelism, max_parallelism, name, uid, tuple(subtasks))


def _subtask(r: ByteReader, index: int) -> SubtaskState:
    managed_op = _operator_handle(r) if r.i32() != 0 else None
    raw_op = _operator_handle(r) if r.i32() != 0 else None
    managed_keyed = _keyed_handle(r)
    raw_keyed = _keyed_handle(r)
    channels = r.count("input channel state handles")
    if channels:
        raise CheckpointFormatError(f"subtask {index} holds {channels} in-flight channel state handles (an unaligned "
                                    "checkpoint): this reader does not read those; take an aligned checkpoint or a "
                                    "savepoint")
    channels = r.count("result subpartition state handles")
    if channels:
        raise CheckpointFormatError(f"subtask {index} holds {channels} in-flight channel state handles (an unaligned "
                                    "checkpoint): this reader does not read those; take an aligned checkpoint or a "
                                    "savepoint")
    return SubtaskState(index, managed_op, raw_op, managed_keyed, raw_keyed)


def _operator_handle(r: ByteReader) -> OperatorStateHandle | None:
    kind = r.u8()
    if kind == _NULL:
        return None
    if kind != _PARTITIONABLE:
        raise CheckpointFormatError(f"_metadata is corrupt: operator state handle type {kind} at byte {r.pos - 1}")
    states: dict[str, tuple[str, tuple[int, ...]]] = {}
    for _ in range(r.count("operator states")):
        name = r.utf()
        mode = r.u8()
        if mode >= len(_MODES):
            raise CheckpointFormatError(f"_metadata is corrupt: distribution mode {mode} for state {name!r}")
        n = r.count("state offsets", (len(r.data) - r.pos) // 8)
        offsets = struct.unpack(f">{n}q", r.take(8 * n))
        states[name] = (_MODES[mode], tuple(int(o) for o in offsets))
    return OperatorStateHandle(states, _stream(r))


def _stream(r: ByteReader) -> StreamHandle | None:
    kind = r.u8()
    if kind == _NULL:
        return None
    if kind == _FILE:
        size = r.i64()
        return StreamHandle(path=r.utf(), size=size)
    if kind == _BYTES:
        r.utf()                                        # the handle's name
        return StreamHandle(data=r.take(r.count("inline state bytes")))
    if kind == _RELATIVE:
        path = r.utf()
        return StreamHandle(path=path, size=r.i64(), relative=True)
    if kind == _KEY_GROUPS:                            # a key-groups handle used as a stream: its delegate
        _key_group_offsets(r)
        return _stream(r)
    raise CheckpointFormatError(f"_metadata is corrupt: stream state handle type {kind} at byte {r.pos - 1}")


def _key_group_offsets(r: ByteReader) -> tuple[tuple[int, int], tuple[int, ...]]:
    start, n = r.i32(), r.count("key groups", (len(r.data) - r.pos) // 8)
    return (start, start + n - 1), tuple(int(o) for o in struct.unpack(f">{n}q", r.take(8 * n)))


def _keyed_handle(r: ByteReader) -> KeyedStateHandle | None:
    kind = r.u8()
    if kind == _NULL:
        return None
    if kind in (_KEY_GROUPS, _KEY_GROUPS_V2, _SAVEPOINT_KEY_GROUPS):
        groups, offsets = _key_group_offsets(r)
        stream = _stream(r)
        if kind == _KEY_GROUPS_V2:
            r.utf()                                    # state handle id
        return KeyedStateHandle("savepoint" if kind == _SAVEPOINT_KEY_GROUPS else "full", groups, offsets, stream)
    if kind in (_INCREMENTAL, _INCREMENTAL_V2):
        r.i64()
        r.utf()
        start, n = r.i32(), r.i32()
        if kind == _INCREMENTAL_V2:
            r.i64()
        _stream(r)
        for _ in range(2):                             # shared, then private files
            for _ in range(r.count("incremental state files")):
                r.utf()
                _stream(r)
        if kind == _INCREMENTAL_V2:
            r.utf()
        return KeyedStateHandle("incremental", (start, start + n - 1))
    if kind in (_CHANGELOG, _CHANGELOG_V2):
        start, n = r.i32(), r.i32()
        r.i64()
        for _ in range(r.count("materialized handles")):
            _keyed_handle(r)
        for _ in range(r.count("changelog handles")):
            _keyed_handle(r)
        r.i64()
        if kind == _CHANGELOG_V2:
            r.i64()
        r.utf()
        return KeyedStateHandle("changelog", (start, start + n - 1))
    if kind == _CHANGELOG_BYTES:
        start, n = r.i32(), r.i32()
        r.i64()
        r.i64()
        for _ in range(r.count("changelog changes")):
            r.i32()
            r.take(r.count("changelog change bytes"))
        r.utf()
        return KeyedStateHandle("changelog", (start, start + n - 1))
    if kind in (_CHANGELOG_FILE, _CHANGELOG_FILE_V2):
        start, n = r.i32(), r.i32()
        for _ in range(r.count("changelog files")):
            r.i64()
            _stream(r)
        r.i64()
        r.i64()
        r.utf()
        if kind == _CHANGELOG_FILE_V2:
            r.utf()
        return KeyedStateHandle("changelog", (start, start + n - 1))
    raise CheckpointFormatError(f"_metadata is corrupt: keyed state handle type {kind} at byte {r.pos - 1}")
