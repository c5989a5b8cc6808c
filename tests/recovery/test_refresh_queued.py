"""A task still queued at the checkpoint keeps its round in flight (spec §9.3 step 4, §9.5 step 2; addendum §2.2).

The operator routes a task's output events when the task completes, in the same mailbox action, so a checkpoint
can hold a round whose stored states are all complete but whose next task is queued in ``actionTasks`` with no
record yet. The restore re-submits that task with its original event; the round is not finished.
retained_rounds, ReplayPlan.from_log, reconstruct, predict and the executor agree on it.

The job: the two-call agent, two inputs on one key; a checkpoint is taken when round 1's IA has completed and
its WA has been dequeued but has written nothing (the executor's LOOKUP step: no state yet). A second job adds
WB, a second listener of WorkEvent, and takes the checkpoint mid-WA: WB (queued) runs, then WA RESUMEs. A third adds
IB, a second root action, and takes the checkpoint as IB is dequeued: IB (the input, queued for it) and WA run.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_inspect.executor import Breakpoint, Policies, ReplayExecutor, StepKind
from agent_inspect.recovery import ReplayPlan, predict, reconstruct, refresh_positions
from agent_inspect.recovery._refresh import retained_rounds
from tests.support.two_call_agent import CALLS, add, two_call_agent


def _job(agent: Any, until: Breakpoint) -> dict[str, Any]:
    ex = ReplayExecutor(agent=agent, plan={"inputs": [("k", "1"), ("k", "2")]}, key_format="K1.5",
                        runtime="main", seed=7)
    ex.run(until=until)
    marker = ex.checkpoint()
    return {"agent": agent, "ex": ex, "log": ex.to_log(), "marker": marker}


@pytest.fixture(scope="module")
def queued() -> dict[str, Any]:
    """Round 1: IA complete, WA queued with no record at the checkpoint."""
    return _job(two_call_agent(), Breakpoint(kind="lookup", seq=1, action="WA"))


@pytest.fixture(scope="module")
def fan_out() -> dict[str, Any]:
    """Round 1: IA complete, WA mid-action (one call recorded), WB queued with no record at the checkpoint."""
    agent = two_call_agent()

    @agent.action("WB", listens=["WorkEvent"])
    def wb(event, ctx):
        ctx.send_event("_output_event", {"output": ctx.durable_execute(add, event.attributes["x"])})

    return _job(agent, Breakpoint(kind="persist", seq=1, action="WA", outcome="call results (1)"))


@pytest.fixture(scope="module")
def two_roots() -> dict[str, Any]:
    """Round 1: IA complete; IB (queued with the input) dequeued, no record; WA (queued by IA's output)."""
    agent = two_call_agent()

    @agent.action("IB", listens=["_input_event"])
    def ib(event, ctx):
        ctx.send_event("_output_event", {"output": ctx.durable_execute(add, int(event.attributes["input"]))})

    return _job(agent, Breakpoint(kind="lookup", seq=1, action="IB"))


def _restore(job: dict[str, Any], **how: Any) -> tuple[list[tuple[int, str, str]], list[str], Any]:
    """The executor's restore (``restore=`` the checkpoint's own operator state, or ``markers=``: the plan inferred
    from the log): its LOOKUP and NOT-DISPATCHED steps, the durable calls that really ran, the executor."""
    CALLS.clear()
    again = ReplayExecutor(job["log"], agent=job["agent"], rule="original", runtime="main", seed=8,
                           policies=Policies(trust_payloads=True), **how)
    again.run()
    assert again.failure is None
    steps = [(int(s.seq), s.action, str(s.outcome)) for s in again.step_list
             if s.kind in (StepKind.LOOKUP, StepKind.NOT_DISPATCHED)]
    return steps, list(CALLS), again


def _predicted(p) -> list[tuple[int, str, str]]:
    return [(int(s), str(a), str(o)) for s, a, o in zip(p.tasks["seq"], p.tasks["action"], p.tasks["outcome"])]


def _written_at(ex: Any, seq: int) -> set[str]:
    """State keys of round ``seq`` the executor's replay wrote (its journal after the restored log)."""
    recs = ex.to_log().records
    new = recs.iloc[len(recs) - len(ex.journal):]
    return set(new.loc[new["seq"] == seq, "state_key"].astype(str))


def test_the_checkpoint_holds_a_queued_task_with_no_record(queued) -> None:
    pending = queued["ex"].checkpoints[-1].pending
    assert [(k, s, a, e.type) for k, s, a, e in pending] == [("k", 1, "WA", "WorkEvent")]
    recs = queued["log"].records
    assert set(recs.loc[recs["seq"] == 1, "task_event_type"].astype(str)) == {"_input_event"}   # IA only
    refreshed = recs[recs["offset"] >= queued["marker"][0]]
    assert len(refreshed[refreshed["seq"] == 1]) == 1 and refreshed["completed"].all()   # every state complete


def test_a_round_with_a_queued_task_is_in_flight_not_finished(queued) -> None:
    log, marker = queued["log"], queued["marker"]
    window = log.records["offset"].ge(marker[0]).to_numpy()
    rounds = retained_rounds(log.records, refresh_positions(log, "main"), window, log.value)
    assert rounds.finished == {("k", 0)}
    assert dict(rounds.pending) == {("k", 1): ()}                    # no incomplete state, still in flight
    [q] = rounds.queued[("k", 1)]
    recs = log.records
    assert str(recs.at[q.pos, "task_event_type"]) == "_input_event" and q.output == 0    # IA's WorkEvent
    wa = recs.loc[recs["task_event_type"].astype(str) == "WorkEvent", "action_uuid"].astype(str)
    assert q.action_uuid == wa.iloc[0]                                                 # WA, as round 0 shows
    assert str(recs.at[q.pos, "state_key"]) in rounds.settled
    # without the decoder the event id alone tells the queued task apart
    assert retained_rounds(log.records, refresh_positions(log, "main"), window).queued == rounds.queued


def test_the_inferred_plan_resubmits_the_queued_task_with_its_original_event(queued) -> None:
    plan = ReplayPlan.from_log(queued["log"], markers=[queued["marker"]])
    [(_, _, _, held)] = queued["ex"].checkpoints[-1].pending
    assert plan.inputs == () and dict(plan.restored_seq) == {"k": 1}
    assert [(p.key, p.seq, p.action, p.event.type, p.event.id, p.event.attributes) for p in plan.pending] == [
        ("k", 1, "WA", "WorkEvent", held.id, held.attributes)]


def test_reconstruct_predict_and_the_executor_run_the_queued_task(queued) -> None:
    log, marker = queued["log"], queued["marker"]
    looked, calls, again = _restore(queued, restore=queued["ex"].checkpoints[-1])
    assert looked == [(1, "WA", "RERUN"), (1, "IA", "NOT-DISPATCHED")]
    assert calls == ["multiply(2)", "add(12)"]                        # WA had recorded nothing: both calls run
    assert _restore(queued, markers=[marker])[:2] == (looked, calls)    # the same from the inferred plan
    assert _predicted(predict(log, markers=[marker])) == looked

    r = reconstruct(log, markers=[marker])
    ia = r.records[(r.records["seq"] == 1) & (r.records["status"].astype(str) == "refresh")]
    assert list(ia["outcome"].astype(str)) == ["NOT-DISPATCHED"]
    # the queued WA has no record to annotate, but the replay ran it: the store holds the state it wrote,
    # under the state key the executor's restore wrote
    written = {e.state_key for e in r.store.entries() if e.seq == 1 and e.pos is None}
    assert written == _written_at(again, 1) and all(e.completed for e in r.store.entries() if e.seq == 1)


def test_a_queued_listener_runs_before_the_suspended_one_beside_it(fan_out) -> None:
    """Upstream re-queues a suspended task at the tail of the FIFO ``actionTasks`` (addActionTask), behind WB, which
    IA's completion queued before WA was dequeued: the restore runs WB, then resumes WA."""
    log, marker = fan_out["log"], fan_out["marker"]
    held = fan_out["ex"].checkpoints[-1].pending
    assert [(a, e.type) for _, _, a, e in held] == [("WB", "WorkEvent"), ("WA", "WorkEvent")]
    plan = ReplayPlan.from_log(log, markers=[marker])
    assert [(p.seq, p.action, p.event.id) for p in plan.pending] == [(1, a, e.id) for _, _, a, e in held]

    looked, calls, again = _restore(fan_out, restore=fan_out["ex"].checkpoints[-1])
    assert looked == [(1, "WB", "RERUN"), (1, "WA", "RESUME"), (1, "IA", "NOT-DISPATCHED")]
    assert calls == ["add(2)", "add(12)"]                             # multiply(2) is served from WA's record
    assert _restore(fan_out, markers=[marker])[:2] == (looked, calls)
    assert _predicted(predict(log, markers=[marker])) == looked
    r = reconstruct(log, markers=[marker])
    done = r.records[r.records["outcome"].notna()]
    assert sorted(zip(done["seq"].astype(int), done["outcome"].astype(str))) == [(1, "NOT-DISPATCHED"),
                                                                                  (1, "RESUME")]
    assert {e.state_key for e in r.store.entries() if e.seq == 1} >= _written_at(again, 1)
    # WB was routed (IA completed) before WA started: the order is known, nothing to note about it
    assert not [n for n in plan.notes if "routed after" in n]


def test_a_second_root_queued_with_the_input_runs_before_the_first_roots_child(two_roots) -> None:
    log, marker = two_roots["log"], two_roots["marker"]
    held = two_roots["ex"].checkpoints[-1].pending
    assert [(a, e.type) for _, _, a, e in held] == [("IB", "_input_event"), ("WA", "WorkEvent")]
    plan = ReplayPlan.from_log(log, markers=[marker])
    assert plan.inputs == ()                                          # the input is not replayed by the source
    assert [(p.seq, p.action, p.event.id) for p in plan.pending] == [(1, a, e.id) for _, _, a, e in held]

    looked, calls, _ = _restore(two_roots, restore=two_roots["ex"].checkpoints[-1])
    assert looked == [(1, "IB", "RERUN"), (1, "WA", "RERUN"), (1, "IA", "NOT-DISPATCHED")]
    assert calls == ["add(2)", "multiply(2)", "add(12)"]
    assert _restore(two_roots, markers=[marker])[:2] == (looked, calls)
    assert _predicted(predict(log, markers=[marker])) == looked
    r = reconstruct(log, markers=[marker])
    assert list(r.records.loc[r.records["outcome"].notna(), "outcome"].astype(str)) == ["NOT-DISPATCHED"]
    assert len([e for e in r.store.entries() if e.seq == 1 and e.pos is None]) == 2     # IB and WA ran


def _routing_agent() -> Any:
    """The two-call agent plus WB (also on WorkEvent), which routes XEvent to XA (one durable call)."""
    agent = two_call_agent()

    @agent.action("WB", listens=["WorkEvent"])
    def wb(event, ctx):
        ctx.send_event("XEvent", {"x": event.attributes["x"]})

    @agent.action("XA", listens=["XEvent"])
    def xa(event, ctx):
        ctx.send_event("_output_event", {"output": ctx.durable_execute(add, event.attributes["x"])})

    return agent


def test_a_task_routed_after_the_suspended_one_was_queued_runs_after_it() -> None:
    """Restored mid-WA, WB runs first and routes XA behind WA's continuation: at the next checkpoint the queue is
    WA, XA. The plan orders each task by when it was last queued (WA: its last write; XA: WB's completion)."""
    agent = _routing_agent()
    first = _job(agent, Breakpoint(kind="persist", seq=1, action="WA", outcome="call results (1)"))
    assert [a for _, _, a, _ in first["ex"].checkpoints[-1].pending] == ["WB", "WA"]
    restored = ReplayExecutor(first["log"], agent=agent, rule="original", runtime="main", seed=8,
                              policies=Policies(trust_payloads=True), restore=first["ex"].checkpoints[-1])
    restored.run(until=Breakpoint(kind="lookup", seq=1, action="WA"))     # WB ran and queued XA behind WA
    job = {"agent": agent, "ex": restored, "marker": restored.checkpoint(), "log": restored.to_log()}
    held = restored.checkpoints[-1].pending
    assert [a for _, _, a, _ in held] == ["WA", "XA"]
    plan = ReplayPlan.from_log(job["log"], markers=[job["marker"]])
    assert [(p.action, p.event.id) for p in plan.pending] == [(a, e.id) for _, _, a, e in held]
    assert not [n for n in plan.notes if "last suspended" in n]          # XA was routed after WA's last write

    looked, calls, again = _restore(job, restore=restored.checkpoints[-1])
    assert looked == [(1, "WA", "RESUME"), (1, "XA", "RERUN"), (1, "IA", "NOT-DISPATCHED"), (1, "WB", "NOT-DISPATCHED")]
    assert _restore(job, markers=[job["marker"]])[:2] == (looked, calls)
    assert _predicted(predict(job["log"], markers=[job["marker"]])) == looked
    r = reconstruct(job["log"], markers=[job["marker"]])
    done = r.records[r.records["outcome"].notna()]
    assert sorted(done["outcome"].astype(str)) == ["NOT-DISPATCHED", "NOT-DISPATCHED", "RESUME"]
    assert {e.state_key for e in r.store.entries() if e.seq == 1 and e.pos is None} == _written_at(again, 1)


def test_a_task_routed_while_the_suspended_one_was_between_writes_is_noted() -> None:
    """As above, but the next checkpoint falls after WA wrote again (its second call): WA's continuation is now behind
    XA. The log does not show when WA last suspended, so the plan orders by its last write and says so."""
    agent = _routing_agent()
    first = _job(agent, Breakpoint(kind="persist", seq=1, action="WA", outcome="call results (1)"))
    restored = ReplayExecutor(first["log"], agent=agent, rule="original", runtime="main", seed=8,
                              policies=Policies(trust_payloads=True), restore=first["ex"].checkpoints[-1])
    restored.run(until=Breakpoint(kind="persist", seq=1, action="WA", outcome="call results (2)"))
    job = {"agent": agent, "ex": restored, "marker": restored.checkpoint(), "log": restored.to_log()}
    held = restored.checkpoints[-1].pending
    assert [a for _, _, a, _ in held] == ["XA", "WA"]
    plan = ReplayPlan.from_log(job["log"], markers=[job["marker"]])
    assert [(p.action, p.event.id) for p in plan.pending] == [(a, e.id) for _, _, a, e in held]
    [note] = [n for n in plan.notes if "last suspended" in n]
    assert note.startswith("round (k, 1): a queued task was routed while an incomplete task had started")
    looked, calls, _ = _restore(job, restore=restored.checkpoints[-1])
    assert looked[:2] == [(1, "XA", "RERUN"), (1, "WA", "RESUME")]
    assert _restore(job, markers=[job["marker"]])[:2] == (looked, calls)
