"""The public surface of agent_inspect.sources and the ai.load dispatcher."""

from __future__ import annotations

import pytest

import agent_inspect as ai
import agent_inspect.sources as sources


def test_public_names() -> None:
    assert sorted(sources.__all__) == sorted(
        ["file_kind", "FileKind", "expect_kind", "check_output", "input_files", "source_files", "DUMP_SUFFIXES",
         "write_parquet", "write_jsonl", "RawBatch", "SourceInfo", "read_file", "FileRead", "open_kafka",
         "read_partitions", "read_fluss", "plan_fluss", "read_fluss_bucket", "ConnectionFactory", "ReadPlan",
         "read_parquet_partition",
         "business_key_rows", "business_key_texts", "candidate_partitions", "take", "merge_markers", "source_scheme", "split_source_url", "check_port",
         "page_answers", "port_answers", "scheduler_answers",
         "check_timeout", "resolve_timeout",
         "progress_bar", "trace_files", "read_trace_files", "write_trace", "TraceFile", "TraceItem",
         "open_kafka_tail", "KafkaTail", "open_checkpoint", "CheckpointFiles",
         "export_spans", "check_export", "write_otlp_json", "read_otlp_json", "otlp_traces_url", "empty_source"])
    for name in ("load", "load_kafka", "load_fluss", "load_file"):
        assert getattr(ai, name) is getattr(ai.log, name)


@pytest.mark.parametrize("url, message", [
    ("kafka://host:9092", "must look like kafka://host:port/topic"),
    ("kafka:///topic", "must look like kafka://host:port/topic"),
    ("fluss://host:9123/db.t?x=1", "take no query"),
    ("s3://bucket/file.jsonl", "unknown source scheme 's3'"),
])
def test_bad_urls_are_source_errors(url: str, message: str) -> None:
    with pytest.raises(ai.SourceError, match=message):
        ai.load(url)


def test_url_credentials_never_reach_the_source_info() -> None:
    from agent_inspect.sources import split_source_url as _split_url

    assert _split_url("kafka://user:secret@h1:9092,h2:9092/orders", "kafka") == ("h1:9092,h2:9092", "orders")


def test_markers_and_start_offsets_are_exclusive() -> None:
    with pytest.raises(ai.SourceError, match="either markers or start_offsets"):
        ai.load_kafka("127.0.0.1:1", "t", markers={0: 1}, start_offsets={0: 1})


def test_paths_and_file_urls_load_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    line = json.dumps({"key": "k_0_a_b", "value": None})
    (tmp_path / "one file.jsonl").write_text(line + "\n")
    by_path = ai.load(tmp_path / "one file.jsonl")
    by_url = ai.load(f"file://{tmp_path}/one%20file.jsonl")
    assert len(by_path.records) == len(by_url.records) == 1
    assert by_url.raw.key == [b"k_0_a_b"] and by_url.raw.value == [None]


def test_progress_is_an_option_of_every_loader(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """``ai.load(path, progress=...)`` takes the option Kafka and Fluss loads take; the bar goes to stderr."""
    import json

    lines = [json.dumps({"key": f"user_0_{i}", "value": None, "offset": i}) for i in range(3)]
    (tmp_path / "dump.jsonl").write_text("\n".join(lines) + "\n")
    quiet = ai.load(tmp_path / "dump.jsonl", progress=False)
    assert capsys.readouterr().err == ""
    shown = ai.load(tmp_path / "dump.jsonl", progress=True)
    assert "file dump.jsonl" in capsys.readouterr().err
    assert quiet.raw.key == shown.raw.key and len(shown.records) == 3


def test_bad_url_message_hides_credentials() -> None:
    with pytest.raises(ai.SourceError) as info:
        ai.load("kafka://user:secret@host:9092")
    assert "secret" not in str(info.value)
