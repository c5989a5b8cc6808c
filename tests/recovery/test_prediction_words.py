"""Prediction rows in words a user reads (issue #16 item 7): reasons only where a decision removed or re-ran
something, the rule's own words kept in ``rule_note``, and re-runs and evictions first."""

from __future__ import annotations

import pytest

import agent_inspect as ai
from agent_inspect.recovery import IMPACT_ORDER, lookup_words, predict, tasks_by_impact
from agent_inspect.recovery._prediction import user_reason


@pytest.fixture(scope="module")
def production():
    log = ai.load(ai.samples.path("production"))
    return predict(log, markers=ai.samples.markers("production"))


def test_reused_tasks_that_removed_nothing_carry_no_reason(production) -> None:
    tasks = production.tasks
    assert production.rule == "original"           # what runtime 0.4 ships
    quiet = tasks[(tasks["outcome"] == "REUSE") & (tasks["removed"] == 0)]
    assert len(quiet) > 100 and quiet["reason"].isna().all()
    # the rule's words stay available for tools: the count > 1 that used to read like a divergence
    assert quiet["rule_note"].str.contains(r"cached records at \(.+\) > 1").any()
    assert tasks["rule_note"].notna().all()


def test_a_reused_task_whose_lookup_evicted_records_says_how_many(production) -> None:
    tasks = production.tasks
    evicting = tasks[(tasks["outcome"] == "REUSE") & (tasks["removed"] > 0)]
    assert len(evicting) > 0
    for row in evicting.itertuples():
        removed = sum(len(e.removed) for e in row.cache_ops if e.op == "evict")
        assert row.removed == removed > 0
        assert row.reason.startswith(f"reused, but its lookup removed {removed} cached record")
        assert row.rule_note in row.reason


def test_a_rerun_names_the_lookup_that_evicted_its_record(production) -> None:
    tasks = production.tasks
    reruns = tasks[tasks["outcome"] == "RERUN"]
    named = reruns[reruns["reason"].str.contains("evicted it", na=False)]
    assert len(named) > 0.9 * len(reruns)
    for i, row in named.head(40).iterrows():
        assert "the lookup of task" not in row["reason"], "a dispatch index means nothing to a reader"
        earlier = tasks.loc[: i - 1]
        evictors = earlier[[lookup_words(r["action"], r["business_key"], r["seq"]) in row["reason"]
                            for _, r in earlier.iterrows()]]
        assert len(evictors), "the evicting lookup, named by action, key and seq, comes earlier in dispatch order"
        removed = {e.state_key for ops in evictors["cache_ops"] for ev in ops for e in ev.removed}
        assert row["state_key"] in removed


def test_tasks_by_impact_puts_reruns_and_evictions_first(production) -> None:
    tasks = production.tasks
    ordered = production.by_impact()
    assert sorted(ordered.index) == list(tasks.index)      # the same rows; the index is the dispatch position
    assert ordered["outcome"].iloc[0] == "RERUN" and tasks["outcome"].iloc[0] == "REUSE"
    group = ordered["outcome"].where(~((ordered["outcome"] == "REUSE") & (ordered["removed"] > 0)), "evicted")
    ranks = [IMPACT_ORDER.index(g) for g in group]
    assert ranks == sorted(ranks)
    # dispatch order within each group
    for _, part in ordered.groupby(group, sort=False):
        assert list(part.index) == sorted(part.index)
    # the evicting REUSE rows come before the quiet ones, all of them within the first 50 of 640 a report shows
    first = ordered.head(int((tasks["outcome"] != "REUSE").sum() + (tasks["removed"] > 0).sum()))
    assert (first["outcome"] != "REUSE").sum() + (first["removed"] > 0).sum() == len(first)
    assert list(tasks_by_impact(tasks, 12).index) == list(ordered.index[:12])
    key_slice = tasks[tasks["key"] == tasks["key"].iloc[0]]
    assert tasks_by_impact(key_slice)["outcome"].iloc[0] != "REUSE"


@pytest.mark.parametrize(("outcome", "note", "removed", "gone", "expected"), [
    ("REUSE", "original rule: 5 cached records at (k, 1) > 1", 0, None, None),
    ("REUSE", "original rule: 5 cached records at (k, 1) > 1", 3, None,
     "reused, but its lookup removed 3 cached records (original rule: 5 cached records at (k, 1) > 1)"),
    ("RERUN", "original rule: miss at (k, 2)", 0, None, "no cached record for this task"),
    ("RERUN", "no cached record", 0, None, "no cached record for this task"),
    ("RERUN", "no cached record", 0, "the rebuild removed it (x)", "no cached record for this task: the rebuild "
                                                                  "removed it (x)"),
    ("RESUME", "incomplete record cached", 0, None,
     "the cached record is incomplete: the body runs again with its recorded call results"),
    ("FAIL", "the strict parser throws", 0, None, "the strict parser throws"),
    ("NOT-DISPATCHED", "cached record of a replayed round that no task looked up", 0, None,
     "cached record of a replayed round that no task looked up"),
])
def test_user_reason(outcome: str, note: str, removed: int, gone: str | None, expected: str | None) -> None:
    assert user_reason(outcome, note, removed, gone) == expected


def test_explain_of_a_quiet_reuse_gives_the_rules_words_not_none(production) -> None:
    tasks = production.tasks
    quiet = tasks[(tasks["outcome"] == "REUSE") & (tasks["removed"] == 0)].iloc[0]
    log = ai.load(ai.samples.path("production"))
    e = ai.explain(log, quiet["key"], int(quiet["seq"]), quiet["action"], markers=ai.samples.markers("production"))
    # explain's own prediction words the rule's decision, whatever its window; never the text "None"
    assert e.outcome == "REUSE" and e.reason and e.reason not in ("None", "nan") and "record" in e.reason
    assert e.steps[0].detail == e.reason


def test_sub_agent_calls_in_the_ledger_are_named_by_sub_agent_and_caller() -> None:
    """Issue 26 row 8: a sub-agent call's function id is ``<sessionId>#<callId>`` (two UUIDs per key and round);
    the ledger's ``label`` names its sub-agent and the action that called it, and the totals carry it."""
    log = ai.load(ai.samples.path("production"))
    pred = predict(log, rule="original", markers=ai.samples.markers("production"))
    sub = pred.ledger[pred.ledger["kind"] == "subagent"]       # their own kind: no call leaves the job
    assert len(sub) and sub["name"].str.contains("#").all()
    assert set(sub["label"]) == {"reviewer (sub-agent call from review)"}
    calls = pred.ledger[pred.ledger["kind"] == "call"]
    plain = calls[~calls["name"].str.contains("#")]
    assert len(plain) == len(calls)
    assert (plain["label"] == plain["name"]).all()
    totals = pred.ledger_totals()
    assert set(totals.loc[totals["name"].isin(sub["name"]), "label"]) == {"reviewer (sub-agent call from review)"}
