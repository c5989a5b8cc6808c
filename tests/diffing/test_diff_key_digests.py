"""A K1.6/K2 log names its keys by digest: a diff against a log that names them by text, and ``key=`` given as
text, still find each key on both sides."""

from __future__ import annotations

import agent_inspect as ai
from agent_inspect.codec import string_key_digest


def _v4():
    return ai.load(ai.samples.path("production_v4"))


def test_a_key_given_as_text_keeps_its_executions_in_a_log_that_names_keys_by_digest() -> None:
    v4 = _v4()
    assert string_key_digest("user-0003") in set(v4.keys())
    d = ai.diff(v4, v4, key="user-0003")
    assert len(d.pairs) > 0 and (d.pairs["status"] == "same").all()


def test_a_log_before_and_after_an_upgrade_to_k2_pairs_its_keys_by_text() -> None:
    k15 = ai.load(ai.samples.path("production"))
    d = ai.diff(k15, _v4(), key="user-0003")
    assert set(d.pairs["business_key"]) == {"user-0003"}        # both sides under the key's text
    whole = ai.diff(k15, _v4())
    assert not any(str(k).endswith("=") for k in whole.pairs["business_key"])   # no digest left unpaired


def test_a_log_before_and_after_an_upgrade_to_k2_pairs_its_actions_by_name() -> None:
    # K1.5 and K2 derive action UUIDs two ways (spec §4.4): the same action has two UUIDs, so pairs need names
    d = ai.diff(ai.load(ai.samples.path("production")), _v4(), key="user-0001")
    paired = d.pairs[d.pairs["match"].notna()]
    assert len(paired) >= 3 and (paired["action_a"] == paired["action_b"]).all()
    assert {"triage", "audit", "chat"} <= set(paired["action_a"])
    moved = [c for changes in paired["changes"] for c in changes if c.path == "state_key.action_uuid"]
    assert len(moved) == len(paired)           # the UUID change itself stays visible as an identity change
    assert "review" in set(d.pairs.loc[d.pairs["status"] == "only in b", "action_b"])   # 0.4's new action


def test_explain_finds_a_task_by_its_key_text_in_a_log_that_names_keys_by_digest() -> None:
    v4, markers = _v4(), ai.samples.markers("production_v4")
    tasks = ai.predict(v4, markers=markers).tasks
    texts = {string_key_digest(t): t for t in ai.load(ai.samples.path("production")).keys()}
    row = tasks[tasks["key"].isin(list(texts))].iloc[0]
    by_text = ai.explain(v4, texts[row["key"]], int(row["seq"]), row["action"], markers=markers)
    by_digest = ai.explain(v4, row["key"], int(row["seq"]), row["action"], markers=markers)
    assert by_text.outcome == by_digest.outcome == row["outcome"]
