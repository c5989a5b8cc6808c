"""Flink type serializer snapshots as a keyed-state backend writes them, and the values those serializers write.

A state's meta info holds, per serializer role, ``TypeSerializerSnapshot.writeVersionedSnapshot``: the snapshot
class name (``writeUTF``), its version (int), then the class's own content. The content has no length, so each
class this module knows is read by its layout, and any other class ends the read with
:class:`UnknownSerializer` naming it:

- simple snapshots (``LongSerializer``, ``StringSerializer``, ``VoidNamespaceSerializer`` …): no content;
- composite snapshots (``ListSerializer``, ``MapSerializer``, ``TimerSerializer``): a magic int, the outer
  version, then the nested snapshots (a magic int, a version, a count, each snapshot);
- ``PojoSerializerSnapshot``: the class name, then three "optional maps" (a long header, a count, per entry a
  name and length-framed key and value): the fields with their snapshots, then the registered and
  non-registered subclasses;
- ``KryoSerializerSnapshot``: the class name, then three optional maps (registrations, default serializers).

:func:`read_value` reads one value the way the serializer writes it. Kryo values are decoded where they are
JDK collections, boxed primitives and strings, or the upstream classes whose fields the reader knows
(:func:`~agent_inspect.codec.read_kryo_object`); other classes raise :class:`Undecodable`, since a Kryo object
does not say its own fields.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent_inspect._errors import CheckpointFormatError
from agent_inspect.codec._flink_metadata import ByteReader
from agent_inspect.codec._kryo import read_kryo_object

__all__ = ["Serializer", "Undecodable", "UnknownSerializer", "read_serializer_snapshot", "read_value",
           "read_flink_string", "simple_serializer"]

_COMPOSITE_MAGIC = 0x000DE704
_NESTED_MAGIC = 0x001457FD
_OPTIONAL_MAP_HEADER = 0x4F2C69A3D70

# snapshot class (short name) → the value kind it writes; simple snapshots carry no content
_SIMPLE = {
    "LongSerializer$LongSerializerSnapshot": "long", "IntSerializer$IntSerializerSnapshot": "int",
    "StringSerializer$StringSerializerSnapshot": "string", "BooleanSerializer$BooleanSerializerSnapshot": "boolean",
    "DoubleSerializer$DoubleSerializerSnapshot": "double", "FloatSerializer$FloatSerializerSnapshot": "float",
    "ShortSerializer$ShortSerializerSnapshot": "short", "ByteSerializer$ByteSerializerSnapshot": "byte",
    "CharSerializer$CharSerializerSnapshot": "char",
    "VoidNamespaceSerializer$VoidNamespaceSerializerSnapshot": "void",
    "BytePrimitiveArraySerializer$BytePrimitiveArraySerializerSnapshot": "bytes",
}
_COMPOSITE = {"ListSerializerSnapshot": "list", "MapSerializerSnapshot": "map", "TimerSerializerSnapshot": "timer"}
_FIXED = {"long": ">q", "int": ">i", "double": ">d", "float": ">f", "short": ">h", "byte": ">b"}


class UnknownSerializer(CheckpointFormatError):
    """A serializer snapshot class this reader does not know, so the bytes after it cannot be followed."""


class Undecodable(CheckpointFormatError):
    """A value this reader does not decode (a Kryo object of an application class, a POJO subclass …)."""


@dataclass(frozen=True)
class Serializer:
    """What a serializer snapshot says about the values: ``kind`` (long, string, list, map, pojo, kryo …),
    its ``children`` (a list's element, a map's key and value, a POJO's fields in serialization order, named
    by ``fields``) and ``type_name``, the class of a POJO or Kryo type."""

    kind: str
    snapshot: str
    children: tuple[Serializer, ...] = ()
    fields: tuple[str, ...] = ()
    type_name: str | None = None

    @property
    def label(self) -> str:
        """In words: ``Long``, ``POJO CheckpointGen$ActionTask``, ``Kryo …Event``, ``List<…>``."""
        if self.kind in ("pojo", "kryo"):
            return f"{'POJO' if self.kind == 'pojo' else 'Kryo'} {self.type_name}"
        if self.kind in ("list", "map"):
            return f"{self.kind.capitalize()}<{', '.join(c.label for c in self.children)}>"
        return self.kind.capitalize() if self.kind != "unknown" else self.snapshot

    @property
    def decodable(self) -> bool:
        """Whether every value it writes can be read (a Kryo value only perhaps: see :func:`read_value`)."""
        return self.kind != "unknown" and all(c.decodable for c in self.children)


def simple_serializer(snapshot_class: str) -> Serializer | None:
    """The serializer of a simple snapshot class (``…LongSerializer$LongSerializerSnapshot``), else None."""
    short = snapshot_class.rsplit(".", 1)[-1]
    return Serializer(_SIMPLE[short], short) if short in _SIMPLE else None


def read_serializer_snapshot(r: ByteReader) -> Serializer:
    """Read one ``writeVersionedSnapshot`` at the reader's position."""
    cls = r.utf()
    r.i32()                                            # the snapshot's version
    short = cls.rsplit(".", 1)[-1]
    simple = simple_serializer(short)
    if simple is not None:
        return simple
    if short in _COMPOSITE:
        if r.i32() != _COMPOSITE_MAGIC:
            raise CheckpointFormatError(f"keyed state: {short} at byte {r.pos - 4} lacks the composite snapshot magic")
        r.i32()                                        # the outer snapshot's version; these three write no outer data
        return Serializer(_COMPOSITE[short], short, _nested(r))
    if short == "PojoSerializerSnapshot":
        type_name = r.utf()
        fields = _optional_map(r, value=lambda b: read_serializer_snapshot(ByteReader(b, 0, "keyed state")))
        _optional_map(r, value=None)                   # registered subclasses
        _optional_map(r, value=None)                   # non-registered subclasses
        names = tuple(name for name, _ in fields)
        children = tuple(s if s is not None else Serializer("unknown", "a removed field") for _, s in fields)
        return Serializer("pojo", short, children, names, type_name)
    if short == "KryoSerializerSnapshot":
        type_name = r.utf()
        for _ in range(3):                             # registrations, default serializers, their classes
            _optional_map(r, value=None)
        return Serializer("kryo", short, type_name=type_name)
    raise UnknownSerializer(f"keyed state: serializer snapshot {cls} (at byte {r.pos}) is not one this reader knows")


def _nested(r: ByteReader) -> tuple[Serializer, ...]:
    if r.i32() != _NESTED_MAGIC:
        raise CheckpointFormatError(f"keyed state: nested serializer snapshots at byte {r.pos - 4} lack their magic")
    r.i32()
    return tuple(read_serializer_snapshot(r) for _ in range(r.count("nested serializers", 64)))


def _optional_map(r: ByteReader, value: Callable[[bytes], Serializer] | None) -> list[tuple[str, Serializer | None]]:
    """Flink's ``LinkedOptionalMapSerializer``: a header, a count, per entry a name and framed key and value."""
    if r.i64() != _OPTIONAL_MAP_HEADER:
        raise CheckpointFormatError(f"keyed state: a POJO/Kryo snapshot map at byte {r.pos - 8} lacks its header")
    out: list[tuple[str, Serializer | None]] = []
    for _ in range(r.count("snapshot map entries", 4096)):
        name = r.utf()
        if r.u8():
            r.take(r.count("framed bytes"))            # the key (a field's declaring class and name, a class)
        snapshot = None
        if r.u8():
            framed = r.take(r.count("framed bytes"))
            snapshot = value(framed) if value is not None else None
        out.append((name, snapshot))
    return out


def read_flink_string(r: ByteReader) -> str | None:
    """Flink's ``StringValue.writeString`` (``StringSerializer``): a varint length + 1, then varint chars."""
    length = _varint(r)
    if length == 0:
        return None
    n = length - 1
    raw = r.data[r.pos:r.pos + n]
    if len(raw) == n and raw.isascii():                # every char below 0x80 is one byte: the common case
        r.pos += n
        return raw.decode("ascii")
    chars = [_varint(r) for _ in range(n)]
    if any(c > 0xFFFF for c in chars):                 # Java chars are 16 bits: these bytes are not a string
        raise CheckpointFormatError(f"{r.what}: a string character above U+FFFF at byte {r.pos}")
    return "".join(map(chr, chars))


def _varint(r: ByteReader) -> int:
    value = shift = 0
    while True:
        b = r.u8()
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value
        shift += 7
        if shift > 35:
            raise CheckpointFormatError(f"{r.what}: malformed string length at byte {r.pos}")


def read_value(r: ByteReader, serializer: Serializer, kryo_generation: int) -> Any:
    """Read one value as ``serializer`` writes it. A POJO becomes a dict of its fields; a value this reader
    cannot follow raises :class:`Undecodable` (the reader's position is then undefined)."""
    kind = serializer.kind
    if kind in _FIXED:
        return struct.unpack(_FIXED[kind], r.take(struct.calcsize(_FIXED[kind])))[0]
    if kind == "string":
        return read_flink_string(r)
    if kind == "boolean":
        return r.u8() != 0
    if kind == "char":
        return chr(r.u16())
    if kind == "void":
        r.u8()
        return None
    if kind == "bytes":
        return r.take(r.count("byte array bytes"))
    if kind == "list":
        return [read_value(r, serializer.children[0], kryo_generation) for _ in range(r.count("list elements"))]
    if kind == "map":
        out: dict[Any, Any] = {}
        for _ in range(r.count("map entries")):
            key = read_value(r, serializer.children[0], kryo_generation)
            out[key] = None if r.u8() else read_value(r, serializer.children[1], kryo_generation)
        return out
    if kind == "pojo":
        return _read_pojo(r, serializer, kryo_generation)
    if kind == "kryo":
        try:
            value, r.pos = read_kryo_object(r.data, r.pos, kryo_generation)
        except CheckpointFormatError as exc:
            raise Undecodable(f"{serializer.label}: {exc}") from None
        return value
    raise Undecodable(f"values of {serializer.label} are not decoded")


def _read_pojo(r: ByteReader, serializer: Serializer, kryo_generation: int) -> dict[str, Any] | None:
    flags = r.u8()
    if flags & 1:                                      # IS_NULL
        return None
    if flags != 2:                                     # a subclass, written by its own serializer
        raise Undecodable(f"{serializer.label}: a subclass value (POJO flags {flags:#04x}) is not decoded")
    out: dict[str, Any] = {}
    for name, field in zip(serializer.fields, serializer.children):
        out[name] = None if r.u8() else read_value(r, field, kryo_generation)
    return out
