"""The replay executor end to end: production chains, sub-agents, back(), breakpoints, isolation, policies."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_inspect.agents._python import PythonAgent
from agent_inspect.executor import (
    ActionPolicy,
    Breakpoint,
    CallPolicy,
    Policies,
    ReplayExecutor,
    StepKind,
    json_envelope_decoder,
)

EXTERNAL: list[str] = []


def ask_llm(q: str) -> str:
    EXTERNAL.append(q)
    return q.upper()


def cascade_agent() -> PythonAgent:
    agent = PythonAgent()

    @agent.action("IA", listens=["_input_event"])
    def ia(event, ctx):
        ctx.short_term.set("seen", event.attributes["input"])
        ctx.send_event("WorkEvent", {"x": event.attributes["input"]})

    @agent.action("WA", listens=["WorkEvent"])
    def wa(event, ctx):
        ans = ctx.durable_execute(ask_llm, event.attributes["x"])
        ctx.sensory.set("scratch", ans)
        ctx.send_event("_output_event", {"output": ans})

    return agent


def subagent_agent() -> PythonAgent:
    child = PythonAgent()

    @child.action("CA", listens=["_input_event"])
    def ca(event, ctx):
        ctx.send_event("_output_event", {"output": ctx.durable_execute(ask_llm, event.attributes["input"])})

    agent = PythonAgent()

    @agent.action("P", listens=["_input_event"])
    def p(event, ctx):
        result = ctx.call_subagent("reviewer", "_input_event", {"input": "review " + event.attributes["input"]})
        ctx.send_event("_output_event", {"output": result})

    agent.subagent("reviewer", child)
    return agent


def outcomes(ex: ReplayExecutor) -> list[tuple[str, str]]:
    st_ = ex.steps
    look = st_[st_["kind"] == "lookup"]
    return list(zip(look["action"], look["outcome"]))


def first_attempt(agent, inputs, *, until=None, **kw):
    """Attempt 1 of a fresh job: checkpoint at the start, then run (optionally until a step, i.e. fail)."""
    ex = ReplayExecutor(agent=agent, plan={"inputs": inputs}, key_format="K1.5", seed=1, **kw)
    ex.step()                                    # the (empty) rebuild
    marker = ex.checkpoint()
    ex.run(until=until)
    return ex, marker


# -- production mode chains ------------------------------------------------------------------------

def test_production_chain_reproduces_1301_and_fixed_reuses():
    agent = cascade_agent()
    ex1, marker = first_attempt(agent, [("k", "a"), ("k", "b")])
    assert marker == {0: 0} and ex1.done and ex1.failure is None
    log = ex1.to_log()
    assert len(log.records) == len(ex1.journal) == 10          # initial+call+completed / initial+completed
    assert log.errors.empty
    plan = {"inputs": [("k", "a"), ("k", "b")]}
    orig = ReplayExecutor(log, agent=agent, plan=plan, markers=[marker], rule="original", seed=2)
    orig.run()
    assert outcomes(orig) == [("IA", "REUSE"), ("WA", "REUSE"), ("IA", "RERUN"), ("WA", "RERUN")]
    assert orig.counters.calls_executed == 1 and orig.counters.entries_evicted == 2
    fixed = ReplayExecutor(log, agent=agent, plan=plan, markers=[marker], rule="fixed", seed=2,
                           memory_decoder=json_envelope_decoder)
    fixed.run()
    assert outcomes(fixed) == [("IA", "REUSE")] * 1 + [("WA", "REUSE"), ("IA", "REUSE"), ("WA", "REUSE")]
    assert fixed.counters.bodies_executed == 0 and fixed.counters.calls_executed == 0
    # reuse applied memory in upstream order and re-emitted outputs downstream
    assert dict(fixed.memory["k"].short_term) == {"seen": "b"}
    assert list(fixed.outputs["attributes"]) == [{"output": "A"}, {"output": "B"}]


def test_resume_serves_recorded_call_and_journal_lifecycle():
    agent = cascade_agent()
    # fail right after WA's durable call was persisted: WA is incomplete with one SUCCEEDED result
    ex1, marker = first_attempt(
        agent, [("k", "a")], until=lambda s: s.kind is StepKind.PERSIST and (s.outcome or "").startswith("call"))
    log = ex1.to_log()
    lifecycle = [(r.seq, bool(r.completed), int(r.call_count)) for r in log.records.itertuples()]
    assert lifecycle == [(0, False, 0), (0, True, 0), (0, False, 0), (0, False, 1)]
    EXTERNAL.clear()
    ex2 = ReplayExecutor(log, agent=agent, plan={"inputs": [("k", "a")]}, markers=[marker], rule="fixed")
    ex2.run()
    assert outcomes(ex2) == [("IA", "REUSE"), ("WA", "RESUME")]
    assert EXTERNAL == [] and ex2.counters.calls_served == 1 and ex2.counters.calls_executed == 0


# -- sub-agents (§11.4) --------------------------------------------------------------------------------

def test_s01_caller_incomplete_child_complete():
    agent = subagent_agent()
    # attempt 1 fails after the child completed but before the caller recorded the call result
    ex1, marker = first_attempt(
        agent, [("k", "a")], until=lambda s: s.kind is StepKind.PERSIST and s.action == "CA"
        and s.outcome == "completed")
    log = ex1.to_log()
    for rule in ("original", "fixed"):
        EXTERNAL.clear()
        ex = ReplayExecutor(log, agent=agent, plan={"inputs": [("k", "a")]}, markers=[marker], rule=rule)
        ex.run()
        assert outcomes(ex) == [("P", "RESUME"), ("CA", "REUSE")], rule
        assert EXTERNAL == []                                  # the child's body did not run again
        assert list(ex.outputs["attributes"]) == [{"output": [{"output": "REVIEW A"}]}]
        boot = [s for s in ex.step_list if s.kind is StepKind.LOOKUP and s.action == "CA"][0]
        first_boot = [s for s in ex1.step_list if s.kind is StepKind.LOOKUP and s.action == "CA"][0]
        assert boot.fingerprint == first_boot.fingerprint and boot.event_id != first_boot.event_id


def test_s02_caller_complete_children_not_dispatched():
    agent = subagent_agent()
    ex1, marker = first_attempt(agent, [("k", "a")])
    ex = ReplayExecutor(ex1.to_log(), agent=agent, plan={"inputs": [("k", "a")]}, markers=[marker])
    ex.run()
    assert outcomes(ex) == [("P", "REUSE")]


def test_s05_two_inputs_child_reexecutes_only_under_original():
    agent = subagent_agent()
    ex1, marker = first_attempt(agent, [("k", "a"), ("k", "b")])
    log = ex1.to_log()
    plan = {"inputs": [("k", "a"), ("k", "b")]}
    orig = ReplayExecutor(log, agent=agent, plan=plan, markers=[marker], rule="original")
    orig.run()
    assert outcomes(orig) == [("P", "REUSE"), ("P", "RERUN"), ("CA", "RERUN")]
    fixed = ReplayExecutor(log, agent=agent, plan=plan, markers=[marker], rule="fixed")
    fixed.run()
    assert outcomes(fixed) == [("P", "REUSE"), ("P", "REUSE")]


def test_restored_child_tasks_are_dropped():
    agent = subagent_agent()
    from agent_inspect.agents._protocol import AgentEvent

    boot = AgentEvent("InternalSubagentCallEvent",
                      {"targetScope": "reviewer", "callId": "s-0-1", "sessionId": "s-0",
                       "delegateType": "_input_event", "delegateAttributes": {"input": "x"}}, "b1")
    ex = ReplayExecutor(agent=agent, key_format="K1.5",
                        plan={"pending": [("k", 3, "CA", boot)], "restored_seq": {"k": 3}})
    ex.run()
    assert outcomes(ex) == [("CA", "NOT-DISPATCHED")]


# -- control: back(), breakpoints ----------------------------------------------------------------------

def _state(ex: ReplayExecutor):
    return (ex.steps.to_dict("records"), ex.cache.to_dict("records"),
            {k: (dict(v.short_term), dict(v.sensory)) for k, v in ex.memory.items()},
            ex.counters, [bytes(v) for v in ex.journal.value], ex.outputs.to_dict("records"))


@settings(deadline=None, max_examples=12)
@given(n=st.integers(min_value=1, max_value=40))
def test_back_returns_exactly_the_previous_state(n):
    agent = cascade_agent()
    ex = ReplayExecutor(agent=agent, plan={"inputs": [("k", "a"), ("k", "b"), ("j", "c")]}, key_format="K1.5",
                        seed=7)
    for _ in range(n):
        ex.step()
    before = _state(ex)
    EXTERNAL.clear()
    if ex.step() is not None:
        ex.back()
        assert _state(ex) == before
    assert EXTERNAL in ([], ["a"], ["b"], ["c"])                    # at most the one new step's call ran
    executed = len(EXTERNAL)
    ex.back()
    ex.step()
    assert len(EXTERNAL) == executed                                 # memoised: not called again


def test_breakpoints_stop_where_they_should():
    agent = cascade_agent()
    ex = ReplayExecutor(agent=agent, plan={"inputs": [("k", "a"), ("j", "b"), ("k", "c")]}, key_format="K1.5")
    ex.add_breakpoint(key="k", seq=1, action="WA", kind="lookup")
    s = ex.run()
    assert (s.kind, s.key, s.seq, s.action) == (StepKind.LOOKUP, "k", 1, "WA")
    assert ex.current is s
    s = ex.run(until=Breakpoint(kind=StepKind.ROUND_COMPLETE))
    assert s.kind is StepKind.ROUND_COMPLETE and s.key == "k" and s.seq == 1
    ex.breakpoints.clear()
    s = ex.run(until=Breakpoint(outcome="execute"))
    assert s is None and ex.done                                     # no more calls after the last round
    ex.reset()
    s = ex.run(until=Breakpoint(outcome="EXECUTE", key="j"))
    assert s.function_id.endswith("ask_llm") and s.key == "j"
    assert ex.run(until=lambda st_: st_.kind is StepKind.PERSIST and st_.outcome == "completed").action == "WA"


# -- isolation -------------------------------------------------------------------------------------------

def test_replay_never_writes_to_the_loaded_log_or_uses_a_client(monkeypatch):
    import confluent_kafka
    import confluent_kafka.admin

    import agent_inspect.log as loaders
    import agent_inspect.sources as sources

    def forbidden(*a, **k):
        raise AssertionError("the executor must not create a source client")

    for name in ("Consumer", "Producer"):
        monkeypatch.setattr(confluent_kafka, name, forbidden)
    monkeypatch.setattr(confluent_kafka.admin, "AdminClient", forbidden)
    for name in ("load", "load_kafka", "load_fluss", "load_file"):
        monkeypatch.setattr(loaders, name, forbidden)
    for name in ("read_file", "open_kafka", "read_partitions", "read_fluss"):
        monkeypatch.setattr(sources, name, forbidden)
    agent = cascade_agent()
    ex1, marker = first_attempt(agent, [("k", "a"), ("k", "b")])
    log = ex1.to_log()
    raw_before = (list(log.raw.key), list(log.raw.value), list(log.raw.offset))
    frame_before = log.records.copy(deep=True)
    values_before = [log.value(i) for i in range(len(log.records))]
    for rule in ("original", "fixed"):
        ex = ReplayExecutor(log, agent=agent, plan={"inputs": [("k", "z"), ("k", "b")]}, markers=[marker],
                            rule=rule, policies=Policies(actions={"IA": "force-rerun"}))
        ex.run()
        assert ex.counters.writes > 0
    assert (list(log.raw.key), list(log.raw.value), list(log.raw.offset)) == raw_before
    assert log.records.equals(frame_before)
    assert [log.value(i) for i in range(len(log.records))] == values_before


def test_memory_base_is_copy_on_write():
    base = {"k": {"user.tier": "gold"}}
    agent = cascade_agent()
    ex = ReplayExecutor(agent=agent, plan={"inputs": [("k", "a")]}, key_format="K1.5", memory=base)
    ex.step()
    snap = ex.memory["k"].short_term
    ex.run()
    assert base == {"k": {"user.tier": "gold"}}
    assert dict(snap) == {"user.tier": "gold"}
    assert dict(ex.memory["k"].short_term) == {"user.tier": "gold", "seen": "a"}


# -- dry-run policies and the safety report ---------------------------------------------------------------

def _prod_log():
    agent = cascade_agent()
    ex1, marker = first_attempt(agent, [("k", "a")])
    return agent, ex1.to_log(), marker


def test_force_rerun_with_recorded_and_deny_policies():
    agent, log, marker = _prod_log()
    plan = {"inputs": [("k", "a")]}
    EXTERNAL.clear()
    ex = ReplayExecutor(log, agent=agent, plan=plan, markers=[marker],
                        policies=Policies(actions={"WA": ActionPolicy.FORCE_RERUN}, calls="deny"))
    ex.run()
    assert ex.failure and "denied" in ex.failure and "ask_llm" in ex.failure
    assert EXTERNAL == [] and ex.counters.calls_denied == 1 and ex.current.outcome == "deny"
    report = ex.report()
    assert not report.frame.loc[report.frame["action"] == "WA", "safe"].item()
    ex = ReplayExecutor(log, agent=agent, plan=plan, markers=[marker],
                        policies=Policies(actions={"WA": "force-rerun"}, calls=CallPolicy.STUB,
                                          stubs={"*": "stubbed"}))
    ex.run()
    assert ex.failure is None and ex.counters.calls_stubbed == 1
    assert list(ex.outputs["attributes"])[-1] == {"output": "stubbed"}


def test_diff_policy_compares_with_production():
    agent, log, marker = _prod_log()
    changed = PythonAgent()

    @changed.action("IA", listens=["_input_event"], module=__name__, qualname="cascade_agent.<locals>.ia")
    def ia(event, ctx):
        ctx.short_term.set("seen", event.attributes["input"])
        ctx.send_event("WorkEvent", {"x": event.attributes["input"] + "!"})   # changed logic

    @changed.action("WA", listens=["WorkEvent"], module=__name__, qualname="cascade_agent.<locals>.wa")
    def wa(event, ctx):
        ctx.send_event("_output_event", {"output": "x"})

    ex = ReplayExecutor(log, agent=changed, plan={"inputs": [("k", "a")]}, markers=[marker],
                        policies=Policies(default_action="diff", calls="stub", stubs={"*": None}))
    ex.run()
    diffs = [s for s in ex.step_list if (s.outcome or "").startswith("diff")]
    assert [s.outcome for s in diffs] == ["diff-changed", "diff-changed"]
    assert ex.counters.shadow_runs == 2 and ex.counters.bodies_executed == 0
    report = ex.report()
    assert not report.frame["safe"].any()


def test_stale_logic_and_report_html_is_escaped():
    from agent_inspect.agents._protocol import AgentEvent

    agent = cascade_agent()
    probe = "<img src=x onerror=alert(1)>"
    ex = ReplayExecutor(agent=agent, key_format="K1.5", plan={
        "pending": [("k", 3, "Old" + probe, AgentEvent("WorkEvent", {"x": probe}, "w1"))],
        "restored_seq": {"k": 3}, "inputs": [("k", probe)]})
    ex.run()
    rep = ex.report()
    row = rep.frame.iloc[0]
    assert row["stale_logic"] and row["restored_in_flight"] and row["outcome"] == "NOT-DISPATCHED"
    html = rep._repr_html_() + ex._repr_html_()
    assert probe not in html and "&lt;img" in html


def test_a_dropped_restored_task_is_counted_as_dropped_not_as_a_task_looked_up():
    from agent_inspect.agents._protocol import AgentEvent

    ex = ReplayExecutor(agent=cascade_agent(), key_format="K1.5", plan={
        "pending": [("k", 3, "Old", AgentEvent("WorkEvent", {"x": 1}, "w1"))], "restored_seq": {"k": 3},
        "inputs": [("k", "a")]})
    ex.run()
    c = ex.counters
    assert c.dropped == 1 == ex.counters_for("k").dropped
    assert c.tasks == c.reused + c.resumed + c.rerun + c.failed > 0


# -- production mode: lifecycle, checkpoints, failures ----------------------------------------------------

def test_journal_follows_the_record_lifecycle_for_reconcilable_calls():
    agent = PythonAgent()

    def post(x):
        return f"posted {x}"

    @agent.action("act", listens=["_input_event"])
    def act(event, ctx):
        ctx.durable_execute(ask_llm, "q")
        ctx.durable_execute(post, event.attributes["input"], reconciler=lambda: "reconciled")
        ctx.send_event("_output_event", {"output": 1})

    ex = ReplayExecutor(agent=agent, plan={"inputs": [("k", "a")]}, key_format="K1", num_partitions=4)
    ex.run()
    log = ex.to_log()
    states = [log.value(i) for i in range(len(log.records))]
    shape = [(s.completed, tuple(c.status for c in s.call_results)) for s in states]
    assert shape == [(False, ()), (False, ("SUCCEEDED",)), (False, ("SUCCEEDED", "PENDING")),
                     (False, ("SUCCEEDED", "SUCCEEDED")), (True, ())]
    assert set(log.records["partition"]) == {ex.journal.partition[0]}           # one key, one partition
    assert list(log.records["offset"]) == [0, 1, 2, 3, 4]
    assert states[-1].output_events[0].upstream_action_name == "act"


def test_checkpoint_prunes_finished_rounds_and_fail_after_stops_the_job():
    agent = cascade_agent()
    # the spec's model (0.3): nothing is kept across the checkpoint (0.4+ refresh rows: test_executor_refresh)
    ex = ReplayExecutor(agent=agent, plan={"inputs": [("k", "a"), ("k", "b")]}, key_format="K1.5", fail_after=20,
                        runtime="0.3")
    ex.run(until=Breakpoint(kind="round-complete"))
    assert len(ex.store) == 2
    marker = ex.checkpoint()
    assert marker == {0: 5}
    prune = ex.current
    assert prune.kind is StepKind.PRUNE and prune.detail["removed"] == 2 and len(ex.store) == 0
    assert ex.run() is None and ex.done and "after step 20" in ex.failure
    assert len(ex.step_list) == 20
    restored = ReplayExecutor(ex.to_log(), agent=agent, markers=[marker], rule="fixed",
                              plan={"inputs": [("k", "b")], "restored_seq": {"k": 0}})
    restored.run()
    assert outcomes(restored) == [("IA", "REUSE"), ("WA", "RESUME")]    # WA failed mid-body in attempt 1


def test_built_from_a_reconstruction_uses_its_rule_and_markers():
    from agent_inspect.recovery import reconstruct

    agent = cascade_agent()
    ex1, marker = first_attempt(agent, [("k", "a"), ("k", "b")])
    result = reconstruct(ex1.to_log(), rule="original", markers=[marker])
    ex = ReplayExecutor(result, agent=agent, plan={"inputs": [("k", "a"), ("k", "b")]})
    ex.run()
    assert outcomes(ex) == [("IA", "REUSE"), ("WA", "REUSE"), ("IA", "RERUN"), ("WA", "RERUN")]


def test_public_names():
    import agent_inspect
    import agent_inspect.executor as executor

    assert {"ReplayExecutor", "Step", "StepKind", "Breakpoint", "Policies", "ActionPolicy", "CallPolicy",
            "ReplaySafetyReport", "Counters"} <= set(executor.__all__)
    assert agent_inspect.ReplayExecutor is executor.ReplayExecutor
    assert {k.value for k in StepKind} == {"rebuild", "lookup", "eviction", "invalidation", "reuse", "resume",
                                           "rerun", "persist", "round-complete", "prune", "not-dispatched"}
    from agent_inspect.agents import PythonAgent as exported

    assert exported is PythonAgent


def test_stale_records_and_as_recorded_default_agent():
    agent, log, marker = _prod_log()
    renamed = PythonAgent()

    @renamed.action("IA", listens=["_input_event"], module="elsewhere")     # K1.5: module is identity
    def ia(event, ctx):
        ctx.send_event("WorkEvent", {"x": event.attributes["input"]})

    @renamed.action("WA", listens=["WorkEvent"], module=__name__, qualname="cascade_agent.<locals>.wa")
    def wa(event, ctx):
        ctx.send_event("_output_event", {"output": "A"})

    ex = ReplayExecutor(log, agent=renamed, plan={"inputs": [("k", "a")]}, markers=[marker], policies={"calls": "deny"})
    ex.run()
    stale = ex.report().stale_records
    assert len(stale) == 1 and outcomes(ex)[0] == ("IA", "RERUN")
    recorded = ReplayExecutor(log, plan={"inputs": [("k", "a")]}, markers=[marker])
    recorded.run()
    assert outcomes(recorded) == [("IA", "REUSE"), ("WA", "REUSE")]


def test_mid_round_checkpoint_restores_pending_tasks_memory_and_seq():
    agent = cascade_agent()
    inputs = [("k", "a"), ("k", "b")]
    ex1 = ReplayExecutor(agent=agent, plan={"inputs": inputs}, key_format="K1.5", seed=3)
    ex1.run(until=Breakpoint(kind="lookup", action="WA"))
    ex1.checkpoint()                                          # mid-round: WA(a) is in flight
    ex1.run(until=lambda s: s.kind is StepKind.PERSIST and s.action == "IA" and s.seq == 1
            and s.outcome == "completed")                     # ...then the job dies before WA(b)
    cp = ex1.checkpoints[-1]
    assert cp.restored_seq == {"k": 0} and cp.inputs_consumed == 1 and cp.short_term == {"k": {"seen": "a"}}
    assert [(k, s, a, e.type) for k, s, a, e in cp.pending] == [("k", 0, "WA", "WorkEvent")]
    wa_id = cp.pending[0][3].id
    EXTERNAL.clear()
    ex2 = ReplayExecutor(ex1.to_log(), agent=agent, restore=cp, rule="fixed",
                         plan={"inputs": inputs[cp.inputs_consumed:]})
    ex2.run()
    assert outcomes(ex2) == [("WA", "REUSE"), ("IA", "REUSE"), ("WA", "RERUN")]
    assert ex2.step_list[1].event_id == wa_id                 # the restored task keeps its original id
    assert EXTERNAL == ["b"]
    assert ex2.report().frame["restored_in_flight"].tolist() == [True, False, False]


def test_back_over_a_checkpoint_replays_driver_actions():
    agent = cascade_agent()
    ex = ReplayExecutor(agent=agent, plan={"inputs": [("k", "a"), ("k", "b")]}, key_format="K1.5", seed=5)
    ex.run(until=Breakpoint(kind="round-complete"))
    ex.checkpoint()
    ex.step()
    ex.step()
    before = _state(ex)
    n_checkpoints = len(ex.checkpoints)
    ex.step()
    ex.back()
    assert _state(ex) == before and len(ex.checkpoints) == n_checkpoints
    ex.back()
    ex.back()
    assert ex.current.kind is StepKind.PRUNE and len(ex.checkpoints) == 1
    ex.back()                                       # back over the PRUNE step: before the checkpoint
    assert ex.current.kind is StepKind.ROUND_COMPLETE and ex.checkpoints == []


def test_subagent_ids_follow_the_spec_example():
    """§11.2 / Example E: key user-42, seq 7, caller on {"input":"hello"}, sub-agent reviewer."""
    child = PythonAgent()

    @child.action("review", listens=["_input_event"])
    def review(event, ctx):
        ctx.send_event("_output_event", {"output": "LGTM"})

    agent = PythonAgent()

    @agent.action("caller", listens=["_input_event"])
    def caller(event, ctx):
        ctx.send_event("_output_event", {"output": ctx.call_subagent("reviewer", "_input_event",
                                                                     {"input": "review this diff"})})

    agent.subagent("reviewer", child)
    ex = ReplayExecutor(agent=agent, key_format="K1.5",
                        plan={"inputs": [("user-42", "hello")], "restored_seq": {"user-42": 6}})
    ex.run()
    digest = "2def7c78-fd9b-3b6b-86fe-9cc1a5e10e0e"
    call = next(s for s in ex.step_list if s.function_id)
    assert call.function_id == f"{digest}-0#{digest}-0-1" and call.seq == 7
    boot = next(s for s in ex.step_list if s.kind is StepKind.LOOKUP and s.action == "review")
    assert boot.fingerprint == "18345cf7-092b-3fe4-a44f-023ccdf2b7d9"
    assert list(ex.outputs["attributes"]) == [{"output": [{"output": "LGTM"}]}]


@pytest.mark.parametrize("key_format", ["K1", "K1.5", "K1.6", "K2"])
@pytest.mark.parametrize("value_format", ["V2a", "V3"])
def test_production_chain_in_every_key_and_value_format(key_format, value_format):
    agent = cascade_agent()
    inputs = [("user-1", "a"), ("user-1", "b")]
    ex1 = ReplayExecutor(agent=agent, plan={"inputs": inputs}, key_format=key_format, value_format=value_format,
                         seed=1)
    ex1.step()
    marker = ex1.checkpoint()
    ex1.run()
    log = ex1.to_log()
    assert log.errors.empty and set(log.records["key_format"]) == {key_format}
    assert set(log.records["value_format"]) <= {value_format, "V2a", "V2b", "V3"}
    for rule, want in (("original", ["REUSE", "REUSE", "RERUN", "RERUN"]), ("fixed", ["REUSE"] * 4)):
        ex = ReplayExecutor(log, agent=agent, plan={"inputs": inputs}, markers=[marker], rule=rule,
                            memory_decoder=json_envelope_decoder)
        ex.run()
        assert [o for _, o in outcomes(ex)] == want, rule
        (bk,) = set(log.records["business_key"])
        assert dict(ex.memory[bk].short_term) == {"seen": "b"}


def test_stepping_from_another_thread_continues_exactly():
    import threading

    agent = cascade_agent()
    ex = ReplayExecutor(agent=agent, plan={"inputs": [("k", "a"), ("k", "b")]}, key_format="K1.5", seed=9)
    for _ in range(5):
        ex.step()
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("step", ex.step()))
    t.start()
    t.join()
    ref = ReplayExecutor(agent=agent, plan={"inputs": [("k", "a"), ("k", "b")]}, key_format="K1.5", seed=9)
    for _ in range(6):
        ref.step()
    assert result["step"] == ref.current and ex.steps.equals(ref.steps)
    ex.run()
    assert ex.done and ex.failure is None


def test_async_bodies_record_awaited_calls_only():
    agent = PythonAgent()

    @agent.action("act", listens=["_input_event"])
    async def act(event, ctx):
        never = ctx.durable_execute_async(ask_llm, "never awaited")   # leaves no trace (§9.4)
        answer = await ctx.durable_execute_async(ask_llm, event.attributes["input"])
        ctx.send_event("_output_event", {"output": answer})
        del never

    EXTERNAL.clear()
    ex = ReplayExecutor(agent=agent, plan={"inputs": [("k", "a")]}, key_format="K1.5")
    ex.run()
    assert EXTERNAL == ["a"] and ex.counters.calls_executed == 1
    assert list(ex.outputs["attributes"]) == [{"output": "A"}]


def test_fluss_journal_carries_agent_keys_and_restores():
    agent = cascade_agent()
    inputs = [("user-1", "a"), ("user-1", "b")]
    ex1 = ReplayExecutor(agent=agent, plan={"inputs": inputs}, key_format="K1.5", source_kind="fluss",
                         num_partitions=4, seed=1)
    ex1.step()
    marker = ex1.checkpoint()
    ex1.run()
    assert set(ex1.journal.agent_key) == {"user-1"}
    log = ex1.to_log()
    assert log.source.kind == "fluss" and log.errors.empty
    ex = ReplayExecutor(log, agent=agent, plan={"inputs": inputs}, markers=[marker], rule="original")
    ex.run()
    assert [o for _, o in outcomes(ex)] == ["REUSE", "REUSE", "RERUN", "RERUN"]
