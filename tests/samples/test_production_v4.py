"""The 0.4+ production-like sample (issue #12 item 9): V4 records written by the engine as main runs it,
routed chat with a fallback, reviewer result events, refresh rows, and a mid-action checkpoint whose
restore RESUMEs without repeating a call. Round trip, summary, predict == executor, trace verify."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect import codec, samples
from agent_inspect.cli import main
from agent_inspect.executor import StepKind, as_plan
from agent_inspect.recovery import ReplayPlan, predict, refresh_positions
from agent_inspect.samples._production_v4 import CANDIDATES, ROUTER
from agent_inspect.trace import verify

ROOT = Path(__file__).resolve().parents[2]
NAME = "production_v4"


@pytest.fixture(scope="module")
def sample() -> samples.Sample:
    return samples.scenario(NAME)


@pytest.fixture(scope="module")
def committed() -> ai.log.ActionStateLog:
    return ai.load(samples.path(NAME))


def _calls(log: ai.log.ActionStateLog) -> list[tuple[int, str, str, str]]:
    return [(i, c.function_id, c.args_digest or "", c.status or "")
            for i in range(len(log.records)) for c in log.value(i).call_results]


def test_the_committed_file_is_the_generated_log(sample: samples.Sample, committed) -> None:
    assert list(committed.raw.key) == list(sample.log.raw.key)
    assert list(committed.raw.value) == list(sample.log.raw.value)
    assert committed.errors.empty


def test_summary_reports_v4_and_the_runtime_with_its_evidence(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(samples.path(NAME)), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["value_formats"]) == {"V4"} and out["errors"] == 0
    assert out["runtime"]["name"] == "main" and out["runtime"]["inferred"]
    assert "subagentResultEvents" in out["runtime"]["evidence"]
    assert out["runtime"]["counts"]["v4_records"] == out["records"]


def test_routing_chain_with_fallback_is_recorded_as_java_writes_it(committed) -> None:
    calls = _calls(committed)
    routed = [c for c in calls if c[1].startswith(("route:", "judge:")) or c[1].startswith(f"chat:{ROUTER}:")]
    assert {fid for _, fid, _, _ in routed} == {f"route:{ROUTER}", f"chat:{ROUTER}:{CANDIDATES[0]}",
                                                f"chat:{ROUTER}:{CANDIDATES[1]}", f"judge:{ROUTER}"}
    assert all(digest == "" for _, _, digest, _ in routed)                  # Java: argsDigest ""
    primary = {status for _, fid, _, status in routed if fid.endswith(CANDIDATES[0])}
    assert primary == {"SUCCEEDED", "FAILED"}                               # the primary times out sometimes
    # a fallback slot always follows a FAILED primary in the same record, and the judge comes last
    for pos in {i for i, fid, _, status in routed if fid.endswith(CANDIDATES[0]) and status == "FAILED"}:
        ids = [fid for i, fid, _, _ in calls if i == pos]
        at = ids.index(f"chat:{ROUTER}:{CANDIDATES[0]}")
        assert ids[at + 1:at + 2] in ([], [f"chat:{ROUTER}:{CANDIDATES[1]}"])
        assert ids[:at] == [f"route:{ROUTER}"]


def test_subagent_children_answer_with_result_events(committed) -> None:
    r = committed.records
    children = r[(r["task_event_class"] == codec.SUBAGENT_EVENT) & r["completed"].astype(bool)]
    assert len(children) and (children["subagent_result_count"] > 0).any()
    for pos in children.index[children["subagent_result_count"] > 0]:
        state = committed.value(pos)
        assert all(e.event_class == "org.apache.flink.agents.api.OutputEvent" and e.upstream_event_id is None
                   for e in state.subagent_result_events)
        assert not [e for e in state.output_events if e.type == "_output_event"]
    # internal calls reserve a PENDING caller slot first (main)
    assert any(status == "PENDING" and "#" in fid for _, fid, _, status in _calls(committed))


def test_refresh_rows_repeat_the_latest_value_and_reconstruct_shows_them_as_refresh(committed) -> None:
    refresh = refresh_positions(committed, "main")
    assert len(refresh) > 100
    raw = committed.raw
    latest: dict[tuple[int, bytes], bytes] = {}
    for pos in range(len(raw)):
        slot = (raw.partition[pos], raw.key[pos])
        if pos in refresh:
            assert raw.value[pos] == latest[slot]
        latest[slot] = raw.value[pos]
    result = ai.reconstruct(committed, markers=samples.markers(NAME))
    assert result.runtime.name == "main"
    assert set(result.records.loc[sorted(refresh), "status"].astype(str)) == {"refresh"}
    assert ai.reconstruct(committed, runtime="0.3").records["status"].astype(str).eq("refresh").sum() == 0


def _lookups(ex) -> list[tuple[int, str, str]]:
    return [(int(s.seq), s.action, str(s.outcome)) for s in ex.step_list
            if s.kind is StepKind.LOOKUP and s.outcome != "NOT-DISPATCHED"]


@pytest.mark.parametrize("rule", ["original", "fixed"])
def test_predict_and_the_executor_agree_and_the_mid_action_restore_resumes(sample: samples.Sample,
                                                                           committed, rule: str) -> None:
    ex = sample.executor(rule=rule)
    ex.run()
    assert ex.failure is None and ex.runtime.name == "main"
    # the log-only model (the agent as recorded): the support agent's bodies branch on call results,
    # which the static prediction does not have
    plan = as_plan(dict(sample.plan))
    pred = predict(committed, plan=plan, rule=rule, markers=list(sample.markers))
    tasks = pred.tasks[pred.tasks["outcome"] != "NOT-DISPATCHED"]
    assert _lookups(ex) == [(int(s), a, o) for s, a, o in zip(tasks["seq"], tasks["action"], tasks["outcome"])]
    first = next(s for s in ex.step_list if s.kind is StepKind.LOOKUP)
    assert (first.action, first.outcome) == ("chat", "RESUME") and first.detail["restored"]
    resumed = [s for s in ex.step_list if s.task == first.task and s.call_index is not None]
    assert [(s.function_id, str(s.outcome)) for s in resumed] == [
        (f"route:{ROUTER}", "hit"), (f"chat:{ROUTER}:{CANDIDATES[0]}", "hit-failed"),
        (f"chat:{ROUTER}:{CANDIDATES[1]}", "hit"), (f"judge:{ROUTER}", "execute")]     # zero repeated calls


def test_a_0_3_operator_writes_no_refresh_rows_and_its_restore_repeats_every_call() -> None:
    from agent_inspect.samples._catalog import _factory
    from agent_inspect.samples._production_v4 import production_v4_story

    job, mid = production_v4_story(_factory(NAME, key_format="K2", num_partitions=4, runtime="0.3"))
    assert not refresh_positions(job.log, "main")
    ex = job.run(restore=mid, rule="original")
    first = next(s for s in ex.step_list if s.kind is StepKind.LOOKUP)
    assert (first.action, first.outcome) == ("chat", "RERUN")
    executed = [s.function_id for s in ex.step_list if s.task == first.task and s.outcome == "execute"]
    assert executed == [f"route:{ROUTER}", f"chat:{ROUTER}:{CANDIDATES[0]}", f"chat:{ROUTER}:{CANDIDATES[1]}",
                        f"judge:{ROUTER}"]


def test_the_committed_trace_agrees_with_the_prediction(committed) -> None:
    restore = json.loads(samples.path(NAME, "markers").read_text(encoding="utf-8"))["restore"]
    v = verify(committed, samples.path(NAME, "trace"), markers=samples.markers(NAME), restore=restore)
    assert v.agree, v.disagreements[["key", "action", "predicted", "observed", "cause"]].to_string()
    t = v.totals.set_index("outcome")
    assert t.loc["RESUME", "predicted"] == t.loc["RESUME", "observed"] == 1


def test_reconstruct_predict_and_the_executor_agree_on_the_inferred_plan(sample: samples.Sample, committed) -> None:
    """Refresh rows of finished-but-not-pruned rounds are no rounds to replay: the plan inferred from the
    log is the restore's own (no input, the one in-flight chat pending), and all three models RESUME it."""
    markers = samples.markers(NAME)
    restore = json.loads(samples.path(NAME, "markers").read_text(encoding="utf-8"))["restore"]
    plan = ReplayPlan.from_log(committed, markers=markers)
    assert plan.inputs == ()
    assert {k: v for k, v in restore["restored_seq"].items() if k in plan.restored_seq} == dict(plan.restored_seq)
    assert [[p.key, p.seq, p.action, p.event.id] for p in plan.pending] == [
        [k, s, a, e["id"]] for k, s, a, e in restore["pending"]]
    ex = sample.executor(rule="original")
    ex.run()
    pred = predict(committed, markers=markers)
    recon = ai.reconstruct(committed, markers=markers)
    r = recon.records[recon.records["outcome"].notna()]
    looked = _lookups(ex)
    assert looked == [(5, "chat", "RESUME")]
    tasks = pred.tasks[pred.tasks["outcome"] != "NOT-DISPATCHED"]
    assert [(int(s), a, o) for s, a, o in zip(tasks["seq"], tasks["action"], tasks["outcome"])] == looked
    assert sorted(map(str, r["outcome"])) == ["NOT-DISPATCHED", "NOT-DISPATCHED", "RESUME"]
    nd = pred.tasks[pred.tasks["outcome"] == "NOT-DISPATCHED"]
    assert sorted(nd["entry_pos"].dropna().astype(int)) == sorted(r.index[r["outcome"] == "NOT-DISPATCHED"])
    assert recon.summary()["outcomes"].get("RERUN", 0) == 0 and recon.summary()["outcomes"].get("REUSE", 0) == 0
    executed = [s.function_id for s in ex.step_list if s.call_index is not None and str(s.outcome) == "execute"]
    assert executed == [f"judge:{ROUTER}"]           # the one call not recorded before the checkpoint; none repeated


def test_verify_needs_no_restore_plan(committed) -> None:
    v = verify(committed, samples.path(NAME, "trace"), markers=samples.markers(NAME))
    assert v.agree, v.disagreements[["key", "action", "predicted", "observed", "cause"]].to_string()
    t = v.totals.set_index("outcome")
    assert t.loc["RESUME", "predicted"] == t.loc["RESUME", "observed"] == 1
    assert "RERUN" not in t.index
