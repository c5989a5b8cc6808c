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
