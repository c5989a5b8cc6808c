"""A removed record's status ``reason`` in a reader's words: what removed it (the rebuild, or which task's lookup),
with which others, why, and that its task runs again if the replay reaches it; the rule's own words stay in
``status_rule_note`` (:meth:`agent_inspect.recovery.RemovalCauses.status_reason`)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

import agent_inspect as ai
from agent_inspect.recovery import Reconstruction, RemovalCauses, lookup_words, reconstruct, removal_reason
from agent_inspect.store import CacheEvent, Entry

sys.path.insert(0, str(Path(__file__).parent))
from recovery_logs import LogBuilder, inp, work

_REMOVED = ("evicted", "invalidated")
_COST = "; its task runs again if the replay reaches it"


@pytest.fixture(scope="module", params=["original", "fixed"])
def production(request: pytest.FixtureRequest) -> Reconstruction:
    log = ai.load(ai.samples.path("production"))
    return reconstruct(log, rule=request.param, markers=ai.samples.markers("production"))


def _action_at(result: Reconstruction) -> dict[int, str]:
    """The action name of each record a task looked up (by its state key), as the replay names it: the reasons
    name the action, ``evictions.trigger_pos`` holds the looked-up record's position."""
    tasks = result.predict().tasks
    named = dict(zip(tasks["state_key"], tasks["action"]))
    return {int(pos): named[sk] for pos, sk in result.records["state_key"].items() if sk in named}


def _event_of(result: Reconstruction, pos: int) -> pd.Series:
    """The one cache event that removed the record at ``pos``."""
    (row,) = [r for _, r in result.evictions.iterrows() if pos in r["positions"]]
    return row


def test_a_removed_record_names_the_lookup_that_removed_it_and_what_that_costs(production: Reconstruction) -> None:
    records = production.records
    names = _action_at(production)
    removed = records[records["status"].isin(_REMOVED)]
    assert len(removed) > 5
    for pos, row in removed.iterrows():
        ev = _event_of(production, pos)
        reason = row["reason"]
        assert "->" not in reason and " > 1" not in reason and "rule:" not in reason, reason
        assert reason.endswith(_COST)
        assert row["status_rule_note"] == ev["reason"] and "->" in row["status_rule_note"]
        n = int(ev["removed"])
        others = f" and {n - 1} other cached record{'s' if n != 2 else ''} " if n > 1 else ""
        if ev["step"] == "lookup":
            by = records.loc[int(ev["trigger_pos"])]
            lookup = lookup_words(names[int(ev["trigger_pos"])], by["business_key"], by["seq"])
            assert reason.startswith(f"{lookup} removed it{others}")
        else:
            assert reason.startswith(f"the rebuild (reading record {int(ev['trigger_pos'])}) removed it{others}")
        assert pd.isna(row["divergence_id"]) or row["divergence_id"] == ev["divergence_id"]


def test_the_original_rules_count_reads_as_what_the_lookup_found(production: Reconstruction) -> None:
    records = production.records
    removed = records[records["status"] == "evicted"]
    if production.rule.name == "original":
        assert len(removed) > 100
        assert removed["status_rule_note"].str.contains(r"cached records at \(.+\) > 1 -> evicted").all()
        assert removed["reason"].str.contains("the lookup found more than one cached record for its round, which "
                                              "the original rule reads as a divergence").all()
    else:   # the fixed rule evicts one key's rounds after a replayed event that is not the recorded one
        assert removed["reason"].str.contains("the replayed event is not the one the cached record was written "
                                              "for").all()


def test_other_statuses_keep_their_words_and_have_no_rule_note(production: Reconstruction) -> None:
    records = production.records
    kept = records[~records["status"].isin(_REMOVED)]
    assert kept["status_rule_note"].isna().all()
    live = kept[kept["status"] == "live"]
    assert len(live) and live["reason"].isin(["cached when the recovery has run", "reused by the recovery",
                                              "resumed by the recovery"]).all()
    columns = list(records.columns)
    assert columns.index("status_rule_note") == columns.index("reason") + 1


def test_an_invalidation_at_the_rebuild_names_the_record_the_rebuild_read() -> None:
    result = reconstruct(ai.load(ai.samples.path("G01")), rule="fixed", markers=ai.samples.markers("G01"))
    (gone,) = result.records.index[result.records["status"] == "invalidated"]
    (ev,) = [e for e in result.session.events if gone in e.positions]
    assert ev.step == "rebuild" and ev.trigger_pos is not None
    assert result.records.at[gone, "reason"] == (
        f"the rebuild (reading record {ev.trigger_pos}) removed it, the one cached record of k from round 5 on: "
        f"two different inputs were recorded for this round{_COST}")
    assert result.records.at[gone, "status_rule_note"].startswith("rebuild: root input ")


def _entry(pos: int, seq: int) -> Entry:
    return Entry(state_key=f"sk{pos}", business_key="k", seq=seq, event_uuid="e", action_uuid="a", key_format="K2",
                 key_text="k", is_root=True, completed=True, pos=pos)


@pytest.mark.parametrize(("op", "n", "cause", "kind", "expected"), [
    ("evict", 3, "the lookup of triage (k, seq 1)", "count>1",
     "the lookup of triage (k, seq 1) removed it and 2 other cached records of k's rounds after 1: the "
     "lookup found more than one cached record for its round, which the original rule reads as a divergence" + _COST),
    ("invalidate", 2, "the rebuild (reading record 4)", "root-conflict",
     "the rebuild (reading record 4) removed it and 1 other cached record of k from round 1 on: two different inputs "
     "were recorded for this round" + _COST),
    ("evict", 1, "the rebuild", None, "the rebuild removed it, the one cached record of k's rounds after 1" + _COST),
    ("remove", 1, "the lookup of triage (k, seq 1)", "identity-mismatch",
     "the lookup of triage (k, seq 1) removed it (the one the lookup found): the replayed event is not "
     "the one the cached record was written for" + _COST),
    ("delete", 1, "the rebuild (reading record 7)", None,
     "the rebuild (reading record 7) removed it (deleted by a tombstone)"),
    ("prune", 2, "a checkpoint's prune", None,
     "a checkpoint's prune removed it and 1 other cached record of k's rounds up to 1"),
])
def test_removal_reason_for_one_record(op: str, n: int, cause: str, kind: str | None, expected: str) -> None:
    event = CacheEvent(index=0, op=op, step="lookup", business_key="k", seq=1,
                       removed=tuple(_entry(p, 2) for p in range(n)), reason="rule words")
    assert removal_reason(event, kind, cause=cause) == expected
    assert removal_reason(event, kind).startswith(f"{n} cached record")   # the event's own words are unchanged


def test_removal_causes_name_the_rebuild_or_the_lookup() -> None:
    rebuilt = CacheEvent(index=0, op="evict", step="rebuild", business_key="k", seq=1, removed=(_entry(3, 2),),
                         reason="rule words", trigger_pos=8)
    looked = CacheEvent(index=1, op="evict", step="lookup", business_key="k", seq=1, removed=(_entry(4, 2),),
                        reason="rule words", trigger_pos=9)
    causes = RemovalCauses([rebuilt, looked])
    assert causes.status_reason(rebuilt).startswith("the rebuild (reading record 8) removed it")
    assert causes.status_reason(looked).startswith("a replayed lookup removed it")
    causes.removed([looked], "the lookup of triage (k, seq 1)")
    assert causes.status_reason(looked).startswith("the lookup of triage (k, seq 1) removed it, the one")


def test_cli_json_prints_the_readers_words_and_keeps_the_rules(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from agent_inspect.cli import main
    from agent_inspect.sources import write_jsonl

    b = LogBuilder()
    (w,) = b.run("k", 5, "IA", inp("A", "a1"), outs=[work("a", "w1")])
    b.run("k", 5, "WA", w, upstream="a1")
    (w,) = b.run("k", 6, "IA", inp("B", "b1"), outs=[work("b", "w2")])
    b.run("k", 6, "WA", w, upstream="b1")
    path = write_jsonl(b.log(), tmp_path / "n04.jsonl")
    assert main(["reconstruct", str(path), "--rule", "original", "--json", "--no-ledger"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["pos"] for r in report["evicted"]] == [5, 7]
    for r in report["evicted"]:
        assert re.fullmatch(r"the lookup of IA \(k, seq 5\) removed it and 1 other cached record of "
                            r"k's rounds after 5: .+; its task runs again if the replay reaches it", r["reason"])
        assert r["status_rule_note"] == "original rule: 2 cached records at (k, 5) > 1 -> evicted k's rounds > 5"
