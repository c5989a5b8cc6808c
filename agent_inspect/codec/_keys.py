"""State keys: parse and format every key layout K0–K2 (spec §2.1, §4.7)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from agent_inspect._errors import KeyFormatError

__all__ = ["KEY_FORMATS", "StateKey", "parse_state_key", "format_state_key", "state_key_writer", "resolve_state_keys"]

KEY_FORMATS = ("K0", "K1", "K1.5-draft", "K1.5", "K1.6", "K2", "K2-ordinal")
"""The state-key layouts :func:`parse_state_key` reads (spec §4.7), oldest first."""

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
_UUID_SRC = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_TWO_UUIDS = re.compile(rf"({_UUID_SRC})_({_UUID_SRC})\Z")
_B64_32 = re.compile(r"[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=\Z")

FLAG_SEPARATOR = "key-text-contains-separator"
FLAG_AMBIGUOUS = "ambiguous-layout"
FLAG_K16 = "k1.6-likely"
FLAG_PREFIX = "prefix-collision-risk"
FLAG_NON_V3 = "non-v3-uuid"


@dataclass(frozen=True, slots=True)
class StateKey:
    """One parsed state key. ``key_text`` is None for digest keys (K1.6, K2); ``seq`` None for K0.

    For example::

        key = ai.codec.parse_state_key(log.records["state_key"][0])
        key.format, key.key_group, key.seq, key.key_text, key.event_uuid
    """

    raw: str
    format: str
    key_group: int | None
    seq: int | None
    event_uuid: str
    action_uuid: str
    key_text: str | None = None
    key_digest: str | None = None
    serializer_fingerprint: str | None = None
    flags: tuple[str, ...] = ()

    @property
    def ordinal(self) -> int | None:
        """The occurrence ordinal of a "K2-ordinal" key (the #1084 proposal's extra segment), else None."""
        if self.format != "K2-ordinal":
            return None
        return int(self.raw.rsplit("_", 2)[1])

    @property
    def business_key(self) -> str:
        """The key text (K0–K1.5) or the key digest (K1.6, K2)."""
        return self.key_text if self.key_text is not None else (self.key_digest or "")


def _is_int(s: str) -> bool:
    return s.isdigit() and s.isascii() and (s[0] != "0" or len(s) == 1)


_INT_MAX = 2**31 - 1  # a key group is a Java int
_LONG_MAX = 2**63 - 1  # a seq is a Java long


def _is_group(s: str) -> bool:
    return _is_int(s) and (len(s) < 10 or int(s) <= _INT_MAX)


def _is_seq(s: str) -> bool:
    return _is_int(s) and (len(s) < 19 or int(s) <= _LONG_MAX)


def _is_uuid(s: str) -> bool:
    return len(s) == 36 and _UUID.match(s) is not None


def _is_digest(s: str) -> bool:
    # 32 bytes in padded base64: 43 symbols, the last carrying 4 bits (low 2 bits zero), then "=".
    return len(s) == 44 and _B64_32.match(s) is not None


def _uuid_flags(*uuids: str) -> tuple[str, ...]:
    return (FLAG_NON_V3,) if any(u[14] != "3" for u in uuids) else ()


def _text_flags(text: str, *, prefix_scan: bool = True) -> tuple[str, ...]:
    if "_" not in text:
        return ()
    # Upstream's K1 prefix scan "<text>_<seq>_" also matches keys whose text continues with "_<int>";
    # K1.5 and later match the business-key segment exactly.
    if prefix_scan and any(_is_int(seg) for seg in text.split("_")[1:]):
        return (FLAG_SEPARATOR, FLAG_PREFIX)
    return (FLAG_SEPARATOR,)


def _check_group(group: int, max_parallelism: int | None, text: str) -> None:
    if max_parallelism is not None and not 0 <= group < max_parallelism:
        raise KeyFormatError(
            f"state key {text!r}: key group {group} is outside [0, {max_parallelism}); "
            "pass the job's max_parallelism")


def _parse_k2(text: str, max_parallelism: int | None) -> StateKey:
    parts = text[3:].split("_", 6)
    fmt = "K2"
    if len(parts) == 7 and _is_seq(parts[5]):
        # The #1084 proposal (open): an occurrence ordinal before the business-key segment. Tolerated as
        # its own layout; the ordinal is StateKey.ordinal, the other fields are those of K2 (addendum §5).
        fmt = "K2-ordinal"
        del parts[5]
    if len(parts) != 6:
        raise KeyFormatError(f"v2 state key {text!r} has {len(parts)} '_' segments, expected 6 "
                             "(or 7 with an integer ordinal before the key digest)")
    group, seq, ev, act, fp, digest = parts
    if not (_is_group(group) and _is_seq(seq)):
        raise KeyFormatError(f"v2 state key {text!r}: key group and seq must be decimal integers (a Java int and long)")
    if not (_is_uuid(ev) and _is_uuid(act)):
        raise KeyFormatError(f"v2 state key {text!r}: event/action UUIDs are not lowercase UUIDs")
    if not (_is_digest(fp) and _is_digest(digest)):
        raise KeyFormatError(f"v2 state key {text!r}: fingerprint/digest are not base64 SHA-256")
    _check_group(int(group), max_parallelism, text)
    return StateKey(text, fmt, int(group), int(seq), ev, act, None, digest, fp, _uuid_flags(ev, act))


def _layouts(text: str, p: list[str], prefer: str | None,
             max_parallelism: int | None) -> list[StateKey]:
    n = len(p)
    found: list[StateKey] = []
    if n >= 5 and _is_group(p[0]) and _is_seq(p[1]) and _is_uuid(p[2]) and _is_uuid(p[3]):
        group = int(p[0])
        if max_parallelism is None or group < max_parallelism:
            ev, act = p[2], p[3]
            if n == 5 and _is_digest(p[4]):
                found.append(StateKey(text, "K1.6", group, int(p[1]), ev, act, None, p[4], None,
                                      (FLAG_K16, *_uuid_flags(ev, act))))
            else:
                key_text = "_".join(p[4:])
                found.append(StateKey(text, "K1.5", group, int(p[1]), ev, act, key_text, None, None,
                                      _text_flags(key_text, prefix_scan=False) + _uuid_flags(ev, act)))
    if n >= 4 and _is_uuid(p[-1]) and _is_uuid(p[-2]) and _is_seq(p[-3]):
        ev, act = p[-2], p[-1]
        if prefer == "K1.5-draft" and n >= 5 and _is_group(p[0]) and (
                max_parallelism is None or int(p[0]) < max_parallelism):
            key_text = "_".join(p[1:-3])
            found.append(StateKey(text, "K1.5-draft", int(p[0]), int(p[-3]), ev, act, key_text, None,
                                  None, _text_flags(key_text) + _uuid_flags(ev, act)))
        key_text = "_".join(p[:-3])
        found.append(StateKey(text, "K1", None, int(p[-3]), ev, act, key_text, None, None,
                              _text_flags(key_text) + _uuid_flags(ev, act)))
    return found


KeyFields = tuple  # (format, key_group, seq, event_uuid, action_uuid, key_text, key_digest, fingerprint, flags)


def _fields(key: StateKey) -> KeyFields:
    return (key.format, key.key_group, key.seq, key.event_uuid, key.action_uuid, key.key_text,
            key.key_digest, key.serializer_fingerprint, key.flags)


def _two_uuids(t: str) -> bool:
    """``t`` is exactly "<uuid>_<uuid>" in canonical lowercase (string ops only: far cheaper than a regex)."""
    return (len(t) == 73 and t[8] == t[13] == t[18] == t[23] == t[45] == t[50] == t[55] == t[60] == "-"
            and t[36] == "_" and not t.strip(_UUID_PAIR_CHARS) and t.count("-") == 8 and t.count("_") == 1)


_UUID_PAIR_CHARS = "0123456789abcdef-_"
# One compiled match beats the string checks of _fast_fields for this shape (measured ~0.5 µs a key).
_K1_PLAIN = re.compile(rf"([^_]*)_(0|[1-9][0-9]*)_({_UUID_SRC})_({_UUID_SRC})").fullmatch
_NON_V3 = (FLAG_NON_V3,)


def _fast_fields(text: str, max_parallelism: int | None) -> KeyFields | None:
    """The common unambiguous K1 / K1.5 / K1.6 shapes without building objects; None = use the full parser."""
    k1 = None
    if len(text) >= 76 and text[-74] == "_" and _two_uuids(text[-73:]):
        head, sep, seq = text[:-74].rpartition("_")
        if sep and _is_seq(seq):
            k1 = head, seq
    if text[:1].isdigit():
        p = text.split("_", 4)
        if len(p) == 5 and _is_group(p[0]) and _is_seq(p[1]) and _two_uuids(f"{p[2]}_{p[3]}"):
            if k1 is not None or (max_parallelism is not None and int(p[0]) >= max_parallelism):
                return None  # ambiguous or out of range: the full parser decides and explains
            ev, act, rest = p[2], p[3], p[4]
            uflags = (FLAG_NON_V3,) if ev[14] != "3" or act[14] != "3" else ()
            if len(rest) == 44 and _is_digest(rest):
                return ("K1.6", int(p[0]), int(p[1]), ev, act, None, rest, None, (FLAG_K16, *uflags))
            return ("K1.5", int(p[0]), int(p[1]), ev, act, rest, None, None,
                    (_text_flags(rest, prefix_scan=False) + uflags) if "_" in rest else uflags)
    if k1 is None:
        return None
    head, seq = k1
    ev, act = text[-73:-37], text[-36:]
    uflags = (FLAG_NON_V3,) if ev[14] != "3" or act[14] != "3" else ()
    return ("K1", None, int(seq), ev, act, head, None, None, (_text_flags(head) + uflags) if "_" in head else uflags)


# The same shapes for a whole column at once (Arrow's RE2; the bulk loader's fast path). Numbers that
# could overflow the int32 group / int64 seq columns are left to the full parser.
_ARROW_K1 = rf"^(?P<text>[^_]*)_(?P<seq>0|[1-9][0-9]{{0,17}})_(?P<ev>{_UUID_SRC})_(?P<act>{_UUID_SRC})$"
_ARROW_K15 = (rf"^(?P<group>0|[1-9][0-9]{{0,8}})_(?P<seq>0|[1-9][0-9]{{0,17}})_(?P<ev>{_UUID_SRC})_(?P<act>{_UUID_SRC})"
              r"_(?P<rest>[^_]*)$")
_ARROW_DIGEST = r"^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$"
KEY_ARRAY_FIELDS = ("key_format", "key_group", "seq", "event_uuid", "action_uuid", "key_text", "key_digest")


def key_field_arrays(texts: Any, max_parallelism: int | None = None) -> tuple[Any, dict[str, Any], Any]:
    """Parse a pyarrow string array of distinct keys in bulk, for the unambiguous common shapes only.

    Returns ``(parsed, columns, flags)``: a numpy bool mask of the keys parsed here (K1 and K1.5 whose
    key text has no '_', and K1.6), Arrow arrays named :data:`KEY_ARRAY_FIELDS` (null where not parsed)
    and a numpy object array of flag tuples. Every other key needs :func:`resolve_key_fields`; for the
    keys parsed here both give the same fields.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(texts)
    is_k1, k1 = _matched_parts(texts, _ARROW_K1, ("text", "seq", "ev", "act"))
    is_k15, k15 = _matched_parts(texts, _ARROW_K15, ("group", "seq", "ev", "act", "rest"))
    group = pc.cast(k15["group"], pa.int64())
    if max_parallelism is not None:  # out of range: the full parser explains it
        is_k15 = pc.and_(is_k15, pc.less(group, max_parallelism)).fill_null(False)
    rest = k15["rest"]
    is_k16 = pc.and_(is_k15, pc.match_substring_regex(rest, _ARROW_DIGEST)).fill_null(False)
    ev = pc.coalesce(k1["ev"], k15["ev"])
    act = pc.coalesce(k1["act"], k15["act"])
    seq = pc.coalesce(pc.cast(k1["seq"], pa.int64()), pc.cast(k15["seq"], pa.int64()))
    parsed = pc.or_(is_k1, is_k15).to_numpy(zero_copy_only=False)
    k1_np = is_k1.to_numpy(zero_copy_only=False)
    k15_np = is_k15.to_numpy(zero_copy_only=False)
    k16_np = is_k16.to_numpy(zero_copy_only=False)
    # a UUID's version digit (ASCII, so a byte slice: several times cheaper than a code-unit one)
    non_v3 = pc.or_(pc.not_equal(pc.binary_slice(ev.cast(pa.binary()), 14, 15), b"3"),
                    pc.not_equal(pc.binary_slice(act.cast(pa.binary()), 14, 15), b"3")).fill_null(False).to_numpy(
        zero_copy_only=False)
    fmt = np.full(n, None, dtype=object)
    fmt[k15_np] = "K1.5"
    fmt[k16_np] = "K1.6"
    fmt[k1_np] = "K1"
    shapes = np.empty(4, dtype=object)  # by non-v3 + 2 * K1.6
    shapes[:] = [(), _NON_V3, (FLAG_K16,), (FLAG_K16, FLAG_NON_V3)]
    flags = shapes[(non_v3 & parsed).astype(np.int8) + 2 * k16_np.astype(np.int8)]
    k15_only = pc.and_(is_k15, pc.invert(is_k16))
    null = pa.nulls(n, pa.string())
    columns = {
        "key_format": pa.array(fmt, pa.string()),
        "key_group": pc.if_else(is_k15, group, pa.nulls(n, pa.int64())),
        "seq": seq,
        "event_uuid": ev,
        "action_uuid": act,
        "key_text": pc.if_else(is_k1, k1["text"], pc.if_else(k15_only, rest, null)),
        "key_digest": pc.if_else(is_k16, rest, null),
    }
    return parsed, columns, flags


def _matched_parts(texts: Any, pattern: str, names: tuple[str, ...]) -> tuple[Any, dict[str, Any]]:
    """Which keys match ``pattern`` and, null elsewhere, their '_'-separated parts named ``names``.

    The patterns' parts hold no '_', so a key that matches splits into exactly those parts: a match without
    capture groups plus a split costs a fraction of Arrow's ``extract_regex``.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    matched = pc.match_substring_regex(texts, pattern).fill_null(False)
    found = pc.sum(matched).as_py() or 0
    if found == 0:
        return matched, {name: pa.nulls(len(texts), pa.string()) for name in names}
    every = found == len(texts)
    keys = texts if every else texts.filter(matched)
    if names[-2:] == ("ev", "act"):  # the two UUIDs end the key: byte slices (ASCII), only the head is split
        raw = keys.cast(pa.binary())
        heads = pc.split_pattern(pc.binary_slice(raw, 0, -74).cast(pa.string()), "_")
        parts = [pc.list_element(heads, i) for i in range(len(names) - 2)]
        parts += [pc.binary_slice(raw, -73, -37).cast(pa.string()), pc.binary_slice(raw, -36).cast(pa.string())]
    else:
        split = pc.split_pattern(keys, "_")
        parts = [pc.list_element(split, i) for i in range(len(names))]
    nulls = pa.nulls(len(texts), pa.string())
    return matched, {name: part if every else pc.replace_with_mask(nulls, matched, part)
                     for name, part in zip(names, parts)}


def parse_state_key(text: str | bytes, *, prefer: str | None = None,
                    max_parallelism: int | None = None) -> StateKey:
    """Parse a state key of any layout (spec §4.7).

    ``prefer`` picks the layout when several match (and is the only way to get "K1.5-draft");
    ``max_parallelism`` bounds key groups. Raises :class:`KeyFormatError` for keys of no layout.

    For example::

        ai.codec.parse_state_key("72_0_941ce38e-1d26-3e2a-9ec1-05bef7d25a26_f6aaf3fe-41f9-30a8-860f-d2a92bf1087b_user-12")
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise KeyFormatError("state key is not valid UTF-8") from None
    if prefer is not None and prefer not in KEY_FORMATS:
        raise KeyFormatError(f"unknown key format {prefer!r}; use one of {', '.join(KEY_FORMATS)}")
    if text.startswith("v2:"):
        return _parse_k2(text, max_parallelism)
    found = _layouts(text, text.split("_"), prefer, max_parallelism)
    if not found:
        return _parse_k0(text)
    if len(found) == 1:
        return found[0]
    chosen = next((k for k in found if k.format == prefer), found[0])
    if prefer == "K1.5-draft" and chosen.format == "K1.5-draft":
        return chosen  # the deployment is known to have run the draft: not ambiguous
    return _with_flag(chosen, FLAG_AMBIGUOUS)


def _with_flag(key: StateKey, flag: str) -> StateKey:
    if flag in key.flags:
        return key
    return StateKey(key.raw, key.format, key.key_group, key.seq, key.event_uuid, key.action_uuid,
                    key.key_text, key.key_digest, key.serializer_fingerprint, (*key.flags, flag))


def _parse_k0(text: str) -> StateKey:
    if len(text) >= 74 and text[-37] == "-" and text[-74] == "-":
        ev, act = text[-73:-37], text[-36:]
        if _is_uuid(ev) and _is_uuid(act):
            key_text = text[:-74]
            return StateKey(text, "K0", None, None, ev, act, key_text, None, None, _uuid_flags(ev, act))
    if text.count("_") < 3:
        reason = "has fewer than four '_' segments"
    else:
        reason = "matches no layout (K1: <text>_<seq>_<uuid>_<uuid>; K1.5: <group>_<seq>_<uuid>_<uuid>_<text>)"
    raise KeyFormatError(f"state key {text!r} {reason}")


def resolve_state_keys(keys: Sequence[str | bytes | None], partitions: Sequence[int] | None = None, *,
                       prefer: str | None = None, max_parallelism: int | None = None,
                       ) -> list[StateKey | KeyFormatError | None]:
    """Parse many keys, settling ambiguous layouts by the majority layout of their partition (§4.7 step 3).

    Returns one entry per key: a :class:`StateKey`, the :class:`KeyFormatError` of an unparseable key,
    or None for a missing key. Ambiguous keys keep the ``ambiguous-layout`` flag.

    For example::

        keys = ai.codec.resolve_state_keys(list(log.raw.key[:5]), list(log.raw.partition[:5]))
        [k.format for k in keys]
    """
    texts = [k.decode("utf-8", "surrogateescape") if isinstance(k, (bytes, bytearray)) else k for k in keys]
    fields = resolve_key_fields(keys, partitions, prefer=prefer, max_parallelism=max_parallelism)
    return [f if f is None or isinstance(f, KeyFormatError) else StateKey(cast(str, t), *f)  # a parsed key has text
            for t, f in zip(texts, fields)]


def resolve_key_fields(keys: Sequence[str | bytes | None], partitions: Sequence[int] | None = None, *,
                       prefer: str | None = None, max_parallelism: int | None = None,
                       ) -> list[KeyFields | KeyFormatError | None]:
    """Like :func:`resolve_state_keys`, as field tuples (internal fast path of the log builder)."""
    parts = partitions if partitions is not None else [0] * len(keys)
    out: list[KeyFields | KeyFormatError | None] = []
    cache: dict[Any, KeyFields | KeyFormatError] = {}
    ambiguous_keys = False
    fast = prefer is None
    append = out.append
    for key in keys:
        got = cache.get(key)
        if got is None:
            if key is None:
                append(None)
                continue
            got = cache[key] = _resolve_one(key, prefer, max_parallelism, fast)
            if type(got) is tuple and FLAG_AMBIGUOUS in got[8]:
                ambiguous_keys = True
        append(got)
    if not ambiguous_keys:
        return out
    votes: dict[tuple[int, str], int] = {}
    ambiguous: list[int] = []
    for i, got in enumerate(out):
        if type(got) is tuple:
            if FLAG_AMBIGUOUS in got[8]:
                ambiguous.append(i)
            else:
                vk = (parts[i], got[0])
                votes[vk] = votes.get(vk, 0) + 1
    for i in ambiguous:
        current = out[i]
        assert isinstance(current, tuple)
        tally = {fmt: n for (p, fmt), n in votes.items() if p == parts[i]}
        if not tally:
            continue
        majority = max(tally, key=tally.__getitem__)
        if majority != current[0]:
            key = keys[i]
            text = key.decode("utf-8", "surrogateescape") if isinstance(key, (bytes, bytearray)) else key
            if text is None:  # only parsed keys are tallied; a missing key never is
                continue
            alt = [k for k in _layouts(text, text.split("_"), "K1.5-draft" if majority == "K1.5-draft" else prefer,
                                       max_parallelism) if k.format == majority]
            if alt:
                out[i] = _fields(_with_flag(alt[0], FLAG_AMBIGUOUS))
    return out


def _resolve_one(key: str | bytes, prefer: str | None, max_parallelism: int | None,
                 fast: bool) -> KeyFields | KeyFormatError:
    if not isinstance(key, str):
        try:
            key = key.decode("utf-8") if type(key) is bytes else bytes(key).decode("utf-8")
        except UnicodeDecodeError:
            return KeyFormatError("state key is not valid UTF-8")
    if fast:
        m = _K1_PLAIN(key)
        if m is not None and len(m[2]) < 19:  # the most common key of all: K1, key text without '_'
            text, seq, ev, act = m.groups()
            return ("K1", None, int(seq), ev, act, text, None, None,
                    _NON_V3 if ev[14] != "3" or act[14] != "3" else ())
        got = _fast_fields(key, max_parallelism)
        if got is not None:
            return got
    try:
        return _fields(parse_state_key(key, prefer=prefer, max_parallelism=max_parallelism))
    except KeyFormatError as exc:
        return exc


#: the segments each key format writes besides the event and action UUIDs, in the order they are checked
_SEGMENTS = {
    "K0": ("key_text",),
    "K1": ("seq", "key_text"),
    "K1.5-draft": ("seq", "key_group", "key_text"),
    "K1.5": ("seq", "key_group", "key_text"),
    "K1.6": ("seq", "key_group", "key_digest"),
    "K2": ("seq", "key_group", "serializer_fingerprint", "key_digest"),
    "K2-ordinal": ("seq", "key_ordinal", "key_group", "serializer_fingerprint", "key_digest"),
}


def format_state_key(format: str, *, seq: int | None, event_uuid: str, action_uuid: str,
                     key_text: str | None = None, key_group: int | None = None,
                     key_digest: str | None = None, serializer_fingerprint: str | None = None,
                     key_ordinal: int | None = None) -> str:
    """Write a state key in ``format`` (the inverse of :func:`parse_state_key`; ``key_ordinal`` for "K2-ordinal").

    For example::

        ai.codec.format_state_key("K1.5", seq=3, event_uuid="e", action_uuid="a", key_text="user-1", key_group=17)
    """
    write = state_key_writer(format, key_text=key_text, key_group=key_group, key_digest=key_digest,
                             serializer_fingerprint=serializer_fingerprint, key_ordinal=key_ordinal, seq=seq)
    return write(seq, event_uuid, action_uuid)


def state_key_writer(format: str, *, key_text: str | None = None, key_group: int | None = None,
                     key_digest: str | None = None, serializer_fingerprint: str | None = None,
                     key_ordinal: int | None = None, seq: int | None = 0) -> Callable[[Any, str, str], str]:
    """The state keys of one Flink key in ``format``: a function of ``(seq, event_uuid, action_uuid)``. The key's
    segments are checked once (a replay writes many state keys per key); ``seq`` is an example seq, checked
    for the formats that write one.

    For example::

        write = ai.codec.state_key_writer("K1.5", key_text="user-1", key_group=17)
        write(3, "e", "a"), write(4, "e", "a")             # as format_state_key would write them
    """
    needs = _SEGMENTS.get(format)
    if needs is None:
        raise KeyFormatError(f"unknown key format {format!r}; use one of {', '.join(KEY_FORMATS)}")
    given = {"seq": seq, "key_text": key_text, "key_group": key_group, "key_digest": key_digest,
             "serializer_fingerprint": serializer_fingerprint, "key_ordinal": key_ordinal}
    for name in needs:
        if given[name] is None:
            raise KeyFormatError(f"format {format} needs {name}")
    if format == "K0":
        return lambda seq, e, a: f"{key_text}-{e}-{a}"
    if format == "K1":
        return lambda seq, e, a: f"{key_text}_{seq}_{e}_{a}"
    if format == "K1.5":
        return lambda seq, e, a: f"{key_group}_{seq}_{e}_{a}_{key_text}"
    if format == "K1.5-draft":
        return lambda seq, e, a: f"{key_group}_{key_text}_{seq}_{e}_{a}"
    if format == "K1.6":
        return lambda seq, e, a: f"{key_group}_{seq}_{e}_{a}_{key_digest}"
    ordinal = f"_{key_ordinal}" if format == "K2-ordinal" else ""
    return lambda seq, e, a: f"v2:{key_group}_{seq}_{e}_{a}_{serializer_fingerprint}{ordinal}_{key_digest}"
