"""The JSONL readers' column-wise fast path gives exactly what the per-line rules give, for any mix of lines."""

from __future__ import annotations

import base64
import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_inspect.sources import _files
from agent_inspect.sources._files import read_file
from tests.sources._records import make_records

RECORDS = make_records(2, 2)
KEY, VALUE = RECORDS[0][0], RECORDS[0][1].decode()


def _plain(**fields: object) -> bytes:
    return json.dumps({"key": KEY, "value": json.loads(VALUE), **fields}).encode()


# lines the fast path takes as they are
PLAIN_CLEAN = [
    _plain(), _plain(partition=2, offset=9, timestamp=1_700_000_000_000), _plain(key=None),
    _plain(partition=1), _plain(offset=4), _plain(timestamp=None, agent_key="agent-1"),
    _plain(timestamp=-5), _plain(partition=2**31 - 1, offset=2**63 - 1, timestamp=2**63 - 1),
    _plain(key="k\u00e9y"), b'{"value": {"a": [1, {}]}}',
]
# lines that need the per-line rules: each alone must send the file there
PLAIN_RARE = [
    _plain(key=None, key_base64=base64.b64encode(b"\xff\x00").decode()),
    b'{"key": "k", "value": null, "value_base64": "%s"}' % base64.b64encode(b"\xfe").decode().encode(),
    _plain(key_base64="not base64!"), _plain(malformed="line 3: not valid JSON"),
    _plain(malformed="", partition=-1, offset=3), _plain(malformed="row 1: x", partition=-2),
    b'{"key": "k", "value": null}', b'{"key": "k", "value": "{\\"a\\": 1}"}', b'{"key": "k", "value": [1]}',
    b'{"key": "k", "value": 5}', b'{"key": "k"}', _plain(timestamp="2024-01-02T03:04:05Z"),
    _plain(timestamp="yesterday"), _plain(timestamp=2**63), _plain(timestamp=-(2**63) - 1), _plain(partition=-1),
    _plain(partition=2**31), _plain(offset=-1), _plain(offset=2**63), _plain(key="\ud800"),
    b'{"key": 17, "value": {}}', b"{broken", b"[1, 2]", b"{} {}", b'{"value": {}}{"value": {}}',
]


def _kcat(i: int = 0, **fields: object) -> bytes:
    return json.dumps({"topic": "t", "partition": i % 2, "offset": i, "tstype": "create", "ts": 1_700_000_000_000 + i,
                       "broker": 1, "headers": None, "key": KEY, "payload": VALUE, **fields}).encode()


KCAT_CLEAN = [
    _kcat(), _kcat(3), _kcat(4, key=None), _kcat(5, payload=None), _kcat(6, tstype="none"), _kcat(7, ts=None),
    _kcat(8, topic="u"), _kcat(9, topic=None), _kcat(10, key_error="", payload_error=None),
    _kcat(2**31 - 1), _kcat(12, tstype=None, ts=-(2**63)),
]
KCAT_RARE = [
    _kcat(13, key_error="bad key"), _kcat(14, payload_error="bad payload"), _kcat(ts=2**63),
    _kcat(partition=-1), _kcat(partition=2**31), _kcat(offset=-1), _kcat(offset=2**63),
    _kcat(16, partition=None), _kcat(17, payload=5), _kcat(11, key="\ud800"), b"{broken", b"null", b"{}",
]
KCAT_B64 = [_kcat(i, key=base64.b64encode(KEY.encode()).decode(), payload=base64.b64encode(VALUE.encode()).decode())
            for i in range(3)] + [_kcat(3, key=None, payload=None)]
KCAT_B64_RARE = [_kcat(20, payload="not base64!"), _kcat(21, key="\u00e9t\u00e9")]


def _reads(path: Path, monkeypatch: pytest.MonkeyPatch, file_format: str) -> list[_files.FileRead]:
    """The file read three ways: as shipped, forced past the column-wise build, forced line by line."""
    reads = [read_file(path, file_format=file_format)]
    with monkeypatch.context() as m:
        m.setattr(_files, "_plain_columns", lambda records: None)
        m.setattr(_files, "_kcat_columns", lambda records, b64: None)
        reads.append(read_file(path, file_format=file_format))
        m.setattr(_files, "_whole", lambda decoder, data: None)
        reads.append(read_file(path, file_format=file_format))
    return reads


def _same(reads: list[_files.FileRead]) -> None:
    first = reads[0]
    for other in reads[1:]:
        assert dataclasses.asdict(other.batch) == dataclasses.asdict(first.batch)
        assert dict(other.line_errors) == dict(first.line_errors)
        assert other.source == first.source


def _lines(pool: list[bytes], rare: list[bytes]) -> st.SearchStrategy[list[bytes]]:
    return st.lists(st.one_of(st.sampled_from(pool), st.sampled_from(rare)) if rare else st.sampled_from(pool),
                    min_size=1, max_size=8)


def _file(tmp_path: Path, lines: list[bytes], ending: bytes) -> Path:
    path = tmp_path / "f.jsonl"
    path.write_bytes(ending.join(lines) + ending)
    return path


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=_lines(PLAIN_CLEAN, PLAIN_RARE), ending=st.sampled_from([b"\n", b"\r\n"]))
def test_plain_fast_path_equals_per_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: list[bytes],
                                         ending: bytes) -> None:
    _same(_reads(_file(tmp_path, lines, ending), monkeypatch, "jsonl"))


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.one_of(_lines(KCAT_CLEAN, KCAT_RARE), _lines(KCAT_B64, KCAT_B64_RARE)),
       ending=st.sampled_from([b"\n", b"\r\n"]))
def test_kcat_fast_path_equals_per_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: list[bytes],
                                        ending: bytes) -> None:
    _same(_reads(_file(tmp_path, lines, ending), monkeypatch, "kcat-jsonl"))


@pytest.mark.parametrize("pool, rare, file_format", [(PLAIN_CLEAN, PLAIN_RARE, "jsonl"),
                                                     (KCAT_CLEAN, KCAT_RARE, "kcat-jsonl"),
                                                     (KCAT_B64, KCAT_B64_RARE, "kcat-jsonl")])
def test_every_rare_line_among_clean_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pool: list[bytes],
                                          rare: list[bytes], file_format: str) -> None:
    _same(_reads(_file(tmp_path, pool, b"\n"), monkeypatch, file_format))
    for line in rare:
        _same(_reads(_file(tmp_path, [*pool, line, pool[0]], b"\n"), monkeypatch, file_format))


def test_clean_files_take_the_column_wise_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path is really taken for clean files (else the comparisons above compare a path with itself)."""
    taken = []
    for name in ("_plain_columns", "_kcat_columns"):
        real = getattr(_files, name)
        monkeypatch.setattr(_files, name, lambda *a, _real=real, _name=name: taken.append(_name) or _real(*a))
    for lines, file_format in ((PLAIN_CLEAN, "jsonl"), (KCAT_CLEAN, "kcat-jsonl"), (KCAT_B64, "kcat-jsonl")):
        read = read_file(_file(tmp_path, lines, b"\n"), file_format=file_format)
        assert len(read.batch) == len(lines) and not read.line_errors
    assert taken == ["_plain_columns", "_kcat_columns", "_kcat_columns"]
    monkeypatch.undo()
    assert _files._plain_columns(_files._PLAIN.decode_lines(b"\n".join(PLAIN_CLEAN))) is not None
    assert _files._kcat_columns(_files._KCAT.decode_lines(b"\n".join(KCAT_CLEAN)), False) is not None
    assert _files._kcat_columns(_files._KCAT.decode_lines(b"\n".join(KCAT_B64)), True) is not None


@pytest.mark.parametrize("data, objects, expected", [
    (b"", 0, True), (b"\n", 0, True), (b"{}", 1, True), (b"{}\n", 1, True), (b"{}\n{}\n", 2, True),
    (b"{}\r\n{}\r\n", 2, True), (b"{}\r\n{}\n{}", 3, False), (b"{}\n\n{}", 2, False), (b"{}{}\n{}", 3, False),
    (b'{"a":\n1}\n{}', 2, False), (b" {}\n{}", 2, False), (b"{}\n{} ", 2, False), (b"{}\n {}", 2, False),
    (b"{}\n{}", 1, False), (b"{}\r\n{}\n", 2, True), (b"{}\r\n{}\r\n{}\n{}", 4, False),
])
def test_one_object_per_line(data: bytes, objects: int, expected: bool) -> None:
    assert _files._one_object_per_line(data, objects) is expected
