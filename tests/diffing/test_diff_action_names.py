"""A diff names actions the same way on both sides: a log side (its records carry action UUIDs) against a
prediction (its tasks carry names) showed ``f6aaf3fe-…`` beside ``triage`` in the same pair."""

from __future__ import annotations

import agent_inspect as ai


def test_a_log_against_its_prediction_names_each_action_alike() -> None:
    log = ai.load(ai.samples.path("production"))
    prediction = ai.predict(log, markers=ai.samples.markers("production"))
    pairs = ai.diff(log, prediction).pairs
    both = pairs[pairs["action_a"].notna() & pairs["action_b"].notna()]
    assert len(both) and (both["action_a"] == both["action_b"]).all()
    assert not any(ai.history.is_uuid(a) for a in pairs["action_a"].dropna())
    assert set(pairs["action_a"].dropna()) <= set(prediction.tasks["action"]) | {"review", "check_policy"}


def test_two_logs_keep_their_action_uuids() -> None:
    log = ai.load(ai.samples.path("production"))
    pairs = ai.diff(ai.diffing.attempt(log, "user-0011", 1), ai.diffing.attempt(log, "user-0011", 2)).pairs
    assert all(ai.history.is_uuid(a) for a in pairs["action_a"].dropna())


def test_two_logs_show_each_action_by_name_and_short_id(capsys) -> None:
    # the pairs keep the UUIDs (identity: two UUIDs may share a name); what a reader sees names them
    from agent_inspect.cli import main

    log = ai.load(ai.samples.path("production"))
    d = ai.diff(ai.diffing.attempt(log, "user-0011", 1), ai.diffing.attempt(log, "user-0011", 2))
    assert d.action_label("f6aaf3fe-41f9-30a8-860f-d2a92bf1087b") == "triage (f6aaf3fe)"
    assert d.action_label("triage") == "triage"
    assert d.action_label("00000000-0000-3000-8000-000000000000") == "uuid:00000000…"
    assert "triage (f6aaf3fe)" in d._repr_html_() and "f6aaf3fe-41f9" not in d._repr_html_()
    path = str(ai.samples.path("production"))
    assert main(["diff", f"{path}@key=user-0011@attempt=1", f"{path}@key=user-0011@attempt=2"]) == 0
    out = capsys.readouterr().out
    assert "user-0011 seq 0 triage (f6aaf3fe) [only in a] at execution" in out
    assert "audit (570134bc) _input_event: only in a" in out and "-41f9-" not in out


def test_a_k2_sub_agent_child_is_named_from_the_other_side_of_an_upgrade() -> None:
    """production_v4's K2 log never names the reviewer's ``approve`` (V4 sends its outputs as sub-agent results,
    which carry no upstreamActionName), but its action UUID is the name's (spec §4.4), and the K1.5 production
    log names ``approve`` in its child outputs: the diff names it, and an unnamed UUID reads ``uuid:…``."""
    a, b = ai.load(ai.samples.path("production")), ai.load(ai.samples.path("production_v4"))
    d = ai.diff(a, b)
    shown = {d.action_label(x) for x in d.differences["action_a"].fillna(d.differences["action_b"])}
    assert "approve" in shown and not any(s.startswith("action-") for s in shown), shown
    assert ai.diffing.names_for(b).get(ai.codec.name_action_uuid("approve")) is None   # the K2 log alone cannot


def test_first_divergences_name_the_action_and_keep_its_uuid_apart() -> None:
    # the CLI printed "triage (f6aaf3fe)" while d.first_divergences["action"] held the UUID
    log = ai.load(ai.samples.path("production"))
    d = ai.diff(ai.diffing.attempt(log, "user-0011", 1), ai.diffing.attempt(log, "user-0011", 2))
    first = d.first_divergences.iloc[0]
    assert first["action"] == "triage" and first["action_uuid"] == "f6aaf3fe-41f9-30a8-860f-d2a92bf1087b"
    assert list(d.first_divergences.columns) == list(ai.diffing.FIRST_COLUMNS)
    assert d.to_dict()["first_divergences"][0]["action"] == "triage"
    assert d.action_label(first["action_uuid"]) == "triage (f6aaf3fe)"
    # a prediction names its tasks by name: no UUID to keep
    named = ai.diff(log, ai.predict(log, markers=ai.samples.markers("production"))).first_divergences
    assert not any(ai.history.is_uuid(a) for a in named["action"]) and named["action_uuid"].isna().all()
