"""The codec's public surface is exactly its ``__all__``, and every name there resolves."""

from __future__ import annotations

import agent_inspect.codec as codec

EXPECTED = {
    "KEY_FORMATS", "StateKey", "parse_state_key", "format_state_key", "state_key_writer", "resolve_state_keys",
    "VALUE_FORMATS", "GENERIC_EVENT", "SUBAGENT_EVENT", "PYTHON_EVENT",
    "ActionState", "Event", "CallResult", "MemoryUpdate", "KryoEnvelope",
    "decode_action_state", "encode_action_state", "detect_value_format", "unpickle_payload", "lone_surrogate_object",
    "canonical_json", "java_double", "uuid3", "event_uuid", "java_string_hash", "java_long_hash",
    "murmur_hash", "key_group", "python_action_hash", "python_action_uuid", "name_action_uuid",
    "kafka_partition", "string_key_digest", "subagent_namespace_digest", "subagent_ids", "SubagentIds",
    "python_function_id", "python_args_digest", "merge_markers",
    "CALL_MATCHING", "call_matcher", "call_router", "marker_list", "MarkerSource", "PlanSource",
    "parse_metadata", "read_keyed_state", "StateValue", "read_kryo_object", "KryoObject", "KRYO2", "KRYO5",
}


def test_public_names():
    assert set(codec.__all__) == EXPECTED and len(codec.__all__) == len(EXPECTED)
    for name in codec.__all__:
        assert getattr(codec, name) is not None
    assert codec.KEY_FORMATS == ("K0", "K1", "K1.5-draft", "K1.5", "K1.6", "K2", "K2-ordinal")
    assert codec.VALUE_FORMATS == ("V0", "V1", "V2a", "V2b", "V3", "V3+", "V4")


def test_log_module_surface():
    import agent_inspect
    from agent_inspect import log

    assert set(log.__all__) == {"ActionStateLog", "COLUMNS", "load", "load_kafka", "load_fluss", "load_file",
                                "build_log", "plain_text", "RUNTIMES", "KEEPS_PENDING", "RuntimeInfo", "infer_runtime", "resolve_runtime",
                                "joined_runtime",
                                "default_rule", "SourceSpec", "Window", "plan_windows", "read_window", "write_window",
                                "write_dataset_meta", "load_dataset", "is_dataset", "LiveLog", "follow", "Follower",
                                "TailWindow", "summary_facts", "runtime_text", "SummaryFact", "SUMMARY_LABELS",
                                "rule_label", "rule_mark", "RuleMark", "logged_key", "source_kind_of", "store_flavour",
                                "joined_flavour"}
    assert agent_inspect.ActionStateLog is log.ActionStateLog
    assert agent_inspect.load is log.load and agent_inspect.load_kafka is log.load_kafka
