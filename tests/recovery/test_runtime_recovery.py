"""Issue #12 items 3, 4 and 10 in the store model and the predictor: runtime behaviours, refresh rows,
sub-agent result replay, PENDING caller slots, NOT-DISPATCHED per round, branch-aware begin tasks."""

from __future__ import annotations

from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect._errors import RecoveryError
from agent_inspect.cases import build_case, load_cases, run_case
from agent_inspect.recovery import predict, refresh_positions
from agent_inspect.store import runtime_model

CASES = Path(__file__).resolve().parents[2] / "cases"


def _case(case_id: str, variant: str | None = None):
    for c in load_cases(CASES / f"{case_id.split('/')[0]}.toml"):
        if c.variant == variant:
            return c
    raise AssertionError(case_id)


def test_runtime_table():
    assert runtime_model() == runtime_model("0.3") == runtime_model("auto")
    m3, m4, mm = runtime_model("0.3"), runtime_model("0.4"), runtime_model("main")
    assert not (m3.subagent_results or m3.pending_slots or m3.no_rebootstrap or m3.keeps_pending)
    assert m4.keeps_pending and not (m4.subagent_results or m4.pending_slots or m4.no_rebootstrap)
    assert mm.keeps_pending and mm.subagent_results and mm.pending_slots and mm.no_rebootstrap
    assert m4.refresh_rows("kafka") and m4.refresh_rows("fluss") and not m3.refresh_rows("fluss")
    marker = runtime_model("0.4", kafka_pending="marker")
    assert not marker.refresh_rows("kafka") and marker.refresh_rows("fluss")

    class Info:           # an inferred-runtime object (anything with a name)
        name = "main"

    assert runtime_model(Info()).subagent_results
    with pytest.raises(RecoveryError, match="unknown runtime"):
        runtime_model("0.5")
    with pytest.raises(RecoveryError, match="kafka_pending"):
        runtime_model("0.4", kafka_pending="rewind")


# -- item 4: pending states kept across checkpoints ------------------------------------------------------

def test_refresh_rows_found_only_where_the_runtime_writes_them():
    built = build_case(_case("N15"))                     # Fluss, 0.4: two checkpoints, two retained states
    log = built.log
    assert len(refresh_positions(log, "0.4")) == 4
    assert refresh_positions(log, "0.3") == frozenset()
    assert len(refresh_positions(log, "0.4", kafka_pending="marker")) == 4   # Fluss has no marker option
    kafka = build_case(_case("N14", "0.4-kafka-marker")).log
    assert refresh_positions(kafka, "0.4", kafka_pending="marker") == frozenset()


def test_a_row_whose_bytes_differ_is_never_a_refresh():
    built = build_case(_case("N15"))
    log = built.log
    refresh = sorted(refresh_positions(log, "0.4"))
    # change one byte of a refresh row's value (in a copy: logs are read-only): a new write now, not a refresh
    pos = refresh[-1]
    changed = log.select([True] * len(log))
    changed.raw.value[pos] = log.raw.value[pos].replace(b'"completed":false', b'"completed":false ')
    assert pos not in refresh_positions(changed, "0.4")
    assert pos in refresh_positions(log, "0.4")


def test_reconstruct_shows_refresh_rows_never_as_attempts_calls_or_divergences():
    built = build_case(_case("N15"))
    r04 = ai.reconstruct(built.log, rule="fixed+round-regression", markers=list(built.markers), runtime="0.4")
    rows = r04.records
    refresh = rows[rows["status"] == "refresh"]
    assert len(refresh) == 4 and refresh["attempt"].isna().all() and (refresh["execution"] == -1).all()
    assert refresh["reason"].str.contains("brings the pending state back").sum() == 2
    assert r04.divergences.empty
    assert set(r04.history.attempts["attempt"]) == {1}
    # read as 0.3, the same rows look like two more attempts
    r03 = ai.reconstruct(built.log, rule="fixed", markers=list(built.markers), runtime="0.3")
    assert "refresh" not in set(r03.records["status"]) and set(r03.records["attempt"].dropna()) == {1, 2, 3}


@pytest.mark.parametrize("variant,outcome,calls", [(None, "RERUN", 1), ("0.4", "RESUME", 0), ("main", "RESUME", 0),
                                                   ("0.4-kafka-marker", "RESUME", 0), ("0.4-fluss", "RESUME", 0)])
def test_checkpoint_mid_action_resumes_from_0_4_on(variant, outcome, calls):
    case = _case("N14", variant)
    built = build_case(case)
    pred = predict(built.log, plan=built.plan, agent=built.agent, rule="original", markers=built.markers,
                   runtime=case.setup.runtime, kafka_pending=case.setup.kafka_pending)
    assert pred.tasks["outcome"].iloc[0] == outcome
    assert pred.calls_executed().get("multiply", 0) == calls


@pytest.mark.parametrize("variant", ["0.4", "main", "0.4-fluss"])
def test_an_inferred_plan_names_a_pending_task_by_the_given_agents_action(variant):
    """A task in flight at the checkpoint whose action never completed has no name in the log (no output event
    names it): with ``agent=`` the inferred plan names it by the agent's action of the same action UUID (spec §9.5
    step 2), so N14's WA RESUMEs as it does under the case's own plan, not NOT-DISPATCHED under a placeholder."""
    case = _case("N14", variant)
    built = build_case(case)
    inferred = predict(built.log, agent=built.agent, rule="original", markers=built.markers,
                       runtime=case.setup.runtime, kafka_pending=case.setup.kafka_pending)
    assert dict(zip(inferred.tasks["action"], inferred.tasks["outcome"])) == {"WA": "RESUME", "IA": "NOT-DISPATCHED"}
    assert inferred.calls_executed().get("multiply", 0) == 0
    plan = ai.ReplayPlan.from_log(built.log, markers=built.markers, runtime=case.setup.runtime, agent=built.agent)
    assert [(t.key, t.seq, t.action) for t in plan.pending] == [("k", 5, "WA")]
    as_recorded = ai.ReplayPlan.from_log(built.log, markers=built.markers, runtime=case.setup.runtime)
    wa = built.agent.action_uuid("WA", str(built.log.records["key_format"].iloc[0]))
    assert [t.action for t in as_recorded.pending] == [f"action-{wa[:8]}"]     # the log alone cannot name it


def test_kafka_marker_option_moves_the_marker_back():
    refresh = build_case(_case("N14", "0.4"))
    moved = build_case(_case("N14", "0.4-kafka-marker"))
    plain = build_case(_case("N14"))
    assert plain.markers[0][0] == 4                     # after IA's two writes and WA's two
    assert refresh.markers[0][0] == 4 and len(refresh.log) == 6    # two refresh rows after the marker
    assert moved.markers[0][0] == 1 and len(moved.log) == 4        # back to IA's completed record



def test_a_plan_inferred_under_the_kafka_marker_option_says_what_the_moved_marker_hides():
    """Under kafka_pending="marker" the markers bound the rebuild, not the consumed inputs (addendum §2.3): a plan
    inferred from the log replays the window's rounds from their inputs, which the restore does not (spec §9.5), and
    says so; N14's moved-back marker shows it (IA REUSEs, where the case's checkpoint plan has it not dispatched)."""
    case = _case("N14", "0.4-kafka-marker")
    moved = build_case(case)
    inferred = predict(moved.log, agent=moved.agent, rule="original", markers=moved.markers, runtime="0.4",
                       kafka_pending="marker")
    assert dict(zip(inferred.tasks["action"], inferred.tasks["outcome"])) == {"IA": "REUSE", "WA": "RESUME"}
    assert any(n.startswith("kafka_pending='marker': a writer that moves the marker back") and "1 input " in n
               and "spec §9.5" in n for n in inferred.notes)
    given = predict(moved.log, plan=moved.plan, agent=moved.agent, rule="original", markers=moved.markers,
                    runtime="0.4", kafka_pending="marker")
    assert dict(zip(given.tasks["action"], given.tasks["outcome"])) == {"WA": "RESUME", "IA": "NOT-DISPATCHED"}
    log, markers = ai.load(ai.samples.path("production_v4")), ai.samples.markers("production_v4")
    for quiet in (predict(log, markers=markers), predict(log, markers=markers, runtime="0.3"),
                  predict(build_case(_case("N14", "0.4")).log, markers=[{0: 4}], runtime="0.4")):
        assert not any("kafka_pending='marker'" in n for n in quiet.notes)


def test_a_checkpoint_s_seqnums_drop_the_inputs_of_rounds_it_had_consumed():
    """``ReplayPlan.restored_at``, shared by a Flink checkpoint's plan and the executor's restore: N14's
    moved-back marker shows round 5's input, which the checkpoint (messageSequenceNumber 5) had consumed."""
    moved = build_case(_case("N14", "0.4-kafka-marker"))
    inferred = ai.ReplayPlan.from_log(moved.log, markers=moved.markers, runtime="0.4", kafka_pending="marker")
    assert len(inferred.inputs) == 1 and inferred.seq_of("k") == 4
    restored = inferred.restored_at({"k": 5})
    assert restored.inputs == () and dict(restored.restored_seq) == {"k": 5}
    assert restored.notes == ("1 input of 1 key (k ≤ seq 5) not replayed: the markers reach back before the "
                              "checkpoint, which had consumed those rounds",)
    # a restore at the round before keeps it, and a key the seqNums do not name keeps its own
    kept = inferred.restored_at({"k": 4})
    assert kept.inputs == inferred.inputs and kept.restored_seq == inferred.restored_seq
    assert inferred.notes[0].startswith("kafka_pending='marker'") and kept.notes == ()   # its seqNums tell them apart
    assert inferred.restored_at({"j": 0}).inputs == inferred.inputs


def test_the_kafka_marker_option_refuses_a_log_with_refresh_rows_after_the_markers():
    """A writer that moves the marker back writes no refresh rows (addendum §2.3): a Kafka log with them after the
    markers was written by a refreshing one. Read under "marker" their rounds were replayed and reused (N14's 0.4
    log: IA REUSE where the restore does not dispatch it; production_v4: REUSE 14, RESUME 1 from its 15 refresh
    rows), a recovery no runtime runs: predict, reconstruct and the inferred plan refuse it and say which to use."""
    refreshed = build_case(_case("N14", "0.4"))
    log, markers = refreshed.log, list(refreshed.markers)
    assert predict(log, agent=refreshed.agent, markers=markers, runtime="0.4").tasks["outcome"].tolist() == \
        ["RESUME", "NOT-DISPATCHED"]
    refused = "kafka_pending='marker' does not fit this log: it holds 2 refresh rows after the markers"
    with pytest.raises(RecoveryError, match=refused):
        predict(log, agent=refreshed.agent, markers=markers, runtime="0.4", kafka_pending="marker")
    with pytest.raises(RecoveryError, match=refused):
        ai.reconstruct(log, markers=markers, runtime="0.4", kafka_pending="marker")
    with pytest.raises(RecoveryError, match="kafka_pending='refresh'"):
        ai.ReplayPlan.from_log(log, markers=markers, runtime="0.4", kafka_pending="marker")
    v4 = ai.load(ai.samples.path("production_v4"))
    with pytest.raises(RecoveryError, match="it holds 15 refresh rows after the markers"):
        predict(v4, markers=ai.samples.markers("production_v4"), kafka_pending="marker")
    # a log the moved-back marker did write, and a Fluss log (refresh rows whatever the option), still run
    moved = build_case(_case("N14", "0.4-kafka-marker"))
    assert predict(moved.log, plan=moved.plan, agent=moved.agent, markers=moved.markers, runtime="0.4",
                   kafka_pending="marker").tasks["outcome"].tolist() == ["RESUME", "NOT-DISPATCHED"]
    fluss = build_case(_case("N14", "0.4-fluss"))
    assert predict(fluss.log, agent=fluss.agent, markers=fluss.markers, runtime="0.4",
                   kafka_pending="marker").tasks["outcome"].tolist() == ["RESUME", "NOT-DISPATCHED"]



def test_the_kafka_marker_check_reads_the_window_once_per_prediction(monkeypatch):
    """Resolving the settings and inferring their plan both check the log against kafka_pending="marker": the
    rebuild window's refresh rows are counted once (the count is kept per log, runtime and markers)."""
    from agent_inspect.recovery import _refresh

    counted = []
    find = _refresh.refresh_positions   # called only to count the refresh rows after the markers
    monkeypatch.setattr(_refresh, "refresh_positions", lambda *a, **kw: counted.append(a) or find(*a, **kw))
    moved = build_case(_case("N14", "0.4-kafka-marker"))
    inferred = predict(moved.log, agent=moved.agent, rule="original", markers=moved.markers, runtime="0.4",
                       kafka_pending="marker")
    assert any(n.startswith("kafka_pending='marker'") for n in inferred.notes) and len(counted) == 1
    refreshed = build_case(_case("N14", "0.4"))
    for _ in range(2):
        with pytest.raises(RecoveryError, match="it holds 2 refresh rows after the markers"):
            predict(refreshed.log, markers=list(refreshed.markers), runtime="0.4", kafka_pending="marker")
    assert len(counted) == 2

# -- item 3: sub-agents as main runs them --------------------------------------------------------------

def test_reused_child_replays_result_events_with_current_lineage():
    case = _case("S08")
    built = build_case(case)
    ids = built.id_factory()
    pred = predict(built.log, plan=built.plan, agent=built.agent, rule="fixed", markers=built.markers, new_id=ids,
                   runtime="main")
    labels = {**built.id_labels, **ids.labels}
    got = pred.subagent_results["s0#s0-1"]
    assert [labels[i] for i in got] == ["r1"]
    # the reused child's forwarded envelope is not sent again
    assert list(pred.tasks["outcome"]) == ["RESUME", "REUSE", "NOT-DISPATCHED"]
    again = predict(built.log, plan=built.plan, agent=built.agent, rule="fixed", markers=built.markers, runtime="0.3")
    assert again.subagent_results["s0#s0-1"] == () and list(again.tasks["outcome"]) == ["RESUME", "REUSE", "REUSE"]


def test_pending_caller_slot_resubmits_under_main_only():
    built = build_case(_case("S09"))
    main = predict(built.log, plan=built.plan, agent=built.agent, rule="fixed", markers=built.markers, runtime="main")
    old = predict(built.log, plan=built.plan, agent=built.agent, rule="fixed", markers=built.markers, runtime="0.3")
    assert set(main.ledger["kind"]) >= {"resubmit"} and main.calls_executed().get("s0#s0-1", 0) == 0
    assert list(main.tasks["outcome"]) == ["RESUME", "REUSE"]
    assert list(old.tasks["outcome"]) == ["RESUME", "NOT-DISPATCHED"] and old.subagent_results["s0#s0-1"] == "journal"


def test_internal_calls_reserve_a_pending_slot_before_the_child_runs():
    from agent_inspect.recovery.engine import CallJournal

    decisions, writes, seen = [], [], []
    journal = CallJournal(report=decisions.append, persist=writes.append, deliver=False)

    def run():
        seen.append([(s.function_id, s.status) for s in journal.results])

    journal.subagent("s0#s0-1", run)
    assert seen == [[("s0#s0-1", "PENDING")]] and decisions[-1].outcome == "execute"
    assert [(s.status) for s in journal.results] == ["SUCCEEDED"] and len(writes) == 2


def test_completed_root_caller_is_not_rebootstrapped_under_main():
    for variant, outcomes in ((None, ["REUSE", "NOT-DISPATCHED"]), ("0.3", ["REUSE", "REUSE"])):
        case = _case("S11", variant)
        res = run_case(case, "fixed")
        assert res.passed, res.mismatches
        assert list(res.prediction.tasks["outcome"]) == outcomes


def test_subagent_tree_shows_result_events_under_their_call():
    built = build_case(_case("S08"))
    tree = ai.reconstruct(built.log, rule="fixed", markers=list(built.markers), runtime="main").subagent_tree("k", 5)
    results = [n for n, d in tree.nodes(data=True) if d["kind"] == "result"]
    assert len(results) == 1
    (call,) = tree.predecessors(results[0])
    assert tree.nodes[call]["kind"] == "call" and tree.nodes[call]["call_status"] == "done"
    assert tree.nodes[results[0]]["attributes"] == {"output": "LGTM"}
    assert tree.edges[call, results[0]]["kind"] == "answers"


# -- item 10 --------------------------------------------------------------------------------------------

def test_not_dispatched_is_decided_when_the_round_ends():
    # k2's round 7 ends with CA not dispatched (its caller was reused); k's count > 1 at seq 5 then makes the
    # snapshot Kafka store evict every key's entries above 5, k2's CA included: it must still be listed
    built = build_case(_case("N17"))
    pred = predict(built.log, plan=built.plan, agent=built.agent, rule="original", markers=built.markers)
    assert any(e.op == "cross-key" for e in pred.events)
    nd = pred.tasks[pred.tasks["outcome"] == "NOT-DISPATCHED"]
    assert list(nd["action"]) == ["CA"] and list(nd["seq"]) == [7]


def test_branch_aware_compares_a_begin_task_after_its_round_root_joined():
    res = run_case(_case("N16"), "branch-aware")
    assert res.passed, (res.predicted, res.mismatches)
    assert res.evictions == 0


def test_a_batch_reserves_its_pending_slots_in_one_write():
    from agent_inspect.recovery.engine import CallJournal

    decisions, writes = [], []
    journal = CallJournal(report=decisions.append, persist=writes.append, deliver=False)
    fids = [f"s0#s0-{n}" for n in range(1, 5)]
    journal.reserve(fids)
    assert len(writes) == 1 and [s.status for s in journal.results] == ["PENDING"] * 4
    journal.subagent(fids[0], lambda: None)          # the job dies after the first call
    assert decisions[-1].outcome == "execute"
    assert [s.status for s in journal.results] == ["SUCCEEDED", "PENDING", "PENDING", "PENDING"]
    # replayed from that journal: the terminal slot replays, the PENDING ones re-submit
    decisions, writes = [], []
    again = CallJournal(journal.results, report=decisions.append, persist=writes.append, deliver=False)
    again.reserve(fids)
    assert writes == []
    outcomes = []
    for f in fids:
        again.subagent(f, lambda: None)
        outcomes.append(decisions[-1].outcome)
    assert outcomes == ["hit", "resubmit", "resubmit", "resubmit"]
