"""Dump files: kcat -J (text and base64), plain JSONL, Parquet; exact round trips; bad lines never raise."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agent_inspect as ai
from agent_inspect.sources import write_jsonl, write_parquet
from agent_inspect.sources._files import NO_PARTITION, read_file
from tests.sources._records import make_records

RECORDS = make_records(3, 2)


def _kcat_lines(records: list[tuple[str, bytes | None]], *, b64: bool = False, topic: str = "t") -> list[str]:
    out = []
    for i, (k, v) in enumerate(records):
        enc = (lambda b: None if b is None else base64.b64encode(b).decode()) if b64 else \
              (lambda b: None if b is None else b.decode())
        out.append(json.dumps({"topic": topic, "partition": i % 2, "offset": i // 2, "tstype": "create",
                               "ts": 1_700_000_000_000 + i, "broker": 1, "headers": None,
                               "key": enc(k.encode()), "payload": enc(v)}))
    return out


def _write(path: Path, lines: list[str] | list[bytes]) -> Path:
    data = b"\n".join(ln if isinstance(ln, bytes) else ln.encode() for ln in lines) + b"\n"
    path.write_bytes(data)
    return path


def _rows(read) -> list[tuple]:  # type: ignore[no-untyped-def]
    b = read.batch
    return list(zip(b.partition, b.offset, b.timestamp_ms, b.key, b.value))


@pytest.mark.parametrize("b64", [False, True])
def test_kcat_jsonl_text_and_base64(tmp_path: Path, b64: bool) -> None:
    records = [*RECORDS, (RECORDS[0][0], None)]
    read = read_file(_write(tmp_path / "k.jsonl", _kcat_lines(records, b64=b64)))
    assert read.source.file_format == "kcat-jsonl" and read.source.topic == "t"
    assert read.source.options.get("base64", False) is b64
    assert not read.line_errors
    assert _rows(read) == [(i % 2, i // 2, 1_700_000_000_000 + i, k.encode(), v) for i, (k, v) in enumerate(records)]


def test_plain_jsonl_value_forms(tmp_path: Path) -> None:
    key, value = RECORDS[1]
    lines = [
        b'{"key": "%s", "value": %s}' % (key.encode(), value),                      # inline object: exact bytes
        json.dumps({"key": key, "value": value.decode(), "partition": 3, "offset": 9,
                    "timestamp": "2026-11-29T10:00:00Z"}).encode(),                 # JSON string holding the JSON
        json.dumps({"key": key, "value": None, "timestamp": 5}).encode(),             # tombstone
    ]
    read = read_file(_write(tmp_path / "p.jsonl", lines))
    assert read.source.file_format == "jsonl" and not read.line_errors
    assert _rows(read) == [(0, 1, None, key.encode(), value), (3, 9, 1_795_946_400_000, key.encode(), value),
                           (0, 3, 5, key.encode(), None)]


def test_gzip_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "k.jsonl.gz"
    path.write_bytes(gzip.compress(("\n".join(_kcat_lines(RECORDS)) + "\n").encode()))
    assert len(read_file(path).batch) == len(RECORDS)


def test_missing_file_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(ai.SourceError, match="cannot open"):
        ai.load_file(tmp_path / "nope.jsonl")


def test_parquet_round_trip_is_exact(tmp_path: Path) -> None:
    src = _write(tmp_path / "k.jsonl", _kcat_lines([*RECORDS, (RECORDS[0][0], None)]))
    log = ai.load_file(src)
    out = write_parquet(log, tmp_path / "x.parquet")
    schema = pq.read_schema(out)
    assert [(f.name, str(f.type)) for f in schema] == [
        ("partition", "int32"), ("offset", "int64"), ("timestamp_ms", "int64"), ("key", "binary"),
        ("value", "binary"), ("agent_key", "string")]
    meta = json.loads(schema.metadata[b"agent_inspect.source"])
    assert meta["kind"] == "file" and meta["file_format"] == "kcat-jsonl" and meta["topic"] == "t"
    again = ai.load(out)
    for col in ("partition", "offset", "timestamp_ms", "key", "value"):
        assert getattr(again.raw, col) == getattr(log.raw, col)
    assert again.source.file_format == "parquet" and again.source.topic == "t"
    assert dict(again.source.end_offsets) == dict(log.source.end_offsets)
    assert again.records.equals(log.records)


def test_log_to_parquet_uses_the_writer(tmp_path: Path) -> None:
    log = ai.load_file(_write(tmp_path / "k.jsonl", _kcat_lines(RECORDS)))
    log.to_parquet(tmp_path / "y.parquet")
    assert read_file(tmp_path / "y.parquet").batch.value == log.raw.value


awkward_values = st.one_of(
    st.none(), st.binary(max_size=40), st.just(b"null"), st.just(b'"a string"'), st.just(b" {\"a\": 1} "),
    st.just(b'{"a":\n1}'), st.just(b"[1,2]"), st.text(max_size=30).map(str.encode), st.sampled_from([v for _, v in RECORDS]))
awkward_keys = st.one_of(st.none(), st.text(max_size=30).map(str.encode), st.binary(max_size=20),
                         st.sampled_from([k.encode() for k, _ in RECORDS]))


class _Log:
    def __init__(self, raw, source) -> None:  # type: ignore[no-untyped-def]
        self.raw, self.source = raw, source


@settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(awkward_keys, awkward_values, st.one_of(st.none(), st.integers(0, 2**41))),
                min_size=1, max_size=12))
def test_jsonl_and_parquet_writers_round_trip_any_bytes(tmp_path: Path, rows) -> None:  # type: ignore[no-untyped-def]
    from agent_inspect.sources import RawBatch, SourceInfo

    raw = RawBatch()
    for i, (k, v, ts) in enumerate(rows):
        raw.append(i % 3, i, ts, k, v)
    log = _Log(raw, SourceInfo(kind="kafka", location="kafka://h:1/t", topic="t"))
    for writer, name in ((write_jsonl, "w.jsonl"), (write_parquet, "w.parquet")):
        read = read_file(writer(log, tmp_path / name))
        assert not read.line_errors
        assert _rows(read) == list(zip(raw.partition, raw.offset, raw.timestamp_ms, raw.key, raw.value))


# ----------------------------------------------------------------------------- malformed input never raises

def _mutations(line: str) -> st.SearchStrategy[bytes]:
    obj = json.loads(line)
    wrong = st.sampled_from([1, 2.5, True, [], {}, "x", None])
    return st.one_of(
        st.integers(1, max(1, len(line) - 1)).map(lambda n: line[:n].encode()),                 # truncation
        st.tuples(st.sampled_from(sorted(obj)), wrong).map(lambda kv: json.dumps({**obj, kv[0]: kv[1]}).encode()),
        st.integers(100, 3000).map(lambda d: json.dumps({**obj, "payload": None}).encode()[:-1]
                                   + b',"deep":' + b"[" * d + b"]" * d + b"}"),                   # deep nesting
        st.integers(10_000, 200_000).map(lambda n: json.dumps({**obj, "key": "k" * n}).encode()),  # huge strings
        st.binary(min_size=1, max_size=50).filter(lambda b: b"\n" not in b and b.strip() != b""),  # garbage
        st.just(b"[" * 100_000),                                                                 # very deep
        st.sampled_from([b"null", b"[]", b"42", b'"text"']),                                    # not an object
    )


@settings(deadline=None, max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_mutated_kcat_lines_become_error_rows(tmp_path: Path, data: st.DataObject) -> None:
    lines = [ln.encode() for ln in _kcat_lines(RECORDS)]
    bad_at = sorted(data.draw(st.sets(st.integers(0, len(lines) - 1), min_size=1, max_size=4)))
    for i in bad_at:
        lines[i] = data.draw(_mutations(lines[i].decode()))
    path = _write(tmp_path / "m.jsonl", lines)
    _check_mutated(read_file(path, file_format="kcat-jsonl"), lines, bad_at)
    _check_log(ai.load_file(path, file_format="kcat-jsonl"), read_file(path, file_format="kcat-jsonl"))


def _check_mutated(read, lines: list[bytes], bad_at: list[int]) -> None:  # type: ignore[no-untyped-def]
    assert len(read.batch) == len(lines)                       # nothing dropped
    for i in range(len(lines)):
        if i not in bad_at:
            assert i not in read.line_errors and read.batch.key[i] == RECORDS[i][0].encode()
    for row, reason in read.line_errors.items():
        assert row in bad_at and read.batch.offset[row] == row + 1
        assert reason.startswith(f"line {row + 1}: ") and "\n" not in reason
        assert read.batch.value[row] == lines[row]              # the line itself is kept for inspection


@settings(deadline=None, max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_mutated_plain_lines_become_error_rows(tmp_path: Path, data: st.DataObject) -> None:
    base = [json.dumps({"key": k, "value": v.decode()}) for k, v in RECORDS]
    lines = [ln.encode() for ln in base]
    bad_at = sorted(data.draw(st.sets(st.integers(0, len(lines) - 1), min_size=1, max_size=4)))
    for i in bad_at:
        lines[i] = data.draw(_mutations(base[i]))
    path = _write(tmp_path / "m.jsonl", lines)
    _check_mutated(read_file(path, file_format="jsonl"), lines, bad_at)
    _check_log(ai.load_file(path, file_format="jsonl"), read_file(path, file_format="jsonl"))


def _check_log(log, read) -> None:  # type: ignore[no-untyped-def]
    """Every bad line is a row of ``log.errors`` at its (partition, line number) with its reason."""
    assert len(log.records) == len(read.batch)
    errors = log.errors
    got = dict(zip(zip(errors["partition"], errors["offset"]), errors["error"]))
    for row, reason in read.line_errors.items():
        assert got[(read.batch.partition[row], read.batch.offset[row])] == reason


def test_bad_lines_are_in_the_log_errors_with_their_line(tmp_path: Path) -> None:
    lines = [ln.encode() for ln in _kcat_lines(RECORDS)]
    lines[1] = lines[1][:30]
    lines[3] = json.dumps({**json.loads(lines[3]), "key": 17}).encode()
    lines.insert(4, b"[" * 50_000)
    log = ai.load_file(_write(tmp_path / "bad.jsonl", lines))
    assert len(log.records) == len(lines)
    errors = log.errors
    bad = errors[errors["partition"] == NO_PARTITION]
    assert sorted(bad["offset"]) == [2, 4, 5]
    reasons = dict(zip(bad["offset"], bad["error"]))
    assert reasons[2].startswith("line 2: not valid JSON")
    assert "line 4: bad record envelope" in reasons[4] and "key" in reasons[4]
    assert reasons[5].startswith("line 5: ")


def test_business_keys_filter_files(tmp_path: Path) -> None:
    lines = _kcat_lines(RECORDS) + ["{broken"]
    log = ai.load_file(_write(tmp_path / "k.jsonl", lines), business_keys=["user-1"])
    keys = {k.decode().split("_")[0] for k in log.raw.key if k is not None}
    assert keys == {"user-1"}
    assert len(log.errors) == 1 and log.errors["error"].iloc[0].startswith(f"line {len(RECORDS) + 1}:")


def test_records_that_decode_but_break_the_rules_keep_their_line(tmp_path: Path) -> None:
    key, value = RECORDS[0]
    good = b'{"key": "%s", "value": %s, "partition": 1, "offset": 7}' % (key.encode(), value)
    bad = b'{"key": "%s", "value": {}, "partition": 1, "offset": -4}' % key.encode()
    stamp = b'{"key": "%s", "value": {}, "timestamp": "yesterday"}' % key.encode()
    read = read_file(_write(tmp_path / "r.jsonl", [good, bad, stamp]))
    assert read.line_errors == {1: "line 2: offset -4 is out of range (0 to 9223372036854775807)",
                                2: "line 3: timestamp 'yesterday' is neither epoch milliseconds nor ISO-8601"}
    assert read.batch.value[1:] == [bad, stamp] and read.batch.partition == [1, NO_PARTITION, NO_PARTITION]


def test_crlf_and_blank_lines_keep_line_numbers(tmp_path: Path) -> None:
    lines = _kcat_lines(RECORDS[:3])
    path = tmp_path / "crlf.jsonl"
    path.write_bytes(("\r\n".join([lines[0], "", lines[1], "  ", lines[2]]) + "\r\n").encode())
    read = read_file(path)
    assert not read.line_errors and [k.decode() for k in read.batch.key] == [k for k, _ in RECORDS[:3]]
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(("\r\n".join([lines[0], "", "{oops", lines[2]]) + "\r\n").encode())
    assert list(read_file(broken).line_errors.values())[0].startswith("line 3: not valid JSON")
