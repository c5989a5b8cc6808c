"""The trace the executor writes for a recovery (addendum §3.2/§3.3 shapes), and its join to action-state records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_inspect import samples
from agent_inspect._errors import SourceError
from agent_inspect.codec import string_key_digest
from agent_inspect.sources import write_trace
from agent_inspect.trace import call_entity, join, load_trace

ORDER = ["timestamp", "detail", "inputRunId", "businessKey", "agentName", "entityType", "entityName", "executionId",
         "parentExecutionId", "entityMetadata", "status", "problemCategory", "attributes"]


@pytest.fixture(scope="module")
def recovered(tmp_path_factory: pytest.TempPathFactory):
    """production's restore run by the executor: the topic afterwards and the trace written meanwhile."""
    s = samples.scenario("production")
    ex, records = samples.run_recovery(s)
    path = write_trace(records, tmp_path_factory.mktemp("trace") / "production.trace.log")
    return s, ex, records, load_trace(path)


def test_records_follow_the_serializer_order_and_presence_rules(recovered) -> None:
    _s, _ex, records, trace = recovered
    assert trace.errors.empty
    for rec in records:
        keys = list(rec)
        assert keys == [k for k in ORDER if k in rec]               # member order of §3.2
        assert "attributes" in rec and rec["detail"] == "STANDARD"
        assert all(v is not None for v in rec.values())             # null strings omitted
        assert rec.get("entityMetadata", {"x": 1})                  # empty metadata omitted
    acts = [r for r in records if r["entityType"] == "action"]
    # a reuse writes only `reused`; an execution `started` then `success`/`failed` (§3.3)
    by_exec: dict[str, list[str]] = {}
    for r in acts:
        by_exec.setdefault(r["executionId"], []).append(r["status"])
    assert set(map(tuple, by_exec.values())) <= {("reused",), ("started", "success"), ("started", "failed")}
    assert ("reused",) in set(map(tuple, by_exec.values()))
    # every event a reuse re-emits carries the stored id and the reusing execution as producer
    reused = {e for e, st in by_exec.items() if st == ["reused"]}
    replayed = [r for r in records if r["entityType"] == "event"
                and r["entityMetadata"].get("producerExecutionId") in reused]
    assert replayed and all(r["entityMetadata"]["upstreamActionName"] for r in replayed)


def test_the_trace_matches_the_executors_decisions(recovered) -> None:
    _s, ex, _records, trace = recovered
    steps = ex.steps
    lookups = steps[(steps["kind"] == "lookup") & steps["outcome"].isin(["REUSE", "RERUN", "RESUME"])]
    execs = trace.executions()
    assert len(execs) == len(lookups)
    assert (execs["observed"] == "REUSE").sum() == (lookups["outcome"] == "REUSE").sum()
    calls = steps[steps["call_index"].notna() & (steps["outcome"] == "execute")]
    traced = calls["function_id"].map(call_entity).notna().sum()
    assert len(trace.calls()) == traced
    # plain durable calls (the vector store) write no record
    assert not trace.records["entity_name"].astype(str).str.contains("vector_store").any()


def test_every_execution_and_call_joins_to_the_recovered_topic(recovered) -> None:
    _s, ex, _records, trace = recovered
    j = join(trace, ex.to_log())
    assert j["reason"].isna().all(), j.loc[j["reason"].notna(), "reason"].head().tolist()
    acts = j[j["entity_type"] == "action"]
    assert set(acts["join"]) == {"trigger-event-id", "output-event-id"}
    assert (acts["confidence"] == "high").all()
    kids = j[j["entity_type"] != "action"]
    assert (kids["join"] == "call-position").all() and (kids["name"] == kids["function_id"]).all()


def test_rows_that_cannot_be_joined_are_kept_with_the_reason(recovered, tmp_path: Path) -> None:
    s, _ex, records, _trace = recovered
    # against the topic *before* the recovery, re-executions wrote nothing it holds
    trace = load_trace(write_trace(records[:400], tmp_path / "part.log"))
    j = join(trace, s.log)
    acts = j[j["entity_type"] == "action"]
    assert len(acts) == len(trace.executions())                 # nothing dropped
    rerun = acts[acts["observed"] == "RERUN"]
    unjoined = rerun[rerun["pos"].isna()]
    assert len(unjoined) > len(rerun) / 2
    assert unjoined["reason"].str.contains("no record with this trigger event id").all()
    # a restored in-flight task keeps its event id, and a re-executed root has its input's fingerprint:
    # both join to records an earlier attempt wrote
    assert set(rerun.loc[rerun["pos"].notna(), "join"]) <= {"trigger-event-id", "input-fingerprint"}
    assert acts.loc[acts["observed"] == "REUSE", "pos"].notna().all()
    kids = j[j["entity_type"] != "action"]
    assert (kids["pos"].notna() | kids["reason"].notna()).all() and kids["reason"].notna().any()


def test_k2_keys_match_by_digest(tmp_path: Path) -> None:
    from agent_inspect.trace._join import _key_map

    assert _key_map({string_key_digest("user-42"), "plain"}, {"user-42", "plain", "other"}) == {
        "user-42": string_key_digest("user-42"), "plain": "plain"}


def test_call_entity_classifies_function_ids() -> None:
    assert call_entity("support_agent.chat_model.chat") == "llm"
    assert call_entity("shop_agent.ask_llm") == "llm"
    assert call_entity("support_agent.tools.check_stock") == "tool"
    assert call_entity("support_agent.vector_store.query") is None
    assert call_entity("b4-0#b4-0-1") == "subagent"


def test_committed_sample_traces_are_what_the_generator_writes(tmp_path: Path) -> None:
    for name in ("N04", "G01"):
        s = samples.scenario(name)
        made = write_trace(samples.sample_trace(s), tmp_path / f"{name}.trace.log").read_bytes()
        assert made == samples.path(name, "trace").read_bytes()
        other = samples.INCONSISTENT[name]
        rec = [json.loads(x) for x in made.decode().splitlines()]
        alt = [json.loads(x) for x in samples.sample_trace(s, other) and
               (samples.sample_dir() / f"{name}.{other}-rule.trace.log").read_text().splitlines()]
        assert [r["status"] for r in rec if r["entityType"] == "action"] != \
            [r["status"] for r in alt if r["entityType"] == "action"]


def test_a_sample_trace_takes_the_sample_name_as_markers_and_path_do(tmp_path: Path) -> None:
    # by name it crashed with an AttributeError ('str' object has no attribute 'name')
    made = write_trace(samples.sample_trace("N04"), tmp_path / "N04.trace.log").read_bytes()
    assert made == samples.path("N04", "trace").read_bytes()
    assert samples.run_recovery("N04")[1] == samples.sample_trace(samples.scenario("N04"))
    with pytest.raises(SourceError, match="no sample named .nope."):
        samples.sample_trace("nope")
