"""``reconstruct``'s outcomes in words a user reads, as ``predict``'s tasks: ``outcome_reason`` only where a lookup
removed or re-ran something (:func:`agent_inspect.recovery.user_reason`), the rule's own words in ``rule_note``."""

from __future__ import annotations

import pandas as pd
import pytest

import agent_inspect as ai
from agent_inspect.recovery import Reconstruction, lookup_words, reconstruct


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


def _removed_by(result: Reconstruction) -> pd.Series:
    """Per looked-up record position: how many cached records the cache events its lookup triggered removed."""
    ev = result.evictions
    return ev[ev["step"] == "lookup"].groupby("trigger_pos")["removed"].sum()


def test_looked_up_records_keep_the_rules_words_in_rule_note(production: Reconstruction) -> None:
    records = production.records
    looked_up = records[records["outcome"].notna()]
    assert len(looked_up) > 100
    assert looked_up["rule_note"].notna().all() and records.loc[records["outcome"].isna(), "rule_note"].isna().all()
    assert list(records.columns).index("rule_note") == list(records.columns).index("outcome_reason") + 1


def test_a_quiet_reuse_has_no_outcome_reason(production: Reconstruction) -> None:
    records = production.records
    removed = _removed_by(production)
    reuse = records[records["outcome"] == "REUSE"]
    quiet = reuse[~reuse.index.isin(removed.index)]
    assert len(quiet) > 100 and quiet["outcome_reason"].isna().all()
    if production.rule.name == "original":   # the count > 1 that used to read like a divergence
        assert quiet["rule_note"].str.contains(r"cached records at \(.+\) > 1").all()
    for pos, row in reuse[reuse.index.isin(removed.index)].iterrows():
        n = int(removed[pos])
        assert row["outcome_reason"] == (f"reused, but its lookup removed {n} cached record{'s' if n != 1 else ''} "
                                         f"({row['rule_note']})")


def test_a_rerun_names_the_lookup_that_evicted_its_record(production: Reconstruction) -> None:
    """In predict's words (:func:`lookup_words`: action, key, seq); the looked-up record's position is in the
    ``evictions`` table's ``trigger_pos``, not in the reason."""
    records = production.records
    names = _action_at(production)
    reruns = records[records["outcome"] == "RERUN"]
    named = reruns[reruns["outcome_reason"].str.contains("evicted it", na=False)]
    assert len(named) > 0.5 * len(reruns) > 0
    ev = production.evictions
    for pos, row in named.iterrows():
        reason = row["outcome_reason"]
        assert reason.startswith("no cached record for this task: the lookup of ") and "lookup of record" not in reason
        (by,) = {int(t) for t, positions in zip(ev["trigger_pos"], ev["positions"]) if pos in positions}
        evictor = records.loc[by]
        assert reason == ("no cached record for this task: "
                          f"{lookup_words(names[by], evictor['business_key'], evictor['seq'])} evicted it")
        assert by != pos and pd.notna(evictor["outcome"])
        assert "->" not in reason and " > 1" not in reason


def test_the_history_graph_shows_the_readers_words_and_keeps_the_rules(production: Reconstruction) -> None:
    records = production.records
    named = records[records["outcome_reason"].str.contains("evicted it", na=False)]
    key, seq = named["business_key"].iloc[0], int(named["seq"].iloc[0])
    graph = production.graph(key, seq=seq)
    actions = [a for _, a in graph.nodes(data=True) if a.get("kind") == "action" and a.get("outcome")]
    assert actions
    assert any("evicted it" in (a["outcome_reason"] or "") for a in actions)
    assert all(a["rule_note"] for a in actions)
    reuses = [a["outcome_reason"] for a in actions if a["outcome"] == "REUSE"]
    assert all(r is None or r.startswith("reused, but its lookup removed") for r in reuses)
