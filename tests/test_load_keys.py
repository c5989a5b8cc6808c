"""``business_keys=`` on a load: a key with no record is an error (none found) or a warning (some found), by the
one check the loaders and the CLI's ``--key`` share, never a silently empty log."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import agent_inspect as ai

LOGS = Path(__file__).resolve().parent.parent / "sample_logs"


def test_a_mistyped_key_is_an_error_naming_it_and_its_close_matches() -> None:
    with pytest.raises(ai.InspectError, match=r"business key 'user-19' has no records in .*did you mean 'user-0019'"):
        ai.load(LOGS / "production.jsonl", business_keys=["user-19"])
    with pytest.raises(ai.InspectError, match=r"business keys 'nope', 'user-19' have no records"):
        ai.load(LOGS / "production.parquet", business_keys=["nope", "user-19"])


def test_some_keys_found_keeps_the_log_and_warns_of_the_others() -> None:
    with pytest.warns(UserWarning, match=r"no records of business key 'user-19' .* the other 1 asked for"):
        log = ai.load(LOGS / "production.jsonl", business_keys=["user-0019", "user-19"])
    assert log.keys() == ["user-0019"] and log.source.options["missing_business_keys"] == ["user-19"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        whole = ai.load(LOGS / "production.jsonl", business_keys=["user-0019", "user-0003"])
    assert set(whole.keys()) == {"user-0019", "user-0003"} and "missing_business_keys" not in whole.source.options


def test_a_digest_keyed_log_finds_a_key_by_its_text() -> None:
    # K2 logs name a key by its digest: asking by text is not "missing"
    text = next(k for k in ai.load(LOGS / "production.jsonl").keys())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        log = ai.load(LOGS / "production_v4.jsonl", business_keys=[text])
    assert len(log.records) and len(log.keys()) == 1


def test_for_key_finds_a_key_of_a_digest_keyed_log_by_its_text() -> None:
    """``log.for_key`` matches a key as ``business_keys=`` does: by text, or by the digest a K2 log names it by."""
    whole = ai.load(LOGS / "production_v4.jsonl")
    loaded = ai.load(LOGS / "production_v4.jsonl", business_keys=["user-0003"])
    one = whole.for_key("user-0003")
    assert len(one.records) == len(loaded.records) > 0 and one.keys() == loaded.keys()
    digest = loaded.keys()[0]
    assert digest != "user-0003" and len(whole.for_key(digest).records) == len(one.records)
    assert len(whole.for_key("user-9999").records) == 0          # a key the log does not name: still empty
    plain = ai.load(LOGS / "production.jsonl")
    assert plain.for_key("user-0003").keys() == ["user-0003"]


def test_a_scan_dataset_names_a_mistyped_keys_close_matches(tmp_path: Path) -> None:
    """``log.load_dataset`` (and ``ai.load`` of a scan's output) runs the loaders' one check, suggestions included."""
    spec, windows = ai.log.plan_windows(LOGS / "production.parquet")
    for window in windows:
        ai.log.write_window(ai.log.read_window(spec, window), tmp_path, window)
    ai.log.write_dataset_meta(tmp_path, spec)
    for load in (ai.log.load_dataset, ai.load):
        with pytest.raises(ai.InspectError, match=r"business key 'user-19' has no records in .*did you mean 'user-0019'"):
            load(tmp_path, business_keys=["user-19"])
    assert ai.log.load_dataset(tmp_path, business_keys=["user-0019"]).keys() == ["user-0019"]


def test_a_numeric_key_a_lone_key_and_a_wrong_type(tmp_path: Path) -> None:
    """An int key (a Long key's text) and a lone string were an AttributeError and a search for each of its
    characters; None or bytes failed hashing the key with an AttributeError."""
    import json

    lines = [json.loads(line) for line in (LOGS / "N04.jsonl").read_text().splitlines()]
    for record in lines:
        record["key"] = record["key"].rsplit("_", 1)[0] + "_12"          # K1.5: the key text is last
    (tmp_path / "n.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert len(ai.load(tmp_path / "n.jsonl", business_keys=[12]).records) == len(lines)
    assert len(ai.load(LOGS / "production.jsonl", business_keys="user-0012").records) == \
        len(ai.load(LOGS / "production.jsonl", business_keys=["user-0012"]).records) > 0
    for keys, shown in (([None], "None"), ([b"k"], "b'k'"), ([True], "True")):
        with pytest.raises(ai.InspectError, match=rf"business_keys takes key texts \(str, or int for a numeric key\), "
                                                  rf"got {shown}"):
            ai.load(LOGS / "N04.jsonl", business_keys=keys)
    with pytest.raises(ai.InspectError, match=r"business_keys takes a list of business keys \(\['user-42'\]\), got 5"):
        ai.load(LOGS / "N04.jsonl", business_keys=5)


def test_lone_bytes_are_refused_and_numpy_integers_are_numeric_keys(tmp_path: Path) -> None:
    """``b"user"`` was iterated into the keys '117', '115', …; ``np.array([12])`` and ``np.int64(12)`` were refused."""
    import json

    import numpy as np

    with pytest.raises(ai.InspectError, match=r"business_keys takes a list of business keys \(\['user-42'\]\), "
                                              r"got b'user'"):
        ai.load(LOGS / "N04.jsonl", business_keys=b"user")
    with pytest.raises(ai.InspectError, match=r"business_keys takes key texts .*got (np\.)?True"):
        ai.load(LOGS / "N04.jsonl", business_keys=[np.bool_(True)])
    lines = [json.loads(line) for line in (LOGS / "N04.jsonl").read_text().splitlines()]
    for record in lines:
        record["key"] = record["key"].rsplit("_", 1)[0] + "_12"
    (tmp_path / "n.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    for keys in (np.array([12]), [np.int64(12)], [np.uint8(12)]):
        log = ai.load(tmp_path / "n.jsonl", business_keys=keys)
        assert len(log.records) == len(lines) and log.source.options["business_keys"] == ["12"]


def test_a_scan_dataset_and_a_tail_take_keys_as_the_loaders_do(tmp_path: Path) -> None:
    """``log.load_dataset`` searched a lone string character by character and a tail did too (an int failed);
    both go through the loaders' ``business_key_texts`` now, a tail refusing a wrong type before any I/O."""
    spec, windows = ai.log.plan_windows(LOGS / "production.parquet")
    for window in windows:
        ai.log.write_window(ai.log.read_window(spec, window), tmp_path, window)
    ai.log.write_dataset_meta(tmp_path, spec)
    assert ai.log.load_dataset(tmp_path, business_keys="user-0019").keys() == ["user-0019"]
    with pytest.raises(ai.InspectError, match=r"business_keys takes a list of business keys .*got b'user'"):
        ai.log.load_dataset(tmp_path, business_keys=b"user")
    for follow in (ai.log.follow, ai.tail):
        with pytest.raises(ai.InspectError, match=r"business_keys takes key texts .*got None"):
            follow("kafka://127.0.0.1:1/topic", business_keys=[None], timeout=0.5)
    with pytest.raises(ai.InspectError, match=r"business_keys takes a list of business keys .*got b'user'"):
        ai.sources.open_kafka_tail("127.0.0.1:1", "topic", business_keys=b"user", timeout=0.5)
