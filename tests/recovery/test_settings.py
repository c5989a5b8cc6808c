"""The one settings object: resolved once, with provenance; a what-if says so."""

from __future__ import annotations

import re

import numpy as np
import pytest

import agent_inspect as ai
from agent_inspect import RecoveryError
from agent_inspect.store import Outcome, RecordStatus


@pytest.fixture(scope="module")
def log() -> ai.ActionStateLog:
    return ai.load("sample_logs/production.jsonl")


def test_defaults_follow_the_runtime(log: ai.ActionStateLog) -> None:
    r = ai.Recovery.for_log(log)
    assert r.runtime.name == "0.4" and r.runtime.inferred
    assert r.rule.name == r.runtime.default_rule == "original"
    assert not r.what_if
    assert r.markers is None and "whole loaded log" in r.provenance["markers"]
    assert r.provenance["rule"] == "original: the rule 0.4 ships"


def test_a_what_if_is_labelled(log: ai.ActionStateLog) -> None:
    r = ai.Recovery.for_log(log, rule="fixed", markers=ai.samples.markers("production"))
    assert r.what_if
    assert r.rule_label == "fixed (what-if; 0.4 ships original)"
    assert r.provenance["rule"] == f"{r.rule_label}: given" == "fixed (what-if; 0.4 ships original): given"
    assert r.as_dict()["what_if"] is True


def test_replace_keeps_what_was_given(log: ai.ActionStateLog) -> None:
    m = ai.samples.markers("production")
    r = ai.Recovery.for_log(log, markers=m, rule="fixed")
    again = ai.Recovery.resolve(log, r, max_parallelism=128)
    assert again.rule.name == "fixed" and again.markers == r.markers and again.max_parallelism == 128
    assert ai.Recovery.resolve(log, r) is r
    back = r.replace(rule="original")
    assert not back.what_if and back.markers == r.markers and back.runtime == r.runtime
    given_runtime = ai.Recovery.for_log(log, runtime="main")
    assert given_runtime.runtime.name == "main" and not given_runtime.runtime.inferred
    assert given_runtime.model.subagent_results


def test_store_flavour_is_the_original_rules(log: ai.ActionStateLog) -> None:
    r = ai.Recovery.for_log(log, store_flavour="segment")
    assert r.rule.name == "original" and getattr(r.rule, "flavour", None) == "segment" and not r.what_if
    with pytest.raises(RecoveryError, match="original rule only"):
        ai.Recovery.for_log(log, rule="fixed", store_flavour="kafka-k1")
    with pytest.raises(RecoveryError, match="unknown store flavour"):
        ai.Recovery.for_log(log, store_flavour="0.4")


def test_bad_settings_fail_with_one_line(log: ai.ActionStateLog) -> None:
    with pytest.raises(RecoveryError, match="unknown recovery setting"):
        ai.Recovery.resolve(log, None, rules="fixed")
    with pytest.raises(RecoveryError, match="markers must be"):
        ai.Recovery.for_log(log, markers="0:12")
    with pytest.raises(RecoveryError, match="call_matching"):
        ai.Recovery.for_log(log, call_matching="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(RecoveryError, match=r"^plan must be a ReplayPlan or a mapping of its fields .*, got str$"):
        ai.Recovery.for_log(log, plan="x")  # type: ignore[arg-type]


def test_fresh_start_and_vocabulary(log: ai.ActionStateLog) -> None:
    r = ai.Recovery.for_log(log, markers=[])
    assert r.markers == [] and "fresh start" in r.provenance["markers"] and "fresh start" in repr(r)
    assert Outcome.NOT_DISPATCHED == "NOT-DISPATCHED" and RecordStatus.EVICTED == "evicted"
    assert ai.recovery.STATUSES == tuple(s.value for s in RecordStatus)


def test_a_read_checkpoint_is_markers_with_provenance(log: ai.ActionStateLog) -> None:
    cp = ai.checkpoint.read("tests/fixtures/checkpoints/production/savepoint")
    r = ai.Recovery.for_log(log, markers=cp)
    assert r.markers == [{0: 248, 1: 245, 2: 215, 3: 444}]
    assert r.provenance["markers"].startswith("read from savepoint 3")
    candidate = ai.infer_markers(log)[0]
    assert ai.Recovery.for_log(log, markers=candidate).provenance["markers"].startswith("inferred from")


def test_every_verb_takes_a_plan_in_the_mapping_form_the_executor_takes() -> None:
    """``plan={"inputs": [(key, value), ...]}`` ran in ``ReplayExecutor`` but ``predict`` failed with a raw
    TypeError ("'builtin_function_or_method' object is not iterable"): the settings kept the mapping as the plan."""
    g01 = ai.load(ai.samples.path("G01"))
    mapping = {"inputs": [("user-1", "hello"), ("user-2", "hi")], "restored_seq": {"user-1": 3}}
    settings = ai.Recovery.for_log(g01, plan=mapping, markers=[])
    assert isinstance(settings.plan, ai.recovery.ReplayPlan) and settings.plan == ai.executor.as_plan(mapping)
    columns = ["key", "seq", "action", "outcome"]
    by_mapping = ai.predict(g01, plan=mapping, markers=[]).tasks[columns]
    by_plan = ai.predict(g01, plan=ai.executor.as_plan(mapping), markers=[]).tasks[columns]
    assert len(by_mapping) == 2 and by_mapping.equals(by_plan)
    assert by_mapping["seq"].tolist() == [4, 0]
    ex = ai.ReplayExecutor(g01, plan=mapping, markers=[])
    ex.run()
    assert ex.counters.tasks == 2


def test_a_sample_markers_file_given_whole_says_which_entry_to_pass() -> None:
    """``json.load`` of ``G01.markers.json`` is the sample's descriptor; passed as markers it failed with "marker
    partition must be an integer, got 'sample'"."""
    import json

    g01 = ai.load(ai.samples.path("G01"))
    with open("sample_logs/G01.markers.json", encoding="utf-8") as f:
        described = json.load(f)
    with pytest.raises(RecoveryError, match=r"sample's markers file.*'markers' entry"):
        ai.predict(g01, markers=described)
    assert ai.predict(g01, markers=described["markers"]).tasks["outcome"].tolist() == \
        ai.predict(g01, markers=ai.samples.markers("G01")).tasks["outcome"].tolist()


def test_a_max_parallelism_outside_flink_s_range_says_so(log: ai.ActionStateLog) -> None:
    # "128" (from a config) was a numpy UFuncTypeError deep in the rebuild; 0 and -1 were taken silently
    for bad in ("128", 0, -1, 1.5, (1 << 15) + 1, True):
        with pytest.raises(ai.RecoveryError, match=r"max_parallelism takes the job's maximum parallelism, an int "
                                                   rf"from 1 to 32768 \(Flink's range\), got {re.escape(repr(bad))}"):
            ai.predict(log, max_parallelism=bad)
    assert ai.Recovery.resolve(log, max_parallelism=np.int64(128)).max_parallelism == 128
