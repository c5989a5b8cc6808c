"""Jackson-exact JSON writing: the bytes upstream hashes (sorted) and writes (unsorted)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import msgspec

from agent_inspect._errors import DecodeError

__all__ = ["canonical_json", "jackson_json", "java_double", "parse_json"]

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
for _c in range(0x20):
    _ESCAPES.setdefault(chr(_c), f"\\u{_c:04X}")  # Jackson writes uppercase hex
for _c in range(0xD800, 0xE000):   # a lone surrogate (a pair is one character here): escaped, as Jackson's
    _ESCAPES[chr(_c)] = f"\\u{_c:04X}"  # UTF8JsonGenerator writes it, so the bytes stay valid UTF-8
_ESCAPE_TABLE = str.maketrans(_ESCAPES)
_BEYOND_BMP = re.compile("[\U00010000-\U0010FFFF]")


def _surrogate_pair_escape(match: re.Match[str]) -> str:
    units = match.group().encode("utf-16-be")
    return f"\\u{units[:2].hex().upper()}\\u{units[2:].hex().upper()}"


def _quoted(text: str) -> str:
    # Jackson 2's UTF8JsonGenerator (writeValueAsBytes: the value and the event-UUID bytes) writes a character
    # beyond U+FFFF as its two UTF-16 surrogates, each escaped in uppercase hex (COMBINE_UNICODE_SURROGATES_IN_UTF8
    # is off by default); every other non-ASCII character goes out as raw UTF-8.
    escaped = text.translate(_ESCAPE_TABLE)
    if escaped.isascii():
        return '"' + escaped + '"'
    return '"' + _BEYOND_BMP.sub(_surrogate_pair_escape, escaped) + '"'


def _utf16_key(text: str) -> bytes:
    # Java String.compareTo compares UTF-16 code units; UTF-16-BE bytes sort the same way.
    return text.encode("utf-16-be", "surrogatepass")


def java_double(value: float) -> str:
    """Java ``Double.toString`` text of ``value`` (shortest round-trip digits, JDK 19+).

    For example::

        ai.codec.java_double(1e21), ai.codec.java_double(0.1)   # "1.0E21", "0.1"
    """
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    _, digit_tuple, finite_exp = Decimal(repr(abs(value))).as_tuple()
    exp = int(finite_exp)  # finite here: NaN and infinities returned above
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    exp += len("".join(map(str, digit_tuple))) - len(digits)
    sci_exp = len(digits) - 1 + exp  # value = d.ddd × 10^sci_exp
    if len(digits) == 1:
        # JDK 19+ considers 2-digit decimals too when 1 digit suffices, and takes the closest (4.9E-324).
        exact = Decimal(abs(value))
        two = exact.scaleb(-sci_exp).quantize(Decimal("0.1")).scaleb(sci_exp)
        if float(two) == abs(value) and abs(two - exact) < abs(Decimal(f"{digits}E{sci_exp}") - exact):
            _, t_digits, t_exp = two.normalize().as_tuple()
            digits = "".join(map(str, t_digits))
            sci_exp = len(digits) - 1 + int(t_exp)
    if 1e-3 <= abs(value) < 1e7:
        point = sci_exp + 1
        if point <= 0:
            text = "0." + "0" * (-point) + digits
        elif point >= len(digits):
            text = digits + "0" * (point - len(digits)) + ".0"
        else:
            text = digits[:point] + "." + digits[point:]
    else:
        text = f"{digits[0]}.{digits[1:] or '0'}E{sci_exp}"
    return sign + text


def _write(obj: Any, out: list[str], sort: bool) -> None:
    if obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif isinstance(obj, str):
        out.append(_quoted(obj))
    elif isinstance(obj, int):
        out.append(str(int(obj)))
    elif isinstance(obj, float):
        out.append(java_double(obj))
    elif isinstance(obj, Mapping):
        items = [(str(k), v) for k, v in obj.items()]
        if sort:
            items.sort(key=lambda kv: _utf16_key(kv[0]))
        out.append("{")
        for i, (k, v) in enumerate(items):
            if i:
                out.append(",")
            out.append(_quoted(k) + ":")
            _write(v, out, sort)
        out.append("}")
    elif isinstance(obj, (list, tuple)):
        out.append("[")
        for i, v in enumerate(obj):
            if i:
                out.append(",")
            _write(v, out, sort)
        out.append("]")
    elif isinstance(obj, msgspec.Raw):
        _write(parse_json(bytes(obj)), out, sort)
    elif isinstance(obj, (bytes, bytearray)):
        import base64

        out.append('"' + base64.b64encode(bytes(obj)).decode("ascii") + '"')
    else:
        raise TypeError(f"cannot write {type(obj).__name__} as JSON; pass JSON-native values")


# an escaped surrogate with no partner: a high one not followed by a low one, or a low one not after a high one
_LONE_SURROGATE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
                             r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_LONE_SURROGATE_BYTES = re.compile(_LONE_SURROGATE.pattern.encode("ascii"))


def has_lone_surrogate(data: bytes | str) -> bool:
    """Whether ``data`` holds an escaped lone UTF-16 surrogate (``\\uD800``): valid JSON that upstream's Jackson
    writes for a Java string cut inside a surrogate pair, and that msgspec refuses."""
    if isinstance(data, str):
        return _LONE_SURROGATE.search(data) is not None
    return _LONE_SURROGATE_BYTES.search(data) is not None


def parse_json(data: bytes | str) -> Any:
    """Parse JSON keeping the int/float token distinction and arbitrarily large integers."""
    try:
        try:
            return msgspec.json.decode(data)
        except msgspec.ValidationError:  # integers beyond 64 bits
            return json.loads(data)
        except msgspec.DecodeError:
            if not has_lone_surrogate(data):
                raise
            return json.loads(data)      # msgspec refuses an escaped lone surrogate; the stdlib keeps it
    except (msgspec.DecodeError, ValueError, RecursionError) as exc:
        raise DecodeError(f"not valid JSON ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") \
            from None


def canonical_json(obj: Any) -> bytes:
    """The bytes upstream's sorted Jackson mapper writes for ``obj`` (spec §4.3.1).

    ``obj`` is parsed JSON (dicts, lists, str, int, float, bool, None) or raw JSON bytes /
    ``msgspec.Raw``. Keys are sorted by UTF-16 code units at every depth; strings are escaped
    as Jackson does; floats use Java ``Double.toString``.

    For example::

        ai.codec.canonical_json({"b": 1.0, "a": "x"})   # b'{"a":"x","b":1.0}': sorted, Java doubles
    """
    if isinstance(obj, (bytes, bytearray, memoryview)):
        data = bytes(obj)
        quick = _sorted_by_msgspec(data)
        if quick is not None:
            return quick
        obj = parse_json(data)
    out: list[str] = []
    _write(obj, out, True)
    return "".join(out).encode("utf-8", "surrogatepass")


class _Float(Exception):
    pass


def _no_floats(text: str) -> Any:
    raise _Float


_WITHOUT_FLOATS = msgspec.json.Decoder(float_hook=_no_floats)

_OUTSIDE_BMP = re.compile(b"[\xf0-\xf4]")   # the lead byte of a UTF-8 character beyond U+FFFF


def _sorted_by_msgspec(data: bytes) -> bytes | None:
    """msgspec's sorted encoding of ``data``, where it is byte for byte what :func:`_write` gives (else None):
    no float (Java's ``Double.toString`` differs), no ``\\u`` escape (msgspec writes its hex in lower case,
    Jackson in upper), and no character beyond U+FFFF (Jackson escapes it as a surrogate pair, msgspec writes it
    raw; and Java sorts keys by UTF-16 units, msgspec by code points: they differ only there)."""
    try:
        out = msgspec.json.encode(_WITHOUT_FLOATS.decode(data), order="sorted")
    except (_Float, msgspec.DecodeError, msgspec.EncodeError, RecursionError, UnicodeError):
        return None
    if b"\\u" in out or (not out.isascii() and _OUTSIDE_BMP.search(out)):
        return None
    return out


def jackson_json(obj: Any) -> bytes:
    """Compact JSON as upstream's unsorted Jackson mapper writes it (insertion order kept)."""
    out: list[str] = []
    _write(obj, out, False)
    return "".join(out).encode("utf-8", "surrogatepass")
