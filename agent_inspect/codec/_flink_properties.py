"""Whether the Java-serialized ``CheckpointProperties`` that end a ``_metadata`` file end where their object does.

Flink 1.20 and 2.x end ``_metadata`` with the properties written by Java's ``ObjectOutputStream``; a file cut
inside them still starts them with the stream magic, so only walking the stream to the end of its one object
tells a cut file from a whole one. The walk follows the grammar of Java's object serialization stream
protocol (type codes, class descriptors, handles, field values); it reads no value.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["properties_end"]

_NULL, _REFERENCE, _CLASSDESC, _OBJECT, _STRING, _ARRAY, _CLASS = 0x70, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76
_BLOCKDATA, _ENDBLOCKDATA, _RESET, _BLOCKDATALONG, _LONGSTRING, _PROXYCLASSDESC, _ENUM = (
    0x77, 0x78, 0x79, 0x7A, 0x7C, 0x7D, 0x7E)
_WRITE_METHOD, _SERIALIZABLE, _EXTERNALIZABLE, _BLOCK_DATA = 0x01, 0x02, 0x04, 0x08
#: bytes of each primitive field type code
_PRIMITIVE = {"B": 1, "C": 2, "D": 8, "F": 4, "I": 4, "J": 8, "S": 2, "Z": 1}
_MAGIC = b"\xac\xed\x00\x05"


class _Cut(Exception):
    """The stream ends inside a value."""


class _Unknown(Exception):
    """A construct this walk does not follow (the stream may still be whole)."""


@dataclass
class _ClassDesc:
    name: str
    flags: int
    fields: list[tuple[str, str]]          # (type code, class name of an object field or "")
    parent: _ClassDesc | None


class _Walk:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.handles: list[object] = []

    def take(self, n: int) -> bytes:
        if n < 0:
            raise _Unknown
        if self.pos + n > len(self.data):
            raise _Cut
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u8(self) -> int:
        return self.take(1)[0]

    def number(self, fmt: str) -> int:
        return int(struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0])

    def utf(self) -> str:
        return self.take(self.number(">H")).decode("utf-8", errors="replace")

    def content(self) -> object:
        """One value (an object, string, array, enum, class, reference or null); what it is, for a descriptor."""
        code = self.u8()
        if code == _NULL:
            return None
        if code == _REFERENCE:
            index = self.number(">i") - 0x7E0000
            if not 0 <= index < len(self.handles):
                raise _Unknown
            return self.handles[index]
        if code == _CLASSDESC:
            return self.new_class_desc()
        if code == _PROXYCLASSDESC:
            return self.proxy_class_desc()
        if code == _STRING:
            return self.handle(self.utf())
        if code == _LONGSTRING:
            return self.handle(self.take(self.number(">q")).decode("utf-8", errors="replace"))
        if code == _OBJECT:
            desc = self.class_desc()
            self.handle(None)
            self.class_data(desc)
            return None
        if code == _ENUM:
            self.class_desc()
            self.handle(None)
            self.content()                      # the constant's name
            return None
        if code == _ARRAY:
            self.array(self.class_desc())
            return None
        if code == _CLASS:
            self.class_desc()
            return self.handle(None)
        raise _Unknown

    def handle(self, value: object) -> object:
        self.handles.append(value)
        return value

    def class_desc(self) -> _ClassDesc | None:
        found = self.content()
        if found is not None and not isinstance(found, _ClassDesc):
            raise _Unknown
        return found

    def new_class_desc(self) -> _ClassDesc:
        name = self.utf()
        self.take(8)                            # serialVersionUID
        desc = _ClassDesc(name, 0, [], None)
        self.handle(desc)
        desc.flags = self.u8()
        for _ in range(self.number(">H")):
            code = chr(self.u8())
            self.utf()                          # the field's name
            desc.fields.append((code, "" if code in _PRIMITIVE else str(self.content())))
        self.annotation()
        desc.parent = self.class_desc()
        return desc

    def proxy_class_desc(self) -> _ClassDesc:
        desc = _ClassDesc("", _SERIALIZABLE, [], None)
        self.handle(desc)
        for _ in range(self.number(">i")):
            self.utf()                          # an interface's name
        self.annotation()
        desc.parent = self.class_desc()
        return desc

    def annotation(self) -> None:
        """Block data and values up to the end-of-block marker."""
        while True:
            code = self.data[self.pos:self.pos + 1]
            if not code:
                raise _Cut
            if code[0] == _ENDBLOCKDATA:
                self.pos += 1
                return
            if code[0] == _BLOCKDATA:
                self.pos += 1
                self.take(self.u8())
            elif code[0] == _BLOCKDATALONG:
                self.pos += 1
                self.take(self.number(">i"))
            elif code[0] == _RESET:
                self.pos += 1
            else:
                self.content()

    def class_data(self, desc: _ClassDesc | None) -> None:
        chain = []
        while desc is not None:
            chain.append(desc)
            desc = desc.parent
        for cls in reversed(chain):             # the top superclass's fields first
            if cls.flags & _EXTERNALIZABLE:
                if not cls.flags & _BLOCK_DATA:
                    raise _Unknown              # the old protocol: its length is the class's own business
                self.annotation()
                continue
            for code, _ in cls.fields:
                if code in _PRIMITIVE:
                    self.take(_PRIMITIVE[code])
                else:
                    self.content()
            if cls.flags & _WRITE_METHOD:
                self.annotation()

    def array(self, desc: _ClassDesc | None) -> None:
        self.handle(None)
        size = self.number(">i")
        element = desc.name[1:2] if desc is not None else "L"
        if element in _PRIMITIVE:
            self.take(size * _PRIMITIVE[element])
            return
        for _ in range(size):
            self.content()


def properties_end(data: bytes) -> int | None:
    """Where the one Java-serialized object that starts ``data`` ends; -1 when ``data`` ends inside it; None when
    the walk meets something it does not follow (nothing is then known)."""
    if not data.startswith(_MAGIC):
        return None
    walk = _Walk(data)
    walk.pos = len(_MAGIC)
    try:
        walk.content()
    except _Cut:
        return -1
    except (_Unknown, RecursionError):
        return None
    return walk.pos
