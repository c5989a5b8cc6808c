"""Per-record columns of ActionStateLog that the bulk load computes without decoding twice (spec §5.5)."""

from __future__ import annotations

import uuid

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_inspect.codec import (
    ActionState,
    CallResult,
    Event,
    StateKey,
    decode_action_state,
    encode_action_state,
    resolve_state_keys,
)
from agent_inspect.log import ActionStateLog
from agent_inspect.sources import RawBatch, SourceInfo

SOURCE = SourceInfo(kind="file", location="/tmp/columns.jsonl", file_format="jsonl")
KEY = b"user_0_7e1a8e43-6a9c-3b7c-8d0c-1a2b3c4d5e6f_0c6f2a1e-5b3d-3e4f-9a8b-7c6d5e4f3a2b"


def test_legacy_call_status_follows_the_exception_payload() -> None:
    calls = (CallResult("f", "a", "gAWV", None, None), CallResult("g", "b", None, "ZXJy", None),
             CallResult("h", "c", None, None, None), CallResult("i", "d", None, None, "PENDING"))
    value = encode_action_state(ActionState(task_event=Event.new("_input_event", {}), call_results=calls),
                                value_format="V2a")
    value_v1 = encode_action_state(ActionState(task_event=Event.new("_input_event", {}), call_results=calls[:3]),
                                   value_format="V1")
    batch = RawBatch([0, 0], [0, 1], [None, None], [KEY, KEY], [value, value_v1])
    r = ActionStateLog.from_raw(batch, SOURCE).records
    want = [[c.effective_status for c in decode_action_state(v).call_results] for v in (value, value_v1)]
    assert want == [["SUCCEEDED", "FAILED", "SUCCEEDED", "PENDING"], ["SUCCEEDED", "FAILED", "SUCCEEDED"]]
    for row, statuses in zip(r.itertuples(), want):
        assert (row.calls_succeeded, row.calls_failed, row.calls_pending) == (
            statuses.count("SUCCEEDED"), statuses.count("FAILED"), statuses.count("PENDING"))


_UUIDS = [str(uuid.UUID(int=i * 7919, version=v)) for i, v in ((1, 3), (2, 3), (3, 4))]
_DIGESTS = ("q" * 43 + "=", "q" * 42 + "A=")  # base64 text that is not / is a SHA-256 digest


@st.composite
def _raw_key(draw: st.DrawFn) -> bytes | None:
    text = draw(st.sampled_from(["user", "u_1", "ü", "", "7", "a_b", "a\nb", _UUIDS[0]]))
    ev, act = draw(st.sampled_from(_UUIDS)), draw(st.sampled_from(_UUIDS))
    seq = draw(st.sampled_from([0, 1, 3, 10**17, 10**19]))
    group = draw(st.sampled_from([0, 7, 200, 10**8, 10**10]))
    shape = draw(st.sampled_from([
        f"{text}_{seq}_{ev}_{act}", f"{group}_{seq}_{ev}_{act}_{text}",
        f"{group}_{seq}_{ev}_{act}_{draw(st.sampled_from(_DIGESTS))}", f"0{seq}_{seq}_{ev}_{act}_{text}",
        f"{text}-{ev}-{act}", f"{group}_{text}_{seq}_{ev}_{act}", "not a key", None, "\xff"]))
    if shape is None:
        return None
    return b"\xff" + shape.encode() if shape == "\xff" else shape.encode()


@settings(deadline=None, max_examples=80)
@given(st.lists(st.tuples(st.integers(0, 2), _raw_key()), max_size=25), st.sampled_from([None, 128]),
       st.lists(st.integers(0, 25), max_size=3))
def test_key_columns_match_the_per_record_parser(rows: list[tuple[int, bytes | None]],
                                                 max_parallelism: int | None, cuts: list[int]) -> None:
    value = encode_action_state(ActionState(task_event=Event.new("_input_event", {}, id="e")))
    batch = RawBatch([p for p, _ in rows], list(range(len(rows))), [None] * len(rows), [k for _, k in rows],
                     [value] * len(rows))
    bounds = [0, *sorted(c for c in cuts if c < len(rows)), len(rows)]  # batches, as a source hands them over
    batches = [RawBatch(batch.partition[a:z], batch.offset[a:z], batch.timestamp_ms[a:z], batch.key[a:z],
                        batch.value[a:z]) for a, z in zip(bounds, bounds[1:])]
    log = ActionStateLog.from_raw(batches, SOURCE, max_parallelism=max_parallelism)
    r = log.records
    raw = log.raw
    want = resolve_state_keys(raw.key, raw.partition, max_parallelism=max_parallelism)
    for pos, (k, got) in enumerate(zip(raw.key, want)):
        row = r.iloc[pos]
        if isinstance(got, StateKey):
            assert pd.isna(row["error"])
            assert (row["key_format"], row["event_uuid"], row["action_uuid"], row["key_flags"]) == (
                got.format, got.event_uuid, got.action_uuid, got.flags)
            assert _na(row["seq"]) == got.seq and _na(row["key_group"]) == got.key_group
            assert (_na(row["key_text"]), _na(row["key_digest"])) == (got.key_text, got.key_digest)
            assert row["business_key"] == got.business_key
        else:
            assert row["error"] == ("key: missing (record has no key)" if got is None else f"key: {got}")
            assert pd.isna(row["key_format"]) and pd.isna(row["business_key"]) and row["key_flags"] == ()
        assert _na(row["state_key"]) == (None if k is None else k.decode("utf-8", "replace"))
    for name in ("key_format", "business_key", "action_uuid", "key_text"):
        assert list(r[name].cat.categories) == list(dict.fromkeys(r[name].dropna().astype(object)))


def _na(v: object) -> object:
    return None if pd.isna(v) else v


def _settle_reference(masks: list[int], keys: list[object], parts: list[int]) -> list[tuple[str | None, bool | None]]:
    """§2.2 record by record: pinned keep theirs; others follow their key's pinned records, else their partition's."""
    from agent_inspect.codec.bulk import newest_format

    def tally(group: list[int]) -> list[tuple[int, int]]:
        counts: dict[int, int] = {}
        for i in group:
            if masks[i] and masks[i] & (masks[i] - 1) == 0:
                counts[masks[i]] = counts.get(masks[i], 0) + 1
        return sorted(((c, b) for b, c in counts.items()), reverse=True)

    out: list[tuple[str | None, bool | None]] = []
    for i, m in enumerate(masks):
        if not m:
            out.append((None, None))
        elif m & (m - 1) == 0:
            out.append((newest_format(m), False))
        else:
            choice = m
            for same in ([j for j in range(len(masks)) if keys[j] == keys[i]],
                         [j for j in range(len(masks)) if parts[j] == parts[i]]):
                hit = next((b for _, b in tally(same) if b & m), None)
                if hit is not None:
                    choice = hit
                    break
            out.append((newest_format(choice), True))
    return out


@settings(deadline=None, max_examples=150)
@given(st.lists(st.tuples(st.integers(0, 127), st.sampled_from(["a", "b", "c", None]), st.integers(0, 2)),
                max_size=40))
def test_value_format_settling_matches_the_record_by_record_rule(rows: list[tuple[int, object, int]]) -> None:
    from agent_inspect.log._build import _settle_formats

    masks, keys, parts = ([r[i] for r in rows] for i in range(3))
    fmts, inferred = _settle_formats(masks, keys, parts)
    got = [(None if pd.isna(f) else f, None if pd.isna(x) else bool(x)) for f, x in zip(list(fmts), list(inferred))]
    assert got == _settle_reference(masks, keys, parts)


@settings(deadline=None, max_examples=100)
@given(st.lists(st.integers(-1, 4), max_size=30), st.lists(st.sampled_from(["a", "b", "c"]), min_size=5, max_size=5))
def test_a_categorical_from_codes_is_the_categorical_of_the_words(codes: list[int], words: list[str]) -> None:
    import numpy as np

    from agent_inspect.log._dtypes import categorical, coded_categorical

    got = coded_categorical(np.array(codes, dtype=np.int64), words)
    want = categorical([None if c < 0 else words[c] for c in codes])
    pd.testing.assert_series_equal(pd.Series(got), pd.Series(want))
    assert list(got.cat.categories) == list(want.cat.categories)


def test_timestamps_missing_or_outside_a_datetime_are_nat_and_the_rest_kept() -> None:
    """A record without a timestamp (None, or Kafka's -1), with a negative one or with one no Python datetime can hold,
    gets NaT; the others keep theirs, whether the batch holds a None (the slow path) or not."""
    def log_of(stamps: list[int | None]) -> ActionStateLog:
        raw = RawBatch([0] * len(stamps), list(range(len(stamps))), stamps, [KEY] * len(stamps),
                       [None] * len(stamps))
        return ActionStateLog.from_raw(raw, SOURCE)

    ok, huge = 1_700_000_000_000, 10 ** 15
    for stamps in ([ok, None, huge, ok + 1], [ok, huge, ok + 1], [None, None], [ok, -1, 0], [-5, None]):
        log = log_of(stamps)
        got = log.records["timestamp"]
        # Kafka's NO_TIMESTAMP (-1, what a dump of msg.timestamp() holds for a record without one) is no time in 1969
        expected = [pd.Timestamp(s, unit="ms", tz="UTC") if s is not None and 0 <= s != huge else pd.NaT for s in stamps]
        assert got.tolist() == expected, stamps
        assert log.raw.timestamp_ms == stamps   # the value read is kept


def _batches_of(records: list[tuple[int, int, bytes | None, bytes | None]], size: int) -> list[RawBatch]:
    return [RawBatch([p for p, _, _, _ in part], [o for _, o, _, _ in part], [1_700_000_000_000 + o for _, o, _, _ in part],
                     [k for _, _, k, _ in part], [v for _, _, _, v in part])
            for part in (records[i:i + size] for i in range(0, len(records), size))]


def test_a_log_read_in_batches_keeps_its_text_in_the_batches_buffers_and_equals_one_read_whole() -> None:
    # Kafka-like chunks (runs of each partition, a missing key, a tombstone): the keys and free-text columns are
    # not joined into new buffers (the copy held up the key columns), yet the frame is the one a single batch in
    # physical order gives; so is that of the same chunks with two offsets out of order.
    records: list[tuple[int, int, bytes | None, bytes | None]] = []
    for i in range(60):
        key = f"user-{i % 7}_{i % 3}_{uuid.uuid3(uuid.NAMESPACE_OID, str(i))}_{uuid.uuid3(uuid.NAMESPACE_OID, 'a')}"
        value = encode_action_state(ActionState(task_event=Event.new("_input_event", {"i": i}, id=str(uuid.UUID(int=i)))))
        records.append(((i // 5) % 3, i, key.encode() if i != 17 else None, value if i != 23 else None))
    whole = ActionStateLog.from_raw(_batches_of(sorted(records, key=lambda r: r[:2]), len(records)), SOURCE).records
    chunked = ActionStateLog.from_raw(_batches_of(records, 10), SOURCE).records
    pd.testing.assert_frame_equal(chunked, whole)
    for name in ("state_key", "task_event_id"):
        assert chunked[name].array._pa_array.num_chunks > 1, name
    records[4], records[3] = records[3], records[4]  # partition 0: offset 4 before 3
    swapped = ActionStateLog.from_raw(_batches_of(records, 10), SOURCE).records
    pd.testing.assert_frame_equal(swapped, ActionStateLog.from_raw(
        _batches_of(sorted(records, key=lambda r: r[:2]), len(records)), SOURCE).records)


def test_a_batch_of_one_repeated_record_has_the_columns_that_record_has_among_others() -> None:
    # a column holding one value all through a batch is filled, not converted cell by cell: the same arrays
    import numpy as np

    from agent_inspect.log._columns import Words, chunk_columns

    root = Event.new("_input_event", {"q": 1})
    calls = (CallResult("f", "a", None, None, "PENDING"),)
    one = encode_action_state(ActionState(task_event=root, call_results=calls))
    other = encode_action_state(ActionState(task_event=Event.new("tool_request", {}, upstream_event_id=root.id),
                                            output_events=(root,), completed=True))
    words = Words()
    mixed = chunk_columns([one, other] * 3, words)
    same = chunk_columns([one] * 4, words)
    for name, col in same.items():
        want = mixed[name]
        if want is None:
            assert col is None, name
        elif isinstance(col, np.ndarray):
            assert col.dtype == want.dtype and col.tolist() == [want[0]] * 4, name
        else:  # Arrow
            assert col.to_pylist() == [want[0].as_py()] * 4, name
