"""State keys: parse and format every key layout K0–K2 (spec §2.1, §4.7)."""

from __future__ import annotations

import base64
import binascii
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from agent_inspect._errors import KeyFormatError

__all__ = ["KEY_FORMATS", "StateKey", "parse_state_key", "format_state_key", "resolve_state_keys"]

KEY_FORMATS = ("K0", "K1", "K1.5-draft", "K1.5", "K1.6", "K2")

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
_B64_44 = re.compile(r"[A-Za-z0-9+/]{43}=\Z")

FLAG_SEPARATOR = "key-text-contains-separator"
FLAG_AMBIGUOUS = "ambiguous-layout"
FLAG_K16 = "k1.6-likely"
FLAG_PREFIX = "prefix-collision-risk"
FLAG_NON_V3 = "non-v3-uuid"


@dataclass(frozen=True, slots=True)
class StateKey:
    """One parsed state key. ``key_text`` is None for digest keys (K1.6, K2); ``seq`` None for K0."""

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
    def business_key(self) -> str:
        """The key text (K0–K1.5) or the key digest (K1.6, K2)."""
        return self.key_text if self.key_text is not None else (self.key_digest or "")


def _is_int(s: str) -> bool:
    return s.isdigit() and s.isascii() and (s[0] != "0" or len(s) == 1)


def _is_uuid(s: str) -> bool:
    return len(s) == 36 and _UUID.match(s) is not None


def _is_digest(s: str) -> bool:
    if len(s) != 44 or _B64_44.match(s) is None:
        return False
    try:
        raw = base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return False
    return len(raw) == 32 and base64.b64encode(raw).decode("ascii") == s


def _uuid_flags(*uuids: str) -> tuple[str, ...]:
    return (FLAG_NON_V3,) if any(u[14] != "3" for u in uuids) else ()


def _text_flags(text: str) -> tuple[str, ...]:
    if "_" not in text:
        return ()
    flags = [FLAG_SEPARATOR]
    # Upstream's K1 prefix scan "<text>_<seq>_" also matches keys whose text continues with "_<int>".
    if any(_is_int(seg) for seg in text.split("_")[1:]):
        flags.append(FLAG_PREFIX)
    return tuple(flags)


def _check_group(group: int, max_parallelism: int | None, text: str) -> None:
    if max_parallelism is not None and not 0 <= group < max_parallelism:
        raise KeyFormatError(
            f"state key {text!r}: key group {group} is outside [0, {max_parallelism}); "
            "pass the job's max_parallelism")


def _parse_k2(text: str, max_parallelism: int | None) -> StateKey:
    parts = text[3:].split("_", 5)
    if len(parts) != 6:
        raise KeyFormatError(f"v2 state key {text!r} has {len(parts)} '_' segments, expected 6")
    group, seq, ev, act, fp, digest = parts
    if not (_is_int(group) and _is_int(seq)):
        raise KeyFormatError(f"v2 state key {text!r}: key group and seq must be decimal integers")
    if not (_is_uuid(ev) and _is_uuid(act)):
        raise KeyFormatError(f"v2 state key {text!r}: event/action UUIDs are not lowercase UUIDs")
    if not (_is_digest(fp) and _is_digest(digest)):
        raise KeyFormatError(f"v2 state key {text!r}: fingerprint/digest are not base64 SHA-256")
    _check_group(int(group), max_parallelism, text)
    return StateKey(text, "K2", int(group), int(seq), ev, act, None, digest, fp, _uuid_flags(ev, act))


def _layouts(text: str, p: list[str], prefer: str | None,
             max_parallelism: int | None) -> list[StateKey]:
    n = len(p)
    found: list[StateKey] = []
    if n >= 5 and _is_int(p[0]) and _is_int(p[1]) and _is_uuid(p[2]) and _is_uuid(p[3]):
        group = int(p[0])
        if max_parallelism is None or group < max_parallelism:
            ev, act = p[2], p[3]
            if n == 5 and _is_digest(p[4]):
                found.append(StateKey(text, "K1.6", group, int(p[1]), ev, act, None, p[4], None,
                                      (FLAG_K16, *_uuid_flags(ev, act))))
            else:
                key_text = "_".join(p[4:])
                found.append(StateKey(text, "K1.5", group, int(p[1]), ev, act, key_text, None, None,
                                      _text_flags(key_text) + _uuid_flags(ev, act)))
    if n >= 4 and _is_uuid(p[-1]) and _is_uuid(p[-2]) and _is_int(p[-3]):
        ev, act = p[-2], p[-1]
        if prefer == "K1.5-draft" and n >= 5 and _is_int(p[0]) and (
                max_parallelism is None or int(p[0]) < max_parallelism):
            key_text = "_".join(p[1:-3])
            found.append(StateKey(text, "K1.5-draft", int(p[0]), int(p[-3]), ev, act, key_text, None,
                                  None, _text_flags(key_text) + _uuid_flags(ev, act)))
        key_text = "_".join(p[:-3])
        found.append(StateKey(text, "K1", None, int(p[-3]), ev, act, key_text, None, None,
                              _text_flags(key_text) + _uuid_flags(ev, act)))
    return found


def parse_state_key(text: str | bytes, *, prefer: str | None = None,
                    max_parallelism: int | None = None) -> StateKey:
    """Parse a state key of any layout (spec §4.7).

    ``prefer`` picks the layout when several match (and is the only way to get "K1.5-draft");
    ``max_parallelism`` bounds key groups. Raises :class:`KeyFormatError` for keys of no layout.
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
    """
    parts = list(partitions) if partitions is not None else [0] * len(keys)
    out: list[StateKey | KeyFormatError | None] = []
    votes: dict[int, Counter[str]] = {}
    ambiguous: list[int] = []
    for i, key in enumerate(keys):
        if key is None:
            out.append(None)
            continue
        try:
            parsed = parse_state_key(key, prefer=prefer, max_parallelism=max_parallelism)
        except KeyFormatError as exc:
            out.append(exc)
            continue
        out.append(parsed)
        if FLAG_AMBIGUOUS in parsed.flags:
            ambiguous.append(i)
        else:
            votes.setdefault(parts[i], Counter())[parsed.format] += 1
    for i in ambiguous:
        tally = votes.get(parts[i])
        if not tally:
            continue
        majority = tally.most_common(1)[0][0]
        current = out[i]
        assert isinstance(current, StateKey)
        if majority != current.format:
            alt = [k for k in _layouts(current.raw, current.raw.split("_"),
                                       "K1.5-draft" if majority == "K1.5-draft" else prefer,
                                       max_parallelism) if k.format == majority]
            if alt:
                out[i] = _with_flag(alt[0], FLAG_AMBIGUOUS)
    return out


def format_state_key(format: str, *, seq: int | None, event_uuid: str, action_uuid: str,
                     key_text: str | None = None, key_group: int | None = None,
                     key_digest: str | None = None, serializer_fingerprint: str | None = None) -> str:
    """Write a state key in ``format`` (the inverse of :func:`parse_state_key`)."""
    def need(value: object, name: str) -> object:
        if value is None:
            raise KeyFormatError(f"format {format} needs {name}")
        return value

    if format == "K0":
        return f"{need(key_text, 'key_text')}-{event_uuid}-{action_uuid}"
    need(seq, "seq")
    if format == "K1":
        return f"{need(key_text, 'key_text')}_{seq}_{event_uuid}_{action_uuid}"
    if format == "K1.5-draft":
        return f"{need(key_group, 'key_group')}_{need(key_text, 'key_text')}_{seq}_{event_uuid}_{action_uuid}"
    if format == "K1.5":
        return f"{need(key_group, 'key_group')}_{seq}_{event_uuid}_{action_uuid}_{need(key_text, 'key_text')}"
    if format == "K1.6":
        return f"{need(key_group, 'key_group')}_{seq}_{event_uuid}_{action_uuid}_{need(key_digest, 'key_digest')}"
    if format == "K2":
        return (f"v2:{need(key_group, 'key_group')}_{seq}_{event_uuid}_{action_uuid}_"
                f"{need(serializer_fingerprint, 'serializer_fingerprint')}_{need(key_digest, 'key_digest')}")
    raise KeyFormatError(f"unknown key format {format!r}; use one of {', '.join(KEY_FORMATS)}")
