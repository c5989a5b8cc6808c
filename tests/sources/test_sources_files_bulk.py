"""The JSONL readers' column-wise fast path gives exactly what the per-line rules give, for any mix of lines."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_inspect.sources import _files, _jsonl
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


def _reads(path: Path, monkeypatch: pytest.MonkeyPatch, file_format: str, chunk: int = 1 << 20
           ) -> list[_files.FileRead]:
    """The file read three ways: as shipped (pieces of ``chunk`` bytes), past the column-wise build, line by line."""
    with monkeypatch.context() as m:
        m.setattr(_files, "_CHUNK", chunk)
        m.setattr(_jsonl, "_SCAN", chunk)  # the line-break scan of a whole file in several pieces too
        reads = [read_file(path, file_format=file_format)]
        m.setattr(_jsonl, "_plain_columns", lambda *args: None)
        m.setattr(_jsonl, "_kcat_columns", lambda *args: None)
        reads.append(read_file(path, file_format=file_format))
        m.setattr(_jsonl, "_whole", lambda decoder, data: None)
        reads.append(read_file(path, file_format=file_format))
    return reads


def _same(reads: list[_files.FileRead]) -> None:
    first = reads[0]
    for other in reads[1:]:
        assert dataclasses.asdict(other.batch) == dataclasses.asdict(first.batch)
        assert dict(other.line_errors) == dict(first.line_errors)
        assert other.source == first.source


def _lines(pool: list[bytes], rare: list[bytes]) -> st.SearchStrategy[list[bytes]]:
    """Clean lines with at most two rare ones put in (none in about half the files: the fast path must be hit)."""
    def put(clean: list[bytes], extra: list[tuple[int, bytes]]) -> list[bytes]:
        for at, line in extra:
            clean.insert(at % (len(clean) + 1), line)
        return clean

    extra = st.lists(st.tuples(st.integers(0, 8), st.sampled_from(rare)), max_size=2)
    return st.builds(put, st.lists(st.sampled_from(pool), min_size=1, max_size=8), st.one_of(st.just([]), extra))


def _file(tmp_path: Path, lines: list[bytes], ending: bytes | list[bytes], *, last: bytes = b"\n",
          gz: bool = False) -> Path:
    endings = [ending] * len(lines) if isinstance(ending, bytes) else ending
    data = b"".join(line + end for line, end in zip(lines[:-1], endings)) + lines[-1] + last
    path = tmp_path / ("f.jsonl.gz" if gz else "f.jsonl")
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


_layout = {  # how lines are ended and stored, and the size of the pieces the fast path reads
    "ending": st.lists(st.sampled_from([b"\n", b"\r\n"]), min_size=8, max_size=8),
    "last": st.sampled_from([b"\n", b"\r\n", b"", b"\n\n", b" "]),
    "gz": st.booleans(),
    "chunk": st.sampled_from([64, 700, 1500, 1 << 21]),
}


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=_lines(PLAIN_CLEAN, PLAIN_RARE), **_layout)
def test_plain_fast_path_equals_per_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: list[bytes],
                                         ending: list[bytes], last: bytes, gz: bool, chunk: int) -> None:
    path = _file(tmp_path, lines, ending, last=last, gz=gz)
    _same(_reads(path, monkeypatch, "jsonl", chunk))


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.one_of(_lines(KCAT_CLEAN, KCAT_RARE), _lines(KCAT_B64, KCAT_B64_RARE)), **_layout)
def test_kcat_fast_path_equals_per_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: list[bytes],
                                        ending: list[bytes], last: bytes, gz: bool, chunk: int) -> None:
    path = _file(tmp_path, lines, ending, last=last, gz=gz)
    _same(_reads(path, monkeypatch, "kcat-jsonl", chunk))


@pytest.mark.parametrize("pool, rare, file_format", [(PLAIN_CLEAN, PLAIN_RARE, "jsonl"),
                                                     (KCAT_CLEAN, KCAT_RARE, "kcat-jsonl"),
                                                     (KCAT_B64, KCAT_B64_RARE, "kcat-jsonl")])
def test_every_rare_line_among_clean_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pool: list[bytes],
                                          rare: list[bytes], file_format: str) -> None:
    for chunk in (1 << 21, 700):
        _same(_reads(_file(tmp_path, pool, b"\n"), monkeypatch, file_format, chunk))
        for line in rare:
            _same(_reads(_file(tmp_path, [*pool, line, pool[0]], b"\n"), monkeypatch, file_format, chunk))


def test_clean_files_take_the_column_wise_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path is really taken for clean files (else the comparisons above compare a path with itself)."""
    taken = []
    for name in ("_plain_columns", "_kcat_columns"):
        real = getattr(_jsonl, name)
        monkeypatch.setattr(_jsonl, name, lambda *a, _real=real, _name=name: taken.append(_name) or _real(*a))
    for lines, file_format in ((PLAIN_CLEAN, "jsonl"), (KCAT_CLEAN, "kcat-jsonl"), (KCAT_B64, "kcat-jsonl")):
        read = read_file(_file(tmp_path, lines, b"\n"), file_format=file_format)
        assert len(read.batch) == len(lines) and not read.line_errors
    assert taken == ["_plain_columns", "_kcat_columns", "_kcat_columns"]
    monkeypatch.undo()
    path = _file(tmp_path, PLAIN_CLEAN * 3, b"\n")
    monkeypatch.setattr(_files, "_CHUNK", 700)  # shorter than most lines: the buffer grows
    pieces = [bytes(piece) for piece in _files._file_chunks(path)]
    assert len(pieces) > 3 and all(p.endswith(b"\n") for p in pieces) and b"".join(pieces) == path.read_bytes()
    assert _jsonl._read_columns(_files._file_chunks(path), "x", kcat=False, b64=False) is not None
    assert _jsonl._plain_columns(_jsonl._PLAIN.decode_lines(b"\n".join(PLAIN_CLEAN)), 1) is not None
    assert _jsonl._kcat_columns(_jsonl._KCAT.decode_lines(b"\n".join(KCAT_CLEAN)), False) is not None
    assert _jsonl._kcat_columns(_jsonl._KCAT.decode_lines(b"\n".join(KCAT_B64)), True) is not None


@pytest.mark.parametrize("data, objects, expected", [
    (b"", 0, True), (b"\n", 0, True), (b"{}", 1, True), (b"{}\n", 1, True), (b"{}\n{}\n", 2, True),
    (b"{}\r\n{}\r\n", 2, True), (b"{}\r\n{}\n{}", 3, True), (b"{}\n\n{}", 2, False), (b"{}{}\n{}", 3, False),
    (b'{"a":\n1}\n{}', 2, False), (b" {}\n{}", 2, False), (b"{}\n{} ", 2, False), (b"{}\n {}", 2, False),
    (b"{}\n{}", 1, False), (b"{}\r\n{}\n", 2, True), (b"{}\r\n{}\r\n{}\n{}", 4, True),
    (b"{}\r\r\n{}", 2, False), (b"\r\n{}", 1, False), (b"{}\r", 1, True), (b"{}\n\n", 1, False),
])
def test_one_object_per_line(data: bytes, objects: int, expected: bool) -> None:
    assert _jsonl._one_object_per_line(data, objects) is expected
