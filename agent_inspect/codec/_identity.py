"""Identity recipes: event/action UUIDs, Java hashes, Flink murmur, partitions, key groups, digests."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_inspect._errors import KeyFormatError
from agent_inspect.codec._json import canonical_json

if TYPE_CHECKING:
    from agent_inspect.codec._keys import StateKey

__all__ = [
    "uuid3", "event_uuid", "java_string_hash", "java_long_hash", "murmur_hash", "key_group",
    "python_action_hash", "python_action_uuid", "name_action_uuid", "kafka_partition",
    "string_key_digest", "subagent_namespace_digest", "subagent_ids", "SubagentIds",
    "python_function_id", "python_args_digest",
]

_M32 = 0xFFFFFFFF


def _int32(h: int) -> int:
    h &= _M32
    return h - 0x100000000 if h & 0x80000000 else h


def uuid3(data: bytes) -> str:
    """Java ``UUID.nameUUIDFromBytes(data)`` as lowercase text (MD5, version 3).

    For example::

        ai.codec.uuid3(b"chat")                         # Java UUID.nameUUIDFromBytes
    """
    # what str(uuid.UUID(bytes=digest, version=3)) gives, without its int round trips (half the cost: one per
    # distinct event attributes a replay or lint fingerprints)
    d = bytearray(hashlib.md5(data).digest())
    d[6] = (d[6] & 0x0F) | 0x30     # version 3
    d[8] = (d[8] & 0x3F) | 0x80     # the RFC 4122 variant
    h = d.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def event_uuid(attributes: Any) -> str:
    """The event UUID of an event's attribute map (spec §4.3.1, 0.3+ recipe).

    ``attributes`` is the parsed map, or its raw JSON (bytes / ``msgspec.Raw``) as read from a record.

    For example::

        ai.codec.event_uuid({"input": "where is my order"})   # the fingerprint in every state key
    """
    return uuid3(canonical_json(attributes))


def java_string_hash(text: str) -> int:
    """Java ``String.hashCode()``: 31-fold over UTF-16 code units, signed 32-bit.

    For example::

        ai.codec.java_string_hash("user-1")
    """
    h = 0
    if text.isascii():
        for c in text.encode("ascii"):
            h = (31 * h + c) & _M32
    else:
        units = text.encode("utf-16-be", "surrogatepass")
        for i in range(0, len(units), 2):
            h = (31 * h + ((units[i] << 8) | units[i + 1])) & _M32
    return _int32(h)


def java_long_hash(value: int) -> int:
    """Java ``Long.hashCode()``: ``(int)(v ^ (v >>> 32))``.

    For example::

        ai.codec.java_long_hash(2**40)
    """
    v = value & 0xFFFFFFFFFFFFFFFF
    return _int32(v ^ (v >> 32))


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def murmur_hash(code: int) -> int:
    """Flink ``MathUtils.murmurHash(int)``: one MurmurHash3 round, made non-negative (spec §6.3).

    For example::

        ai.codec.murmur_hash(ai.codec.java_string_hash("user-1")) % 4   # the partition of a K1.5 key text
    """
    k = (code & _M32) * 0xCC9E2D51 & _M32
    k = _rotl(k, 15) * 0x1B873593 & _M32
    h = _rotl(k, 13)
    h = (h * 5 + 0xE6546B64) & _M32
    h ^= 4
    h ^= h >> 16
    h = h * 0x85EBCA6B & _M32
    h ^= h >> 13
    h = h * 0xC2B2AE35 & _M32
    h ^= h >> 16
    signed = _int32(h)
    if signed >= 0:
        return signed
    return 0 if signed == -0x80000000 else -signed


def key_group(java_hash: int, max_parallelism: int = 128) -> int:
    """Flink key group of a key whose Java ``hashCode()`` is ``java_hash`` (spec §4.5).

    For example::

        ai.codec.key_group(ai.codec.java_string_hash("user-0012"))   # the key group in a K1.5 state key
    """
    return murmur_hash(java_hash) % max_parallelism


def _objects_hash(*hashes: int) -> int:
    h = 1
    for x in hashes:
        h = (31 * h + x) & _M32
    return _int32(h)


def python_action_hash(name: str, module: str, qualname: str, triggers: Sequence[str]) -> int:
    """``Action.hashCode()`` of a Python action, as the K0–K1.5 action UUID uses it (spec §4.4).

    For example::

        ai.codec.python_action_hash("chat", "my_agent", "ChatAgent.chat", ["ChatRequest"])
    """
    exec_hash = _objects_hash(java_string_hash(module), java_string_hash(qualname))
    trigger_hash = _objects_hash(*(java_string_hash(t) for t in triggers))
    return _objects_hash(java_string_hash(name), exec_hash, trigger_hash)


def python_action_uuid(name: str, module: str, qualname: str, triggers: Sequence[str]) -> str:
    """Hash-based action UUID (K0–K1.5) of a Python action: v3 UUID of its hashCode's decimal text.

    For example::

        ai.codec.python_action_uuid("chat", "my_agent", "ChatAgent.chat", ["ChatRequest"])   # K0-K1.5 action UUID
    """
    return uuid3(str(python_action_hash(name, module, qualname, triggers)).encode("ascii"))


def name_action_uuid(name: str) -> str:
    """Name-based action UUID (K2, #1094): v3 UUID of the UTF-8 action name.

    For example::

        ai.codec.name_action_uuid("chat")               # the K2 action UUID of the action "chat"
    """
    return uuid3(name.encode("utf-8"))


def kafka_partition(state_key: str | StateKey, num_partitions: int) -> int:
    """The partition upstream's Kafka partitioner picks for a state key (spec §6.3).

    K1 partitions by the key text up to its first ``_``; K1.5-draft by segment 1; K1.5 by the
    key text (inferred upstream); K1.6 and K2 by the key digest.

    For example::

        ai.codec.kafka_partition(log.records["state_key"][0], 4) == log.records["partition"][0]
    """
    from agent_inspect.codec._keys import parse_state_key

    parsed = parse_state_key(state_key) if isinstance(state_key, str) else state_key
    fmt = parsed.format
    if fmt in ("K1.6", "K2", "K2-ordinal"):
        basis = parsed.key_digest or ""
    elif fmt in ("K1", "K1.5-draft"):
        basis = (parsed.key_text or "").split("_", 1)[0]
        if fmt == "K1" and not basis:
            raise KeyFormatError(
                f"K1 key {parsed.raw!r} has an empty first segment; upstream's partitioner rejects it")
    else:
        basis = parsed.key_text or ""
    return murmur_hash(java_string_hash(basis)) % num_partitions


def _varint(n: int, out: bytearray) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def string_key_digest(text: str) -> str:
    """K1.6/K2 key digest of a ``String`` business key (spec §4.6; encoding inferred, unverified).

    base64(SHA-256(Flink StringSerializer bytes)): (length+1) then each UTF-16 unit as 7-bit varints.

    For example::

        ai.codec.string_key_digest("user-1")            # the K1.6/K2 digest of a String key
    """
    units = text.encode("utf-16-be", "surrogatepass")
    out = bytearray()
    _varint(len(units) // 2 + 1, out)
    for i in range(0, len(units), 2):
        _varint((units[i] << 8) | units[i + 1], out)
    return base64.b64encode(hashlib.sha256(bytes(out)).digest()).decode("ascii")


def subagent_namespace_digest(key: str, sequence_number: int, action_name: str, event_type: str,
                              event_attributes: Mapping[str, Any] | bytes,
                              agent_name: str | None = None) -> str:
    """The sub-agent id namespace digest of one caller execution (spec §11.2).

    For example::

        digest = ai.codec.subagent_namespace_digest("user-1", 3, "plan", "_input_event", {"input": "hi"})
        ai.codec.subagent_ids(digest).session_id
    """
    from agent_inspect.codec._json import parse_json

    attrs = parse_json(bytes(event_attributes)) if isinstance(event_attributes, (bytes, bytearray)) \
        else event_attributes
    namespace: dict[str, Any] = {
        "key": key, "sequenceNumber": sequence_number, "actionName": action_name,
        "eventType": event_type, "eventAttributes": attrs,
    }
    if agent_name is not None:
        namespace["agentName"] = agent_name
    return uuid3(canonical_json(namespace))


@dataclass(frozen=True, slots=True)
class SubagentIds:
    """The ids of one sub-agent call: session, call, and the caller's durable-call function id.

    For example::

        ids = ai.codec.subagent_ids("4f2a9c", session=0, call=1)
        ids.session_id, ids.call_id, ids.function_id
    """

    session_id: str
    call_id: str
    function_id: str


def subagent_ids(namespace_digest: str, *, session: int = 0, call: int = 1) -> SubagentIds:
    """Session id ``<digest>-<n>``, call id ``<session>-<m>`` and function id ``<session>#<call>``.

    For example::

        ai.codec.subagent_ids("4f2a9c", session=1, call=2)   # ids of the 2nd call of the 2nd session
    """
    session_id = f"{namespace_digest}-{session}"
    call_id = f"{session_id}-{call}"
    return SubagentIds(session_id, call_id, f"{session_id}#{call_id}")


def python_function_id(fn: Callable[..., object]) -> str:
    """The ``functionId`` Python ``durable_execute`` records for ``fn``: ``<module>.<qualname>`` (spec §13.1).

    For example::

        ai.codec.python_function_id(ai.codec.python_function_id)   # "<module>.<qualname>"
    """
    import inspect

    module = inspect.getmodule(fn)
    mod_name = module.__name__ if module is not None else getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return f"{mod_name or '<unknown>'}.{qualname or '<unknown>'}"


def python_args_digest(args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None) -> str:
    """The ``argsDigest`` of a Python durable call: SHA-256 of ``cloudpickle.dumps((args, kwargs))``, 16 hex.

    Pickle bytes depend on the cloudpickle and Python versions, so compare digests only within one
    environment. Without cloudpickle, plain ``pickle`` (protocol 5) is used: the same bytes for plain data.

    For example::

        ai.codec.python_args_digest(("order 7",), {"verbose": False})   # 16 hex digits
    """
    value = (tuple(args), dict(kwargs or {}))
    try:
        import cloudpickle

        dumps = cloudpickle.dumps
    except ImportError:  # pragma: no cover - cloudpickle ships with the dev extras
        import pickle

        def dumps(obj: Any) -> bytes:
            return pickle.dumps(obj, protocol=5)
    try:
        data = dumps(value)
    except Exception:  # noqa: BLE001 - upstream falls back to str() for anything unpicklable
        data = str(value).encode("utf-8")
    return hashlib.sha256(data).hexdigest()[:16]
