"""The Kryo encoding Flink's ``KryoSerializer`` writes for generic-type state: ``TypeInformation.of(Object.class)``
(the recovery marker), ``ActionTask`` and ``Event`` (the agent operator's pending tasks and buffered inputs).

Flink 1.x ships Kryo 2.24, Flink 2.x Kryo 5, both with references on. ``writeClassAndObject`` writes the class as
a varint (0 null, 1 a class name follows, n ≥ 2 the registered id n − 2, where Kryo's defaults are int 0,
String 1, float 2, boolean 3, byte 4, char 5, short 6, long 7, double 8), then for every class but the boxed
primitives a reference marker (0 null, 1 a new object, n ≥ 2 the object read as the (n − 2)-th, counted in the
order objects start), then the object. What is read: JDK maps and collections, boxed primitives and strings, and
the upstream classes :mod:`~agent_inspect.codec._kryo_layouts` lists, field by field (``FieldSerializer``). The
generations differ in the map and collection headers: Kryo 5 writes ``size + 1`` (a collection's with a flag bit
for "all elements of one class"), Kryo 2 ``size``; and in what a ``Class`` value adds after its name.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_inspect._errors import CheckpointFormatError
from agent_inspect.codec._kryo_layouts import LAYOUTS

__all__ = ["KRYO2", "KRYO5", "KryoObject", "read_kryo_object"]

KRYO2 = 2
"""Kryo generation 2 (Flink 1.x serializers), for :func:`read_kryo_object`."""
KRYO5 = 5
"""Kryo generation 5 (Flink 2.x serializers), for :func:`read_kryo_object`."""


@dataclass(frozen=True)
class KryoObject:
    """An object of a class Kryo wrote field by field: its Java class and its fields by name.

    For example::

        task = ai.checkpoint.read("tests/fixtures/checkpoints/production/savepoint").keyed.action_tasks["user-0009"][0]
        task.value.type_name, task.value.fields["action"].fields["name"]   # the task's class and its action's name
    """

    type_name: str
    fields: Mapping[str, Any] = field(default_factory=dict)


_MAPS = frozenset({"java.util.HashMap", "java.util.LinkedHashMap", "java.util.concurrent.ConcurrentHashMap"})
_LISTS = frozenset({"java.util.ArrayList", "java.util.LinkedList", "java.util.HashSet", "java.util.LinkedHashSet"})
_REGISTERED = {0: "int", 1: "string", 2: "float", 3: "boolean", 4: "byte", 5: "char", 6: "short", 7: "long",
               8: "double"}
_BOXED = frozenset(_REGISTERED.values()) - {"string"}   # written without a reference marker
_NEW = object()                                       # a reference marker's "a new object follows"


class _Kryo:
    __slots__ = ("data", "pos", "generation", "names", "seen")

    def __init__(self, data: bytes, pos: int, generation: int) -> None:
        self.data, self.pos, self.generation = data, pos, generation
        self.names: dict[int, str] = {}
        self.seen: list[Any] = []                      # objects by reference id, in the order they started

    def fail(self, why: str) -> CheckpointFormatError:
        return CheckpointFormatError(f"Kryo {self.generation} object at byte {self.pos}: {why}")

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise self.fail("truncated")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        result = shift = 0
        for _ in range(10):
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
        raise self.fail("malformed varint")

    def zigzag(self) -> int:
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def string(self) -> str | None:
        b = self.data[self.pos] if self.pos < len(self.data) else self.byte()
        if not b & 0x80:                               # ASCII: the last char has its high bit set
            start = self.pos
            while self.byte() & 0x80 == 0:
                pass
            raw = bytearray(self.data[start:self.pos])
            raw[-1] &= 0x7F
            return raw.decode("ascii", errors="replace")
        # UTF-8: a length (+1; 0 is null) whose first byte carries the 0x80 flag and 6 bits
        length = self.flagged_varint()
        if length == 0:
            return None
        chars = []
        for _ in range(length - 1):                    # Kryo writes chars as 1-3 byte UTF-8 sequences
            c = self.byte()
            if c >> 4 in (12, 13):
                c = (c & 0x1F) << 6 | self.byte() & 0x3F
            elif c >> 4 == 14:
                c = (c & 0x0F) << 12 | (self.byte() & 0x3F) << 6 | self.byte() & 0x3F
            chars.append(chr(c))
        return "".join(chars)

    def read_class(self) -> str | None:
        v = self.varint()
        if v == 0:
            return None
        if v == 1:
            name_id = self.varint()
            name = self.names.get(name_id)
            if name is None:
                name = self.string()
                if not name:
                    raise self.fail("empty class name")
                self.names[name_id] = name
            return name
        registered = _REGISTERED.get(v - 2)
        if registered is None:
            raise self.fail(f"class registered as id {v - 2}, which this reader does not know")
        return registered

    def read_class_and_object(self, generics: object = None) -> Any:
        """``writeClassAndObject``, and a field of a non-final declared type: the class, then the object."""
        cls = self.read_class()
        return None if cls is None else self.read_object(cls, generics)

    def read_object(self, cls: str, generics: object = None) -> Any:
        """``writeObject``: a reference marker (none for a boxed primitive), then the object."""
        if cls in _BOXED:
            return self.read_primitive(cls)
        found = self.reference()
        return self.read_new(cls, generics) if found is _NEW else found

    def read_object_or_null(self, cls: str, generics: object = None) -> Any:
        """``writeObjectOrNull``, and a field of a final declared type: a marker (0 null), then the object."""
        if cls in _BOXED:
            return self.read_primitive(cls) if self.varint() else None
        found = self.reference()
        return self.read_new(cls, generics) if found is _NEW else found

    def reference(self) -> Any:
        marker = self.varint()
        if marker == 0:
            return None
        if marker == 1:
            return _NEW
        if marker - 2 >= len(self.seen):
            raise self.fail(f"a reference to object {marker - 2}, but only {len(self.seen)} were read")
        return self.seen[marker - 2]

    def read_new(self, cls: str, generics: object) -> Any:
        slot = len(self.seen)
        self.seen.append(None)
        value = self.read_body(cls, generics)
        self.seen[slot] = value
        return value

    def read_body(self, cls: str, generics: object) -> Any:
        args = generics if isinstance(generics, tuple) else ()
        if cls == "string":
            return self.string()
        if cls in _MAPS:
            key_cls, value_cls = (*args, None, None)[:2]
            out: dict[Any, Any] = {}
            for _ in range(self.size()):
                k = self.read_object_or_null(key_cls) if isinstance(key_cls, str) else self.read_class_and_object()
                if not isinstance(k, (str, int, float, bool)) and k is not None:
                    raise self.fail(f"a map key of type {type(k).__name__}, which this reader does not key on")
                out[k] = self.read_object_or_null(value_cls) if isinstance(value_cls, str) \
                    else self.read_class_and_object()
            return out
        if cls in _LISTS:
            return self.read_collection(args[0] if args and isinstance(args[0], str) else None)
        if cls == "java.lang.Class[]":                # both generations: length + 1
            n = self.varint()
            if n == 0:
                raise self.fail("a null array inside an object")
            return [self.read_object_or_null("java.lang.Class") for _ in range(self.bounded(n - 1))]
        if cls == "java.lang.Class":
            name = self.read_class()
            if self.generation < KRYO5 or name in _REGISTERED.values():
                self.byte()                            # Kryo 2: "is primitive"; Kryo 5 only for primitives/boxes
            return name
        if cls == "java.util.UUID":                   # a serializer of its own in both: most, then least
            if self.generation >= KRYO5:               # significant bits, fixed 8-byte longs in Kryo 5,
                most, least = struct.unpack("<QQ", self.take(16))
            else:                                      # zig-zag varints in Flink 1.x's Kryo 2
                most, least = (self.zigzag() & (2**64 - 1) for _ in range(2))
            return str(uuid.UUID(int=most << 64 | least))
        layout = LAYOUTS.get(cls)
        if layout is None:
            raise self.fail(f"an object of class {cls}, which this reader does not decode")
        fields: dict[str, Any] = {}
        for name, kind, arg in layout:
            if kind == "object":
                fields[name] = self.read_class_and_object(arg)
            elif kind == "final":
                fields[name] = self.read_object_or_null(str(arg))
            else:
                fields[name] = self.byte() == 1 if kind == "boolean" else self.zigzag()
        return KryoObject(cls, fields)

    def read_collection(self, element: str | None) -> list[Any]:
        if self.generation < KRYO5:
            n = self.size()
            if element is not None:
                return [self.read_object_or_null(element) for _ in range(n)]
            return [self.read_class_and_object() for _ in range(n)]
        one_class, n = self.flagged_size()
        if element is not None:                        # the flag: some element is null
            return [self.read_object_or_null(element) if one_class else self.read_object(element) for _ in range(n)]
        if not one_class:
            return [self.read_class_and_object() for _ in range(n)]
        if n == 0:
            return []
        cls = self.read_class()
        if cls is None:
            return [None] * n
        nulls = self.byte() == 1
        return [self.read_object_or_null(cls) if nulls else self.read_object(cls) for _ in range(n)]

    def flagged_size(self) -> tuple[bool, int]:
        """Kryo 5's ``writeVarIntFlag``: a flag bit, then ``size + 1`` in the first byte's low 6 bits and on."""
        flag = bool(self.data[self.pos] & 0x80) if self.pos < len(self.data) else False
        value = self.flagged_varint()
        if value == 0:
            raise self.fail("a null collection inside an object")
        return flag, self.bounded(value - 1)

    def flagged_varint(self) -> int:
        """A varint whose first byte holds a flag (0x80, the caller's), a continuation bit (0x40) and 6 bits:
        Kryo's ``writeVarIntFlag``, and the length before a UTF-8 string."""
        first = self.byte()
        value, shift, more = first & 0x3F, 6, bool(first & 0x40)
        for _ in range(5):
            if not more:
                return value
            b = self.byte()
            value |= (b & 0x7F) << shift
            shift += 7
            more = bool(b & 0x80)
        raise self.fail("malformed varint")

    def size(self) -> int:
        n = self.varint()
        if self.generation >= KRYO5:
            if n == 0:
                raise self.fail("a null map inside an object")
            n -= 1
        return self.bounded(n)

    def bounded(self, n: int) -> int:
        if n > len(self.data) - self.pos:
            raise self.fail(f"a collection of {n} entries in {len(self.data) - self.pos} bytes")
        return n

    def read_primitive(self, cls: str) -> Any:
        if cls in ("int", "long"):
            return self.zigzag()
        order = "<" if self.generation >= KRYO5 else ">"   # Kryo 5 writes fixed-size values little-endian
        if cls == "short":
            return struct.unpack(order + "h", self.take(2))[0]
        if cls == "string":
            return self.string()
        if cls == "boolean":
            return self.byte() == 1
        if cls == "byte":
            return struct.unpack(">b", self.take(1))[0]
        if cls == "char":
            return chr(struct.unpack(order + "H", self.take(2))[0])
        if cls == "float":
            return struct.unpack(order + "f", self.take(4))[0]
        return struct.unpack(order + "d", self.take(8))[0]

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise self.fail("truncated")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out


def read_kryo_object(data: bytes, pos: int, generation: int) -> tuple[object, int]:
    """Read one ``writeClassAndObject`` at ``pos``: the value and the position after it.

    Undecodable input raises :class:`CheckpointFormatError` naming the byte and what was found.

    For example::

        ai.codec.read_kryo_object(b"\\x03\\x01h\\xe9", 0, ai.codec.KRYO5)   # ("hi", 4): a String (class, reference
                                                                      # marker, text) and the next position
        ai.codec.read_kryo_object(b"\\x02\\x54", 0, ai.codec.KRYO2)   # (42, 2): an int (zig-zag varint)
    """
    k = _Kryo(data, pos, generation)
    return k.read_class_and_object(), k.pos
