"""Case files become real logs: keys, values and ids exactly as upstream writes them."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from agent_inspect import codec
from agent_inspect.cases import build_case, load_cases, run_case
from agent_inspect.cases._format import parse_case

ROOT = Path(__file__).resolve().parents[2]
BY_ID = {c.id: c for c in load_cases(ROOT / "cases")}


def rows_of(built, n):
    return [p for p, line in sorted(built.line_of_pos.items()) if line == n]


def test_n04_keys_values_and_lineage():
    built = build_case(BY_ID["N04"])
    recs = built.log.records
    ia = codec.python_action_uuid("IA", "case_agent", "CaseAgent.IA", ["_input_event"])
    first = codec.parse_state_key(recs.loc[0, "state_key"])
    assert first.format == "K1.5" and first.key_text == "k" and first.seq == 5
    assert first.key_group == codec.key_group(codec.java_string_hash("k"), 128)
    assert first.event_uuid == "ef422f05-799e-3801-8be4-9277a0a90861"      # spec §4.3.1 vector for In(A)
    assert first.action_uuid == ia
    # line 1 is initial + completed; its output id is line 2's task event id; lineage is V3
    p_init, p_done = rows_of(built, 1)
    assert not recs.loc[p_init, "completed"] and recs.loc[p_done, "completed"]
    parent = built.log.value(p_done)
    child = built.log.value(rows_of(built, 2)[-1])
    out = parent.output_events[0]
    assert out.id == child.task_event.id and built.label(out.id) == "w1"
    assert out.upstream_event_id == parent.task_event.id and out.upstream_action_name == "IA"
    assert parent.task_event.event_class == "org.apache.flink.agents.api.InputEvent"
    assert built.markers == ({0: 0},)
    assert [i.display for i in built.plan.inputs] == ["A", "B"] and built.plan.restored_seq == {"k": 4}


def test_python_pipeline_roots_are_generic_events():
    built = build_case(BY_ID["N11"])
    root = built.log.value(rows_of(built, 1)[-1]).task_event
    assert root.event_class == codec.GENERIC_EVENT and root.type == "_input_event"
    assert bool(built.log.records.loc[rows_of(built, 1)[-1], "is_root"])


def test_incomplete_calls_and_tombstones():
    n07 = build_case(BY_ID["N07"])
    writes = rows_of(n07, 4)
    assert len(writes) == 2                                   # initial, then one record per call
    state = n07.log.value(writes[-1])
    assert not state.completed
    assert [(c.function_id, c.args_digest, c.status) for c in state.call_results] == [
        ("my_agent.ask_llm", "2a7286cdad649b6b", "SUCCEEDED")]
    g04 = build_case(BY_ID["G04"])
    recs = g04.log.records
    tomb = rows_of(g04, 3)
    assert len(tomb) == 1 and bool(recs.loc[tomb[0], "tombstone"])
    assert recs.loc[tomb[0], "state_key"] == recs.loc[rows_of(g04, 1)[0], "state_key"]


def test_window_start_places_the_marker():
    built = build_case(BY_ID["N13"])
    assert built.markers == ({0: rows_of(built, 2)[0]},)
    assert built.plan.pending[0].event.id == built.log.value(rows_of(built, 2)[-1]).task_event.id


def test_java_action_uuids_change_per_attempt_until_k2():
    base, k2 = build_case(BY_ID["P03"]), build_case(BY_ID["P03/k2"])
    recorded = set(base.log.records["action_uuid"])
    assert len(recorded) == 1
    assert base.agent.action_uuid("IA", "K1.5", attempt=base.plan.attempt) not in recorded
    assert set(k2.log.records["action_uuid"]) == {codec.name_action_uuid("IA")}


def test_typed_keys_collide_only_before_digests():
    k1, k2 = build_case(BY_ID["P04"]), build_case(BY_ID["P04/k2"])
    assert k1.log.records["state_key"].nunique() == 1
    assert k1.plan.keys["L"].business_key == k1.plan.keys["S"].business_key == "1"
    assert k2.log.records["state_key"].nunique() == 2
    assert k2.plan.keys["L"].business_key != k2.plan.keys["S"].business_key
    assert k2.log.records["key_format"].astype(str).eq("K2").all()
    # one key serializer per job: the K2 fingerprint is the same for both typed keys (spec §4.6)
    fingerprints = {codec.parse_state_key(sk).serializer_fingerprint for sk in k2.log.records["state_key"]}
    assert len(fingerprints) == 1 and None not in fingerprints
    assert {k2.plan.keys["L"].serializer_fingerprint, k2.plan.keys["S"].serializer_fingerprint} == fingerprints
    k16 = build_case(BY_ID["P04/k1.6"])
    assert k16.log.records["state_key"].nunique() == 2
    assert k16.log.records["key_format"].astype(str).eq("K1.6").all()


def test_fluss_cases_carry_agent_key():
    built = build_case(BY_ID["P01/snapshot-fluss-k1"])
    assert built.log.source.kind == "fluss"
    assert set(built.log.raw.agent_key) == {"tenant_1"}
    assert codec.parse_state_key(built.log.records.loc[0, "state_key"]).key_text == "tenant_1"


def test_several_partitions_keep_per_key_order():
    data = tomllib.loads((ROOT / "cases" / "N09.toml").read_text())
    data["setup"] = {"partitions": 8}
    data.pop("variants")
    (case,) = parse_case(data, path="N09-8")
    built = build_case(case)
    parts = built.log.records.groupby("business_key", observed=True)["partition"].nunique()
    assert (parts == 1).all()
    assert built.log.records["partition"].nunique() == 2
    for rule in ("original", "fixed"):
        assert run_case(case, rule, built=built).passed


@pytest.mark.parametrize("case_id", ["S01", "S03"])
def test_subagent_records_are_v3_plus_with_delegates(case_id):
    built = build_case(BY_ID[case_id])
    child = built.log.value(rows_of(built, 2)[-1])
    assert child.task_event.event_class == codec.SUBAGENT_EVENT
    assert child.task_event.delegate is not None and child.task_event.delegate.type == "_input_event"
    assert built.log.records.loc[rows_of(built, 2)[-1], "value_format"] == "V3+"


@pytest.mark.parametrize("case_id", ["S08", "S11", "S12"])
def test_v4_cases_write_every_record_as_v4(case_id):
    """A ``value_format = "V4"`` case is written in V4 (the codec knows the format: there is no fallback to V3+),
    every record with its ``subagentResultEvents`` (addendum §1.2)."""
    assert "V4" in codec.VALUE_FORMATS
    built = build_case(BY_ID[case_id])
    recs = built.log.records
    values = recs[recs["value_format"].notna()]
    assert len(values) and set(values["value_format"]) == {"V4"}
    assert all(b'"subagentResultEvents"' in built.log.raw.value[p] for p in values.index)
