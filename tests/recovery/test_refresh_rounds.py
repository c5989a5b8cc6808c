"""Refresh rows are never new work (addendum §2.2): a restore of checkpoint C replays only what was in flight
at C. A round the window holds only through refresh rows of states complete before the marker is not
replayed; an in-flight round (an incomplete state at C) RESUMEs. reconstruct, predict (with the plan it
infers) and the executor agree on it, and refresh rows are never attempts, calls or divergences.

The job: two inputs on one key; checkpoint 1 is taken while input 1's WA has recorded one call, checkpoint 2
(never completed, so nothing is pruned) after input 1 finished and while input 2's WA has recorded one call.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_inspect.executor import Breakpoint, Policies, ReplayExecutor, StepKind
from agent_inspect.recovery import ReplayPlan, predict, reconstruct, refresh_positions
from agent_inspect.recovery._refresh import retained_rounds
from tests.support.two_call_agent import CALLS
from tests.support.two_call_agent import two_call_agent as _agent


@pytest.fixture(scope="module")
def job() -> dict[str, Any]:
    agent = _agent()
    ex = ReplayExecutor(agent=agent, plan={"inputs": [("k", "1"), ("k", "2")]}, key_format="K1.5",
                        runtime="main", seed=7)
    ex.run(until=Breakpoint(kind="persist", seq=0, action="WA", outcome="call results (1)"))
    first = ex.checkpoint()
    ex.run(until=Breakpoint(kind="persist", seq=1, action="WA", outcome="call results (1)"))
    second = ex.checkpoint(complete=False)
    return {"agent": agent, "ex": ex, "log": ex.to_log(), "markers": (first, second)}


def _dispatched_reconstruct(r) -> list[tuple[int, str]]:
    rows = r.records[r.records["outcome"].notna() & (r.records["outcome"].astype(str) != "NOT-DISPATCHED")]
    return sorted((int(s), str(o)) for s, o in zip(rows["seq"], rows["outcome"]))


def _dispatched_predict(p) -> list[tuple[int, str, str]]:
    t = p.tasks[p.tasks["outcome"] != "NOT-DISPATCHED"]
    return [(int(s), str(a), str(o)) for s, a, o in zip(t["seq"], t["action"], t["outcome"])]


def _restore(job, index: int, plan: Any = None) -> tuple[list[tuple[int, str, str]], list[str]]:
    CALLS.clear()
    again = ReplayExecutor(job["log"], agent=job["agent"], restore=job["ex"].checkpoints[index], plan=plan,
                           rule="original", runtime="main", seed=8, policies=Policies(trust_payloads=True))
    again.run()
    assert again.failure is None
    return [(int(s.seq), s.action, str(s.outcome)) for s in again.step_list if s.kind is StepKind.LOOKUP], list(CALLS)


def test_the_job_refreshes_a_finished_round_and_an_in_flight_one_at_checkpoint_2(job) -> None:
    log, (_, second) = job["log"], job["markers"]
    refresh = refresh_positions(log, "main")
    after = [int(p) for p in log.records.index if int(log.records.at[p, "offset"]) >= second[0]]
    assert after and set(after) <= refresh                   # only refresh rows after the second marker
    rounds = retained_rounds(log.records, refresh, log.records["offset"].ge(second[0]).to_numpy())
    assert rounds.finished == {("k", 0)}
    assert list(rounds.pending) == [("k", 1)] and len(rounds.pending[("k", 1)]) == 1


def test_restoring_checkpoint_2_resumes_the_in_flight_round_and_replays_nothing_else(job) -> None:
    log, marker = job["log"], job["markers"][1]
    plan = ReplayPlan.from_log(log, markers=[marker])
    assert plan.inputs == () and dict(plan.restored_seq) == {"k": 1}
    assert [(p.seq, p.action, p.event.type) for p in plan.pending] == [(1, "WA", "WorkEvent")]

    r = reconstruct(log, markers=[marker])
    p = predict(log, markers=[marker])
    looked, calls = _restore(job, 1)
    # reconstruct == predict == executor: the in-flight WA RESUMEs, nothing of the finished round 0 runs
    assert _dispatched_reconstruct(r) == [(1, "RESUME")]
    assert _dispatched_predict(p) == [(1, "WA", "RESUME")] == looked
    assert calls == ["add(12)"]                               # multiply(2) is served from its record
    assert r.records.loc[r.records["seq"] == 0, "outcome"].isna().all()
    assert (p.tasks["seq"] == 0).sum() == 0
    # round 1's IA was complete at the checkpoint: it is not sent again, in both models
    nd_r = r.records[r.records["outcome"].astype(str) == "NOT-DISPATCHED"]
    nd_p = p.tasks[p.tasks["outcome"] == "NOT-DISPATCHED"]
    assert [int(s) for s in nd_r["seq"]] == [int(s) for s in nd_p["seq"]] == [1]
    assert list(nd_p["action"]) == ["IA"]
    finished = r.records[(r.records["seq"] == 0) & (r.records["offset"] >= marker[0])]
    assert len(finished) and set(finished["status"].astype(str)) == {"refresh"}
    assert finished["reason"].str.contains("finished before the checkpoint").all()


def test_restoring_checkpoint_1_resumes_round_0_and_replays_input_2(job) -> None:
    log, marker = job["log"], job["markers"][0]
    plan = ReplayPlan.from_log(log, markers=[marker])
    assert [i.display for i in plan.inputs] == ["2"] and dict(plan.restored_seq) == {"k": 0}
    assert [(p.seq, p.action) for p in plan.pending] == [(0, "WA")]
    r = reconstruct(log, markers=[marker])
    p = predict(log, markers=[marker])
    looked, _ = _restore(job, 0, plan={"inputs": [("k", "2")]})
    # WA of round 0 completed after checkpoint 1: the rebuild reads that record, so its task is reused
    assert _dispatched_predict(p) == looked == [(0, "WA", "REUSE"), (1, "IA", "RERUN"), (1, "WA", "RERUN")]
    assert _dispatched_reconstruct(r) == [(0, "REUSE"), (1, "RERUN"), (1, "RERUN")]


def test_refresh_rows_are_never_attempts_calls_or_divergences(job) -> None:
    log = job["log"]
    refresh = sorted(refresh_positions(log, "main"))
    for marker in job["markers"]:
        r = reconstruct(log, markers=[marker])
        rows = r.records.loc[refresh]
        assert set(rows["status"].astype(str)) == {"refresh"}
        assert rows["attempt"].isna().all() and (rows["execution"] == -1).all()
        assert rows["divergence_id"].isna().all()
        # under the fixed rule nothing diverges: a re-appended key is no second record of its round
        assert reconstruct(log, rule="fixed", markers=[marker]).divergences.empty
    assert set(reconstruct(log).history.attempts["attempt"]) == {1}   # one attempt, however many refreshes
    p = predict(log, markers=[job["markers"][1]])
    calls = {(str(k), str(n).rsplit(".", 1)[-1]): int(c) for k, n, c in zip(p.ledger["kind"], p.ledger["name"],
                                                                            p.ledger["count"]) if k != "body"}
    # the as-recorded body: the one recorded call is served once, nothing is executed again
    assert calls == {("replayed", "multiply"): 1}


def test_a_refresh_row_whose_bytes_differ_is_a_write_and_is_never_collapsed(job) -> None:
    original, marker = job["log"], job["markers"][1]
    refresh = sorted(refresh_positions(original, "main"))
    pos = refresh[-1]                                       # round 1's in-flight WA, re-appended at checkpoint 2
    log = original.select([True] * len(original))           # a copy whose bytes we change (logs are read-only)
    value = log.raw.value[pos]
    changed = value.replace(b'"completed":false', b'"completed":false ')
    assert changed != value
    log.raw.value[pos] = changed
    assert pos not in refresh_positions(log, "main")
    r = reconstruct(log, markers=[marker])
    assert str(r.records.at[pos, "status"]) != "refresh" and r.records.at[pos, "attempt"] is not None
    # round 1 holds a real write after the marker now, so it is not a retained round any more
    rounds = retained_rounds(log.records, refresh_positions(log, "main"),
                             log.records["offset"].ge(marker[0]).to_numpy())
    assert ("k", 1) not in rounds.pending and ("k", 1) not in rounds.finished
    assert rounds.finished == {("k", 0)}
    assert pos in refresh_positions(original, "main")
