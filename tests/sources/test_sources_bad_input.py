"""Bad input in dump files and URLs: a clear error or an error row keeping the bytes, never a crash or a silent row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agent_inspect as ai
from agent_inspect.sources._files import NO_PARTITION, read_file
from tests.sources._records import make_records

RECORDS = make_records(2, 2)


def _plain(i: int, **extra: object) -> bytes:
    key, value = RECORDS[i]
    return json.dumps({"key": key, "value": json.loads(value), **extra}, separators=(",", ":")).encode()


def _kcat(i: int, *, partition: int = 0, offset: int | None = None, **extra: object) -> bytes:
    key, value = RECORDS[i]
    return json.dumps({"topic": "t", "partition": partition, "offset": i if offset is None else offset,
                       "tstype": "create", "ts": 1_700_000_000_000 + i, "key": key, "payload": value.decode(),
                       **extra}, separators=(",", ":")).encode()


def _write(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


# ------------------------------------------------------------------------- 1. a line without a value


def test_plain_line_without_value_is_an_error_row_not_a_tombstone(tmp_path: Path) -> None:
    key, _ = RECORDS[0]
    misspelled = json.dumps({"key": key, "Value": None}).encode()
    lines = [_plain(0), _kcat(1), misspelled, json.dumps({"key": key, "value": None}).encode()]
    read = read_file(_write(tmp_path / "p.jsonl", lines))
    assert read.source.file_format == "jsonl"
    assert sorted(read.line_errors) == [1, 2]
    for row in (1, 2):
        assert read.line_errors[row].startswith(f"line {row + 1}: ") and "value" in read.line_errors[row]
        assert read.batch.value[row] == lines[row]       # the line's bytes are kept
    assert read.batch.value[3] is None                   # only an explicit "value": null is a tombstone
    log = ai.load_file(tmp_path / "p.jsonl")
    assert int(log.records["tombstone"].sum()) == 1 and len(log.errors) == 2


def test_non_utf8_first_line_does_not_flip_a_kcat_file(tmp_path: Path) -> None:
    broken = _kcat(0).replace(b'"topic":"t"', b'"topic":"t\xff"')
    lines = [broken, *(_kcat(i) for i in range(1, len(RECORDS)))]
    read = read_file(_write(tmp_path / "k.jsonl", lines))
    assert read.source.file_format == "kcat-jsonl"
    assert list(read.line_errors) == [0] and read.batch.value[0] == broken
    assert [k.decode() for k in read.batch.key[1:]] == [k for k, _ in RECORDS[1:]]


def test_non_utf8_only_line_still_sniffs_as_kcat(tmp_path: Path) -> None:
    broken = _kcat(0).replace(b'"topic":"t"', b'"topic":"t\xff"')
    read = read_file(_write(tmp_path / "k.jsonl", [broken]))
    assert read.source.file_format == "kcat-jsonl" and list(read.line_errors) == [0]


@pytest.mark.parametrize("first", ["kcat", "plain"])
def test_mixed_files_get_an_error_per_foreign_line(tmp_path: Path, first: str) -> None:
    kcat = [_kcat(i) for i in range(len(RECORDS))]
    plain = [_plain(i) for i in range(len(RECORDS))]
    # the majority decides the format, whichever line comes first; the others are error rows
    lines = [plain[0], *kcat] if first == "plain" else [kcat[0], *plain]
    read = read_file(_write(tmp_path / "m.jsonl", lines))
    assert read.source.file_format == ("kcat-jsonl" if first == "plain" else "jsonl")
    assert list(read.line_errors) == [0] and read.batch.value[0] == lines[0]


# ------------------------------------------------------------------------- 2. positions out of range

_OUT_OF_RANGE = [{"partition": 2**31}, {"partition": 10**30}, {"offset": 2**63}, {"offset": 10**30},
                 {"partition": -1}, {"offset": -1}, {"timestamp": 2**63}, {"timestamp": -(2**63) - 1}]


@pytest.mark.parametrize("bad", _OUT_OF_RANGE, ids=lambda d: "-".join(f"{k}={v}" for k, v in d.items()))
def test_out_of_range_positions_are_error_rows(tmp_path: Path, bad: dict[str, int]) -> None:
    plain = [_plain(0, partition=1, offset=5), _plain(1, **{"partition": 1, "offset": 6, **bad})]
    kbad = {("ts" if k == "timestamp" else k): v for k, v in bad.items()}
    kcat = [_kcat(0, partition=1, offset=5), _kcat(1, **{"partition": 1, "offset": 6, **kbad})]
    for name, lines in (("p.jsonl", plain), ("k.jsonl", kcat)):
        path = _write(tmp_path / name, lines)
        log = ai.load_file(path)
        assert len(log.records) == 2 and len(log.errors) == 1
        reason = log.errors["error"].iloc[0]
        assert reason.startswith("line 2: ") and "out of range" in reason
        assert log.raw.value[log.errors.index[0]] == lines[1]
        assert dict(log.source.end_offsets) == {1: 6}


def test_largest_valid_positions_load(tmp_path: Path) -> None:
    lines = [_plain(0, partition=2**31 - 1, offset=2**63 - 2, timestamp=2**63 - 1)]
    log = ai.load_file(_write(tmp_path / "p.jsonl", lines))
    assert len(log.errors) == 0
    assert (int(log.records["partition"].iloc[0]), int(log.records["offset"].iloc[0])) == (2**31 - 1, 2**63 - 2)


# ------------------------------------------------------------------------- 4. writers: any bytes, all or nothing


def _log_of(rows: list[tuple[int, int, bytes | None, bytes | None]]) -> ai.ActionStateLog:
    from agent_inspect.log import ActionStateLog
    from agent_inspect.sources import RawBatch, SourceInfo

    raw = RawBatch()
    for p, o, k, v in rows:
        raw.append(p, o, None, k, v)
    return ActionStateLog.from_raw(raw, SourceInfo(kind="kafka", location="kafka://h:1/t", topic="t"))


def test_json_looking_value_with_invalid_utf8_goes_to_base64(tmp_path: Path) -> None:
    key, _ = RECORDS[0]
    values = [b'{"a":"\xff"}', b'["\xc3"]', b'{"a":"\xed\xa0\x80"}']
    log = _log_of([(0, i, key.encode(), v) for i, v in enumerate(values)])
    path = ai.sources.write_jsonl(log, tmp_path / "x.jsonl")
    assert all("value_base64" in json.loads(line) for line in path.read_bytes().splitlines())
    assert ai.load_file(path).raw.value == values


class _Broken:
    """A log whose last record cannot be written: the writer fails after writing most of the file."""

    def __init__(self, log: ai.ActionStateLog) -> None:
        self.records, self.source, self.raw = log.records, log.source, log.raw
        self.raw.key[-1] = 17  # type: ignore[call-overload]


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_failed_export_leaves_the_old_file_and_no_debris(tmp_path: Path, suffix: str) -> None:
    writer = ai.sources.write_jsonl if suffix == ".jsonl" else ai.sources.write_parquet
    out = tmp_path / f"out{suffix}"
    out.write_bytes(b"previous export")
    good = _log_of([(0, i, k.encode(), v) for i, (k, v) in enumerate(RECORDS)])
    with pytest.raises(Exception):  # noqa: B017 - any failure: what matters is what is left on disk
        writer(_Broken(good), out)
    assert out.read_bytes() == b"previous export"
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]
    writer(_log_of([(0, i, k.encode(), v) for i, (k, v) in enumerate(RECORDS)]), out)
    assert ai.load_file(out).raw.value == [v for _, v in RECORDS]
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]


def test_export_into_a_missing_directory_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(ai.SourceError, match="cannot write"):
        ai.sources.write_jsonl(_log_of([(0, 0, b"k", None)]), tmp_path / "nope" / "x.jsonl")


# ------------------------------------------------------------------------- 6. one record per line, exact line numbers


@pytest.mark.parametrize("fmt", ["jsonl", "kcat-jsonl"])
def test_two_objects_on_a_line_and_an_object_over_two_lines_are_errors(tmp_path: Path, fmt: str) -> None:
    make = _plain if fmt == "jsonl" else _kcat
    rec = [make(i) for i in range(len(RECORDS))]
    split_at = rec[2].index(b",") + 1
    # as many objects as lines, so counting decoded objects cannot notice
    lines = [rec[0], rec[1] + rec[1], rec[2][:split_at], rec[2][split_at:], rec[3]]
    read = read_file(_write(tmp_path / "x.jsonl", lines), file_format=fmt)
    assert sorted(read.line_errors) == [1, 2, 3]
    assert [read.batch.value[i] for i in (1, 2, 3)] == lines[1:4]
    assert [read.line_errors[i].split(":")[0] for i in (1, 2, 3)] == ["line 2", "line 3", "line 4"]
    if fmt == "jsonl":  # unpositioned: a good row's offset is its line number
        assert [read.batch.offset[i] for i in (0, 4)] == [1, 5]
    else:
        assert [read.batch.key[i] for i in (0, 4)] == [RECORDS[0][0].encode(), RECORDS[3][0].encode()]


def test_objects_separated_by_spaces_on_one_line_are_an_error(tmp_path: Path) -> None:
    lines = [_plain(0), _plain(1) + b"  " + _plain(2), _plain(3)]
    read = read_file(_write(tmp_path / "x.jsonl", lines))
    assert list(read.line_errors) == [1] and [read.batch.offset[i] for i in (0, 2)] == [1, 3]


_PIECES = st.sampled_from([b"{}", b'{"a":1}', b'{"a":{"b":[1,{}]}}', b"\n", b"\r\n", b" ", b",", b"}", b"{", b'{"a":'])


@settings(deadline=None, max_examples=200)
@given(st.lists(_PIECES, max_size=12).map(b"".join))
def test_decoding_agrees_with_a_line_by_line_reference(data: bytes) -> None:
    import msgspec

    from agent_inspect.sources._jsonl import _decoded

    decoder = msgspec.json.Decoder()
    want = []
    for i, line in enumerate(data.split(b"\n")):
        if line.strip():
            try:
                want.append((i + 1, decoder.decode(line), None))
            except msgspec.DecodeError:
                want.append((i + 1, None, "error"))
    got = [(n, rec, None if err is None else "error") for n, rec, err in _decoded(decoder, data)]
    assert got == want


# ------------------------------------------------------------------------- 7. URLs and timeouts


@pytest.mark.parametrize("url, message", [
    ("kafka://127.0.0.1:99999/t", "port 99999"),
    ("kafka://127.0.0.1:0/t", "port 0"),
    ("kafka://h1:9092,h2:70000/t", "port 70000"),
    ("kafka://h1:x/t", "port 'x'"),
    ("kafka://[::1:9092/t", "kafka URL"),
    ("fluss://127.0.0.1:65536/db.t", "port 65536"),
    ("fluss://[::1/db.t", "fluss URL"),
])
def test_bad_ports_and_unparsable_urls_are_source_errors(url: str, message: str) -> None:
    with pytest.raises(ai.SourceError, match=message) as info:
        ai.load(url, progress=False, timeout=1)
    assert "\n" not in str(info.value)


def test_good_server_lists_pass_the_url_check() -> None:
    from agent_inspect.sources import split_source_url as _split_url

    assert _split_url("kafka://[::1]:9092,h2/t", "kafka") == ("[::1]:9092,h2", "t")
    assert _split_url("fluss://h:65535/db.t", "fluss") == ("h:65535", "db.t")


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf")])
def test_timeout_must_be_positive_and_finite(kafka_bootstrap: str, timeout: float) -> None:
    for load in (lambda: ai.load_kafka(kafka_bootstrap, "t", timeout=timeout, progress=False),
                 lambda: ai.load(f"kafka://{kafka_bootstrap}/t", timeout=timeout, progress=False),
                 lambda: ai.load_fluss("127.0.0.1:1", "db.t", timeout=timeout, progress=False)):
        with pytest.raises(ai.SourceError, match="timeout"):
            load()


# ------------------------------------------------------------------------- 3. Parquet files not written by us


def _parquet(path: Path, columns: dict[str, object]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), path)  # type: ignore[arg-type]
    return path


def _columns(**override: object) -> dict[str, object]:
    import pyarrow as pa

    keys = [k.encode() for k, _ in RECORDS]
    values = [v for _, v in RECORDS]
    n = len(RECORDS)
    base: dict[str, object] = {"partition": pa.array([0] * n, pa.int32()), "offset": pa.array(range(n), pa.int64()),
                               "timestamp_ms": pa.array([1_700_000_000_000] * n, pa.int64()),
                               "key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary())}
    base.update(override)
    return base


def test_parquet_lossless_casts_are_taken(tmp_path: Path) -> None:
    import pyarrow as pa

    n = len(RECORDS)
    cols = _columns(partition=pa.array([0] * n, pa.int64()), offset=pa.array(range(n), pa.uint16()),
                    timestamp_ms=pa.array([1_700_000_000_000_000] * n, pa.timestamp("us", tz="UTC")),
                    key=pa.array([k for k, _ in RECORDS], pa.large_string()),
                    value=pa.array([v for _, v in RECORDS], pa.large_binary()))
    log = ai.load_file(_parquet(tmp_path / "cast.parquet", cols))
    want = ai.load_file(_parquet(tmp_path / "plain.parquet", _columns()))
    assert len(log.errors) == 0
    for col in ("partition", "offset", "timestamp_ms", "key", "value"):
        assert getattr(log.raw, col) == getattr(want.raw, col)


@pytest.mark.parametrize("column, array", [
    ("partition", lambda pa, n: pa.array(["a"] * n)),
    ("offset", lambda pa, n: pa.array([0.5] * n)),
    ("timestamp_ms", lambda pa, n: pa.array(["x"] * n)),
    ("timestamp_ms", lambda pa, n: pa.array([1_700_000_000_000_000_001] * n, pa.timestamp("ns"))),
    ("key", lambda pa, n: pa.array([1] * n)),
    ("value", lambda pa, n: pa.array([[1]] * n)),
    ("agent_key", lambda pa, n: pa.array([b"\xff"] * n)),
    ("partition", lambda pa, n: pa.array([2**63 + 5] * n, pa.uint64())),
])
def test_parquet_wrong_column_types_are_one_line_source_errors(  # type: ignore[no-untyped-def]
        tmp_path: Path, column: str, array) -> None:
    import pyarrow as pa

    path = _parquet(tmp_path / "bad.parquet", _columns(**{column: array(pa, len(RECORDS))}))
    with pytest.raises(ai.SourceError, match=f"column '{column}'") as info:
        ai.load_file(path)
    assert "\n" not in str(info.value)


def test_parquet_null_or_out_of_range_positions_are_error_rows(tmp_path: Path) -> None:
    import pyarrow as pa

    n = len(RECORDS)
    cols = _columns(partition=pa.array([0, None, 0, 2**31, *[0] * (n - 4)], pa.int64()),
                    offset=pa.array([None, 1, -5, 3, *range(4, n)], pa.int64()))
    log = ai.load_file(_parquet(tmp_path / "nulls.parquet", cols))
    assert len(log.records) == n and len(log.errors) == 4
    reasons = sorted(log.errors["error"])
    assert reasons == ["row 1: offset is null", "row 2: partition is null",
                       "row 3: offset -5 is out of range (0 to 9223372036854775807)",
                       "row 4: partition 2147483648 is out of range (0 to 2147483647)"]
    assert sorted(log.raw.value) == sorted(v for _, v in RECORDS)     # the records' bytes are kept


# ------------------------------------------------------------------------- 5. error rows survive export


def _assert_same_log(a: ai.ActionStateLog, b: ai.ActionStateLog) -> None:
    import pandas as pd

    for col in ("partition", "offset", "timestamp_ms", "key", "value", "agent_key"):
        assert getattr(a.raw, col) == getattr(b.raw, col), col
    pd.testing.assert_frame_equal(a.records, b.records)


def _malformed_files(tmp_path: Path) -> list[Path]:
    bad = [b"{broken", b'{"key": "x", "Value": 1}', b"\xff\xfe not utf-8", b"[1,2]", _plain(0) + _plain(1)]
    kcat = [_kcat(i, partition=i % 2, offset=i // 2) for i in range(len(RECORDS))]
    plain = [_plain(i) for i in range(len(RECORDS))]
    kcat[2:2], plain[3:3] = bad, bad
    plain.append(_plain(2, partition=3, offset=1).replace(b'"partition":3', b'"partition":-1'))
    return [_write(tmp_path / "k.jsonl", kcat), _write(tmp_path / "p.jsonl", plain)]


@pytest.mark.parametrize("which", [0, 1], ids=["kcat", "plain"])
def test_error_rows_round_trip_through_both_export_formats(tmp_path: Path, which: int) -> None:
    path = _malformed_files(tmp_path)[which]
    log = ai.load_file(path)
    lines = path.read_bytes().split(b"\n")
    assert len(log.errors) == 5 + which  # the plain file also has a line with partition -1
    for pos, reason in log.errors["error"].items():  # each reason sits on the row holding its line
        assert log.raw.value[pos] == lines[int(reason.split(":")[0].split()[1]) - 1]
    for name in ("x.jsonl", "x.parquet", "again.jsonl"):
        writer = ai.sources.write_parquet if name.endswith(".parquet") else ai.sources.write_jsonl
        out = writer(log, tmp_path / name)
        if name.endswith(".parquet"):
            import pyarrow.parquet as pq

            assert pq.read_schema(out).names[-1] == "malformed"
        again = ai.load_file(out)
        _assert_same_log(log, again)
        log = again  # and once more from the reloaded copy: nothing nests or drifts


def test_parquet_error_rows_round_trip_through_jsonl(tmp_path: Path) -> None:
    import pyarrow as pa

    n = len(RECORDS)
    cols = _columns(partition=pa.array([None, *[0] * (n - 1)], pa.int32()))
    log = ai.load_file(_parquet(tmp_path / "nulls.parquet", cols))
    assert len(log.errors) == 1
    for writer, name in ((ai.sources.write_jsonl, "x.jsonl"), (ai.sources.write_parquet, "x.parquet")):
        _assert_same_log(log, ai.load_file(writer(log, tmp_path / name)))


@pytest.mark.parametrize("content", [b"", b"\n\n  \n"], ids=["empty", "blank"])
def test_empty_files_round_trip(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "e.jsonl"
    path.write_bytes(content)
    log = ai.load_file(path)
    assert len(log.records) == 0
    for writer, name in ((ai.sources.write_jsonl, "x.jsonl"), (ai.sources.write_parquet, "x.parquet")):
        _assert_same_log(log, ai.load_file(writer(log, tmp_path / name)))


_BAD_LINES = st.one_of(
    st.binary(min_size=1, max_size=30).filter(lambda b: b"\n" not in b and b"\r" not in b and b.strip() != b""),
    st.sampled_from([b"[1,2]", b"null", b'{"key":"k"}', b'{"Value":1}', b"{}{}", b'{"partition":-3,"value":{}}']),
    st.integers(0, len(RECORDS) - 1).map(lambda i: _plain(i)[: 20 + i]),
)


@settings(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fmt=st.sampled_from(["jsonl", "kcat-jsonl"]), data=st.data())
def test_any_mix_of_bad_lines_round_trips_exactly(tmp_path: Path, fmt: str, data: st.DataObject) -> None:
    good = [_plain(i) if fmt == "jsonl" else _kcat(i, partition=i % 2, offset=i // 2) for i in range(len(RECORDS))]
    lines = list(good)
    inserted = data.draw(st.lists(st.integers(0, len(lines)), min_size=1, max_size=4))
    for at in sorted(inserted, reverse=True):
        lines.insert(at, data.draw(_BAD_LINES))
    log = ai.load_file(_write(tmp_path / "in.jsonl", lines), file_format=fmt)
    assert len(log.records) == len(lines) and len(log.errors) == len(inserted)
    for name in ("x.jsonl", "x.parquet"):
        writer = ai.sources.write_parquet if name.endswith(".parquet") else ai.sources.write_jsonl
        _assert_same_log(log, ai.load_file(writer(log, tmp_path / name)))


def test_plain_lines_with_a_payload_field_stay_plain(tmp_path: Path) -> None:
    lines = [_plain(i, partition=0, offset=i, payload="extra") for i in range(len(RECORDS))]
    read = read_file(_write(tmp_path / "p.jsonl", lines))
    assert read.source.file_format == "jsonl" and not read.line_errors


@pytest.mark.parametrize("fmt", ["jsonl", "kcat-jsonl"])
def test_a_cut_off_gzip_dump_keeps_the_lines_before_the_cut(tmp_path: Path, fmt: str) -> None:
    import gzip

    lines = [_plain(i) if fmt == "jsonl" else _kcat(i) for i in range(len(RECORDS))]
    whole = gzip.compress(b"\n".join(lines) + b"\n")
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(whole[: len(whole) // 2])   # a copy interrupted mid-file
    log = ai.load_file(path)
    kept = log.records[log.records["error"].isna()]
    assert 0 < len(kept) < len(RECORDS)
    assert log.errors["error"].str.contains("gzip stream ends early").sum() == 1
    assert log.source.options["malformed_lines"] == len(log.errors)
    for writer, name in ((ai.sources.write_jsonl, "x.jsonl"), (ai.sources.write_parquet, "x.parquet")):
        _assert_same_log(log, ai.load_file(writer(log, tmp_path / name)))


def _inflated(cut: bytes) -> bytes:
    import zlib

    return zlib.decompressobj(wbits=31).decompress(cut)


@pytest.mark.parametrize("fmt", ["jsonl", "kcat-jsonl"])
def test_a_gzip_dump_cut_mid_line_makes_that_line_the_error_row(tmp_path: Path, fmt: str) -> None:
    import gzip

    lines = [_plain(i) if fmt == "jsonl" else _kcat(i, offset=100 + i) for i in range(len(RECORDS))]
    whole = gzip.compress(b"\n".join(lines) + b"\n")
    cut = whole[: len(whole) * 2 // 3]
    data = _inflated(cut)
    assert not data.endswith(b"\n")
    n = data.count(b"\n") + 1                  # the line the cut falls inside
    (tmp_path / "cut.jsonl.gz").write_bytes(cut)
    read = read_file(tmp_path / "cut.jsonl.gz")
    # one error row: the cut line itself, at its line number, with what was read of it; no row for a line after
    # it (the cut line was "not valid JSON: Input data was truncated" and line n + 1 said the stream ended)
    assert list(read.line_errors.values()) == [
        f"line {n}: the file ends inside this line: cut off; gzip stream ends early (a cut-off file); the lines "
        "before the cut were read"]
    row = len(read.batch) - 1
    assert list(read.line_errors) == [row] and read.batch.offset[row] == n
    assert read.batch.value[row] == data[data.rfind(b"\n") + 1:]
    assert read.batch.partition[row] == (NO_PARTITION if fmt == "kcat-jsonl" else 0)
    assert len(read.batch) == n


def test_a_gzip_dump_cut_after_a_whole_last_line_says_so_after_it(tmp_path: Path) -> None:
    import gzip

    lines = [_plain(i) for i in range(len(RECORDS))]
    (tmp_path / "cut.jsonl.gz").write_bytes(gzip.compress(b"\n".join(lines))[:-8])   # no trailer, no last "\n"
    read = read_file(tmp_path / "cut.jsonl.gz")
    assert read.line_errors == {len(lines): f"line {len(lines) + 1}: gzip stream ends early (a cut-off file); the "
                                            "lines before the cut were read"}
    assert read.batch.value[len(lines) - 1] is not None   # the last record read whole


def test_a_plain_dump_cut_mid_line_says_the_file_ends_inside_it(tmp_path: Path) -> None:
    lines = [_kcat(i, offset=100 + i) for i in range(len(RECORDS))]
    path = tmp_path / "cut.kcat.jsonl"
    path.write_bytes(b"\n".join(lines)[:-20])            # a copy or a dump stopped mid-line
    read = read_file(path)
    assert read.line_errors == {len(lines) - 1: f"line {len(lines)}: the file ends inside this line: cut off"}
    assert read.batch.partition[len(lines) - 1] == NO_PARTITION


def test_a_bad_utf8_byte_inside_attributes_is_an_error_row(tmp_path: Path) -> None:
    # the attributes are kept raw, so a bad byte there loaded as U+FFFD, silently; a bad byte in `id` was an error
    lines = [_plain(i) for i in range(len(RECORDS))]
    assert b'"attributes":{' in lines[1]
    lines[1] = lines[1].replace(b'"attributes":{', b'"attributes":{"n\xffote":"caf\xc3\xa9",', 1)
    lines[2] = lines[2].replace(b'"attributes":{', b'"attributes":{"note":"caf\xc3\xa9 \xe6\x97\xa5",', 1)  # valid
    log = ai.load_file(_write(tmp_path / "bad-byte.jsonl", lines))
    assert log.errors["error"].tolist() == ["value: value has a string that is not valid UTF-8"]
    assert log.errors["offset"].tolist() == [2] and len(log.records) == len(RECORDS)
    with pytest.raises(ai.ValueFormatError, match="not valid UTF-8"):
        log.value(1)
    assert log.value(2) is not None


def test_a_damaged_parquet_row_group_loses_only_its_rows(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    table = pq.read_table(ai.samples.path("production").with_suffix(".parquet"))
    path = tmp_path / "groups.parquet"
    pq.write_table(table, path, row_group_size=500, compression="none")
    data = bytearray(path.read_bytes())
    page = pq.ParquetFile(path).metadata.row_group(2).column(4).data_page_offset   # row group 2's values
    data[page + 10:page + 60] = b"\xff" * 50                                         # a damaged page header
    path.write_bytes(bytes(data))
    log = ai.load_file(path)   # it failed whole: "is not a readable Parquet file"
    assert len(log.records) == len(table) - 500 + 1
    assert log.errors["error"].tolist() == [log.errors["error"].iat[0]]
    assert log.errors["error"].iat[0].startswith("row 1001: row group 2 (rows 1001 to 1500) does not read (")
    assert log.records["error"].isna().sum() == len(table) - 500


@pytest.mark.parametrize(("fmt", "gz"), [("kcat", False), ("plain", False), ("plain", True)])
def test_a_utf8_byte_order_mark_does_not_cost_the_first_record(tmp_path: Path, fmt: str, gz: bool) -> None:
    # an editor or Windows tool that saved the dump with a BOM made line 1 an error row ("invalid character")
    import gzip

    make = _kcat if fmt == "kcat" else _plain
    data = b"\xef\xbb\xbf" + b"\n".join(make(i) for i in range(len(RECORDS))) + b"\n"
    path = tmp_path / ("bom.jsonl.gz" if gz else "bom.jsonl")
    path.write_bytes(gzip.compress(data) if gz else data)
    read = read_file(path)
    assert read.line_errors == {} and read.source.file_format == ("kcat-jsonl" if fmt == "kcat" else "jsonl")
    assert [k.decode() for k in read.batch.key] == [k for k, _ in RECORDS]
    kind = ai.sources.FileKind.KCAT if fmt == "kcat" else ai.sources.FileKind.ACTION_STATE
    assert ai.sources.file_kind(path) == kind


def test_a_directory_of_dumps_says_to_pass_one_of_its_files(tmp_path: Path) -> None:
    # it said "cannot open 'dumps': Is a directory; check the path", which does not say what to pass instead
    folder = tmp_path / "dumps"
    folder.mkdir()
    for name in ("b.kcat.jsonl", "a.jsonl.gz", "c.parquet", "notes.txt"):
        (folder / name).write_bytes(b"")
    with pytest.raises(ai.SourceError) as got:
        ai.load(folder)
    message = str(got.value)
    assert "\n" not in message and "is a directory" in message
    assert "a.jsonl.gz, b.kcat.jsonl, c.parquet" in message and "notes.txt" not in message
    (tmp_path / "empty").mkdir()
    with pytest.raises(ai.SourceError, match="is a directory with no dump file in it"):
        ai.load(tmp_path / "empty")


def test_a_directory_names_the_dumps_a_scan_of_it_reads(tmp_path: Path) -> None:
    """The files ``ai.load(directory)`` suggests, those a scan of it reads and the inputs no output may overwrite
    are one list: the suggestion left out ``.ndjson`` and a gzip dump not named ``.json(l).gz``, which a scan reads."""
    logs = Path(__file__).resolve().parents[2] / "sample_logs"
    folder = tmp_path / "dumps"
    folder.mkdir()
    (folder / "a.ndjson").write_bytes((logs / "N04.jsonl").read_bytes())
    (folder / "b.dump.gz").write_bytes((logs / "N04.jsonl").read_bytes())   # read by magic, as a plain file here
    (folder / "notes.txt").write_bytes(b"")
    with pytest.raises(ai.SourceError, match=r"is a directory; pass one of its dump files \(a\.ndjson, b\.dump\.gz\)"):
        ai.load(folder)
    _, windows = ai.log.plan_windows(folder)
    assert sorted(Path(w.path).name for w in windows) == ["a.ndjson", "b.dump.gz"]
    assert sorted(Path(f).name for f in ai.sources.input_files(folder, kind="dump")) == ["a.ndjson", "b.dump.gz"]


def test_a_dump_that_repeats_positions_says_so_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `cat a.jsonl b.jsonl` of overlapping dumps loaded every repeated record as one more write, silently
    lines = [_kcat(i, offset=10 + i) for i in range(len(RECORDS))]
    path = _write(tmp_path / "both.kcat.jsonl", [*lines, *lines[1:3]])
    with pytest.warns(UserWarning, match=r"2 records at a partition and offset an earlier line has \(first: "
                                         r"partition 0, offset 11\)") as got:
        log = ai.load_file(path)
    assert len(got) == 1 and "\n" not in str(got[0].message)
    assert log.source.options["repeated_positions"] == 2 and len(log.records) == len(lines) + 2
    clean = _write(tmp_path / "one.kcat.jsonl", lines)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "repeated_positions" not in ai.load_file(clean).source.options
    from agent_inspect.cli import main
    assert main(["summary", str(path)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("agent-inspect: ") and "2 records at a partition and offset" in err[0]
    assert main(["reconstruct", str(path)]) == 0       # a verb that loads by itself says it in one line too
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"agent-inspect: {path} holds 2 records at a partition and offset")
