"""The Kryo encoding Flink's ``KryoSerializer`` writes for ``TypeInformation.of(Object.class)`` state.

Only what a recovery marker needs: ``writeClassAndObject`` of ``java.util.HashMap`` (and the other JDK maps
and lists), ``Integer``, ``Long``, ``String`` and the other boxed primitives. Flink 1.x ships Kryo 2.24,
Flink 2.x Kryo 5; both write a class as a varint (0 null, 1 a class name follows, n ≥ 2 the registered id
n − 2, where Kryo's defaults are int 0, String 1, float 2, boolean 3, byte 4, char 5, short 6, long 7,
double 8), then a reference marker for non-wrapper types (Flink turns references on), then the object.
The one difference that matters here: Kryo 5's map and collection serializers write ``size + 1``
(0 is null), Kryo 2's write ``size``.
"""

from __future__ import annotations

import struct
from typing import Any

from agent_inspect._errors import CheckpointFormatError

__all__ = ["KRYO2", "KRYO5", "read_kryo_object"]

KRYO2 = 2
"""Kryo generation 2 (Flink 1.x serializers), for :func:`read_kryo_object`."""
KRYO5 = 5
"""Kryo generation 5 (Flink 2.x serializers), for :func:`read_kryo_object`."""

_MAPS = frozenset({"java.util.HashMap", "java.util.LinkedHashMap", "java.util.TreeMap",
                   "java.util.concurrent.ConcurrentHashMap"})
_LISTS = frozenset({"java.util.ArrayList", "java.util.LinkedList", "java.util.HashSet",
                    "java.util.LinkedHashSet"})
_REGISTERED = {0: "int", 1: "string", 2: "float", 3: "boolean", 4: "byte", 5: "char", 6: "short", 7: "long",
               8: "double"}


class _Kryo:
    __slots__ = ("data", "pos", "generation", "names")

    def __init__(self, data: bytes, pos: int, generation: int) -> None:
        self.data, self.pos, self.generation = data, pos, generation
        self.names: dict[int, str] = {}

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
        self.pos += 1
        length = b & 0x3F
        if b & 0x40:
            shift, more = 6, True
            while more:
                nb = self.byte()
                length |= (nb & 0x7F) << shift
                shift += 7
                more = bool(nb & 0x80)
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

    def read_class_and_object(self) -> Any:
        cls = self.read_class()
        if cls is None:
            return None
        if cls in _REGISTERED.values():
            return self.read_primitive(cls)
        marker = self.varint()                         # reference: 0 null, 1 a new object, n ≥ 2 a back-reference
        if marker == 0:
            return None
        if marker != 1:
            raise self.fail(f"a back-reference ({marker - 2}), which this reader does not follow")
        if cls in _MAPS:
            n = self.size()
            out: dict[Any, Any] = {}
            for _ in range(n):
                k = self.read_class_and_object()
                out[k] = self.read_class_and_object()
            return out
        if cls in _LISTS:
            return [self.read_class_and_object() for _ in range(self.size())]
        raise self.fail(f"an object of class {cls}, which this reader does not decode")

    def size(self) -> int:
        n = self.varint()
        if self.generation >= KRYO5:
            if n == 0:
                raise self.fail("a null map inside an object")
            n -= 1
        if n > len(self.data) - self.pos:
            raise self.fail(f"a collection of {n} entries in {len(self.data) - self.pos} bytes")
        return n

    def read_primitive(self, cls: str) -> Any:
        if cls in ("int", "long", "short"):
            return self.zigzag() if cls != "short" else struct.unpack(">h", self.take(2))[0]
        if cls == "string":
            return self.string()
        if cls == "boolean":
            return self.byte() == 1
        if cls == "byte":
            return struct.unpack(">b", self.take(1))[0]
        if cls == "char":
            return chr(struct.unpack(">H", self.take(2))[0])
        if cls == "float":
            return struct.unpack(">f", self.take(4))[0]
        return struct.unpack(">d", self.take(8))[0]

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

        ai.codec.read_kryo_object(b"\\x03h\\xe9", 0, ai.codec.KRYO5)   # ("hi", 3): a String, and the next position
        ai.codec.read_kryo_object(b"\\x02\\x54", 0, ai.codec.KRYO2)   # (42, 2): an int (zig-zag varint)
    """
    k = _Kryo(data, pos, generation)
    return k.read_class_and_object(), k.pos
