"""Pure decoding of action-state records: key formats, value formats and identity recipes.

Bytes in, typed records out; no I/O. Key layouts are "K0", "K1", "K1.5-draft", "K1.5", "K1.6", "K2"
(spec §2.1, §4; "K2-ordinal" for the #1084 proposal); value formats "V0", "V1", "V2a", "V2b", "V3", "V3+",
"V4" (spec §2.2, §5; addendum §1)::

    key = parse_state_key(b"user-42_7_b6dc5e36-…_cd464c8a-…")     # StateKey(format="K1", seq=7, …)
    state = decode_action_state(value_bytes)                         # ActionState (msgspec Struct)
    detect_value_format(state)                                       # ("V3", False)
    event_uuid(state.task_event.attributes) == key.event_uuid        # identity check (spec §4.3)
    encode_action_state(state, value_format="V2b")                   # Jackson-exact bytes of that version

Bulk decoding for the log builder (one summary row per record, keys as Arrow arrays) is in
:mod:`agent_inspect.codec.bulk`. Free-form parts (event attributes, memory values) stay raw JSON (``msgspec.Raw``); parse them with
``Event.attrs()`` / ``MemoryUpdate.json_value()``. Pickled payloads are never unpickled unless you call
:func:`unpickle_payload` with ``i_trust_this_payload=True``.
"""

from __future__ import annotations

from agent_inspect.codec._calls import CALL_MATCHING, call_matcher, call_router
from agent_inspect.codec._encode import (
    encode_action_state,
)
from agent_inspect.codec._flink_metadata import parse_metadata
from agent_inspect.codec._flink_state import StateValue, read_keyed_state
from agent_inspect.codec._formats import (
    detect_value_format,
)
from agent_inspect.codec._identity import (
    SubagentIds,
    event_uuid,
    java_long_hash,
    java_string_hash,
    kafka_partition,
    key_group,
    murmur_hash,
    name_action_uuid,
    python_action_hash,
    python_action_uuid,
    python_args_digest,
    python_function_id,
    string_key_digest,
    subagent_ids,
    subagent_namespace_digest,
    uuid3,
)
from agent_inspect.codec._json import canonical_json, java_double
from agent_inspect.codec._keys import (
    KEY_FORMATS,
    StateKey,
    format_state_key,
    parse_state_key,
    resolve_state_keys,
    state_key_writer,
)
from agent_inspect.codec._kryo import KRYO2, KRYO5, KryoObject, read_kryo_object
from agent_inspect.codec._lone import lone_surrogate_object
from agent_inspect.codec._markers import MarkerSource, PlanSource, marker_list, merge_markers
from agent_inspect.codec._values import (
    GENERIC_EVENT,
    PYTHON_EVENT,
    SUBAGENT_EVENT,
    VALUE_FORMATS,
    ActionState,
    CallResult,
    Event,
    KryoEnvelope,
    MemoryUpdate,
    decode_action_state,
    unpickle_payload,
)

__all__ = [
    # state keys
    "KEY_FORMATS", "StateKey", "parse_state_key", "format_state_key", "state_key_writer", "resolve_state_keys",
    # values
    "VALUE_FORMATS", "GENERIC_EVENT", "SUBAGENT_EVENT", "PYTHON_EVENT",
    "ActionState", "Event", "CallResult", "MemoryUpdate", "KryoEnvelope",
    "decode_action_state", "encode_action_state", "detect_value_format", "unpickle_payload",
    "lone_surrogate_object",    # a JSON object with an escaped lone surrogate, as Jackson writes a cut string
    # identity recipes
    "canonical_json", "java_double", "uuid3", "event_uuid", "java_string_hash", "java_long_hash",
    "murmur_hash", "key_group", "python_action_hash", "python_action_uuid", "name_action_uuid",
    "kafka_partition", "string_key_digest", "subagent_namespace_digest", "subagent_ids", "SubagentIds",
    "python_function_id", "python_args_digest",
    # durable-call identity
    "CALL_MATCHING", "call_matcher", "call_router",
    # recovery markers
    "merge_markers", "marker_list", "MarkerSource", "PlanSource",
    # Flink checkpoints (ai.checkpoint reads them)
    "parse_metadata", "read_keyed_state", "StateValue", "read_kryo_object", "KryoObject", "KRYO2", "KRYO5",
]
