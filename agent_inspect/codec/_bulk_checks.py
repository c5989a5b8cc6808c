"""Checks the bulk decoder makes on a whole chunk of values at once, in C, instead of value by value."""

from __future__ import annotations

import msgspec

__all__ = ["_ENVELOPE_PREFIX", "_ENVELOPE_QUOTES", "_all_envelopes", "_utf8"]

# The one envelope shape upstream writes (§5.4); anything else goes through the codec's checks.
_ENVELOPE_PREFIX = b'{"serde":"kryo","version":1,"payload":"'

_ENVELOPE_QUOTES = 10

_NUL_ENVELOPE = b"\0" + _ENVELOPE_PREFIX


def _all_envelopes(memory: list[msgspec.Raw]) -> bool:
    """Whether every value is a Kryo envelope as upstream writes it (see _fast_row), checked at once.

    Joined by NUL (counted, so none may hide inside a value), each value starts with the envelope's prefix
    exactly when the join does and NUL + prefix occurs once per later value; each then holds at least the
    prefix's 9 quotes and its payload's closing one, so 10 quotes a value in all means exactly 10 in each.
    """
    joined = b"\0".join(memory)
    n = len(memory)
    return (joined.startswith(_ENVELOPE_PREFIX) and joined.count(b"\0") == n - 1
            and joined.count(_NUL_ENVELOPE) == n - 1 and joined.count(b'"') == _ENVELOPE_QUOTES * n)


def _utf8(part: list[bytes | None]) -> bool:
    """Whether every value of ``part`` is UTF-8: msgspec leaves raw parts (attributes, memory) unchecked."""
    try:  # the common chunk, all ASCII: one pass in C over the values themselves (a join copied them first)
        if all(map(bytes.isascii, filter(None, part))):
            return True
    except TypeError:  # a value that is a buffer but not bytes: the join reads it
        pass
    joined = b"\n".join(filter(None, part))   # "\n" is ASCII, so no character spans two values
    if joined.isascii():
        return True
    try:
        joined.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
