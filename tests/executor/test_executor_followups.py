"""Executor follow-ups: a checkpoint holds the operator's full keyed state; K2 restore checks."""

from __future__ import annotations

import pytest

from agent_inspect import codec
from agent_inspect._errors import ReplayError
from agent_inspect.agents._python import PythonAgent
from agent_inspect.executor import ReplayExecutor, StepKind, as_plan
from agent_inspect.recovery import predict


def memo_agent() -> PythonAgent:
    agent = PythonAgent()

    @agent.action("IA", listens=["_input_event"])
    def ia(event, ctx):
        ctx.short_term.set("last", event.attributes["input"])
        ctx.send_event("_output_event", {"output": ctx.short_term.get("note")})

    return agent


def _rounds(ex: ReplayExecutor) -> list[tuple[str, int]]:
    return [(s.key, s.seq) for s in ex.step_list if s.kind is StepKind.ROUND_COMPLETE]


@pytest.mark.parametrize("key_format", ["K1.5", "K2"])
def test_checkpoint_keeps_keys_without_a_round_in_the_attempt(key_format):
    agent = memo_agent()
    bk = (lambda k: codec.string_key_digest(k)) if key_format == "K2" else (lambda k: k)
    ex1 = ReplayExecutor(agent=agent, key_format=key_format, seed=1,
                         plan={"inputs": [("k", "a")], "restored_seq": {"j": 7, "k": 0}},
                         memory={"j": {"note": "kept"}}, sensory={"j": {"scratch": 1}})
    ex1.run()
    ex1.checkpoint()
    cp = ex1.checkpoints[-1]
    assert dict(cp.restored_seq) == {bk("j"): 7, bk("k"): 1}
    assert dict(cp.short_term[bk("j")]) == {"note": "kept"} and dict(cp.sensory[bk("j")]) == {"scratch": 1}
    assert dict(cp.short_term[bk("k")]) == {"last": "a"}
    # a key's text finds its memory on a digest-keyed (K2) checkpoint too, as ex.memory does
    assert dict(cp.short_term["j"]) == {"note": "kept"} and dict(cp.sensory["j"]) == {"scratch": 1}
    assert "k" in cp.short_term and list(cp.short_term) == list(ex1.memory) and "other" not in cp.sensory

    # restoring from it: j continues at seq 8 with its memory, k at seq 2
    ex2 = ReplayExecutor(ex1.to_log(), agent=agent, restore=cp, rule="fixed", seed=2,
                         plan={"inputs": [("j", "b"), ("k", "c")]})
    ex2.run()
    assert ex2.failure is None
    assert _rounds(ex2) == [(bk("j"), 8), (bk("k"), 2)]
    assert ex2.outputs["attributes"].tolist()[0] == {"output": "kept"}
    assert dict(ex2.memory[bk("j")].short_term) == {"note": "kept", "last": "b"}


def test_a_checkpoint_after_a_restore_prunes_every_key_with_a_finished_round():
    """lastCompletedSequenceNumber is keyed state, collected for all keys at snapshot (spec §9.1, §8.4)."""
    agent = memo_agent()
    ex1 = ReplayExecutor(agent=agent, key_format="K1.5", seed=1, plan={"inputs": [("j", "a"), ("k", "b")]})
    ex1.run()
    ex1.checkpoint()
    cp = ex1.checkpoints[-1]
    assert dict(cp.last_completed) == {"j": 0, "k": 0}

    # the next attempt only runs k; its completed checkpoint still prunes j's finished round
    ex2 = ReplayExecutor(ex1.to_log(), agent=agent, restore=cp, rule="fixed", seed=2, plan={"inputs": [("k", "c")]})
    ex2.run()
    ex2.checkpoint(complete=True)
    assert dict(ex2.checkpoints[-1].last_completed) == {"j": 0, "k": 1}
    assert sorted((s.key, s.seq) for s in ex2.step_list if s.kind is StepKind.PRUNE) == [("j", 0), ("k", 1)]


@pytest.mark.parametrize("tombstones", [False, True])
def test_prune_tombstones_make_a_checkpoint_older_than_the_prune_rerun(tombstones):
    """kafkaActionStateTombstoneEnabled (#885, spec §6.6): a completed checkpoint's prunes are journaled as
    tombstones, so a restore from an older checkpoint no longer finds the pruned rounds."""
    agent = memo_agent()
    ex1 = ReplayExecutor(agent=agent, key_format="K1.5", seed=1, plan={"inputs": [("k", "a")]},
                         prune_tombstones=tombstones)
    before = ex1.checkpoint()                 # nothing read yet: its marker is the topic's start
    ex1.run()
    ex1.checkpoint(complete=True)
    journal = ex1.journal
    written = [k for k, v in zip(journal.key, journal.value) if v is not None]
    graves = [k for k, v in zip(journal.key, journal.value) if v is None]
    assert graves == ([written[-1]] if tombstones else [])
    prune = [s for s in ex1.step_list if s.kind is StepKind.PRUNE]
    assert [(s.key, s.seq, s.detail["tombstones"]) for s in prune] == [("k", 0, 1 if tombstones else 0)]

    ex2 = ReplayExecutor(ex1.to_log(), agent=agent, markers=[before], rule="fixed", seed=2,
                         plan={"inputs": [("k", "a")]})
    ex2.run()
    lookups = [s.outcome for s in ex2.step_list if s.kind is StepKind.LOOKUP]
    assert lookups == (["RERUN"] if tombstones else ["REUSE"])


def test_prune_tombstones_are_a_kafka_setting(tmp_path):
    with pytest.raises(ReplayError, match="Kafka"):
        ReplayExecutor(agent=memo_agent(), source_kind="fluss", plan={"inputs": [("k", "a")]}, prune_tombstones=True)
    # a dump of a Kafka topic is a Kafka store's log: the option applies
    ex = ReplayExecutor(agent=memo_agent(), key_format="K1.5", seed=1, plan={"inputs": [("k", "a")]})
    ex.run()
    from agent_inspect.log import load_file
    from agent_inspect.sources import write_jsonl

    dumped = load_file(write_jsonl(ex.to_log(), tmp_path / "topic.jsonl"))
    assert dumped.source.kind == "file"
    ReplayExecutor(dumped, agent=memo_agent(), plan={"inputs": [("k", "b")]}, prune_tombstones=True)


# -- K2 restore checks: the job's serializer fingerprint and max parallelism (spec §6.5) ------------------

def _k2_log():
    agent = memo_agent()
    ex = ReplayExecutor(agent=agent, key_format="K2", seed=3, plan={"inputs": [("k", "a"), ("j", "b")]})
    ex.run()
    log = ex.to_log()
    return agent, log, int(log.records["key_group"].max())


@pytest.mark.parametrize("option", ["expected_fingerprint", "max_parallelism"])
def test_k2_restore_checks_fail_the_executor_and_the_prediction(option):
    agent, log, top_group = _k2_log()
    k, j = codec.string_key_digest("k"), codec.string_key_digest("j")     # K2 logs name keys by digest
    plan = {"inputs": [(k, "c")], "restored_seq": {k: 0, j: 0}}
    bad, good = {"expected_fingerprint": ("B" * 43 + "=", "A" * 43 + "="),
                 "max_parallelism": (top_group, top_group + 1)}[option]
    for value, fails in ((bad, True), (good, False), (None, False)):
        ex = ReplayExecutor(log, agent=agent, plan=plan, rule="fixed", **{option: value})
        ex.run()
        assert (ex.failure is not None) == fails, (value, ex.failure)
        assert ex.step_list[0].outcome == ("restore-failed" if fails else "rebuilt")
        if fails:
            assert "fingerprint" in ex.failure if option == "expected_fingerprint" else "key-group" in ex.failure
        pred = predict(log, plan=as_plan(plan), agent=agent, rule="fixed", **{option: value})
        assert pred.crashed == fails
        assert [d.kind for d in pred.divergences if d.kind == "restore-failure"] == (["restore-failure"] if fails
                                                                                    else [])


# -- NOT-DISPATCHED: cached records of replayed rounds that no task looked up (parity with predict) --------

def subagent_agent() -> PythonAgent:
    child = PythonAgent()

    @child.action("CA", listens=["_input_event"])
    def ca(event, ctx):
        ctx.send_event("_output_event", {"output": event.attributes["input"]})

    agent = PythonAgent()

    @agent.action("P", listens=["_input_event"])
    def p(event, ctx):
        ctx.send_event("_output_event", {"output": ctx.call_subagent("reviewer", "_input_event", {"input": "x"})})

    agent.subagent("reviewer", child)
    return agent


def test_s02_children_of_a_reused_caller_are_listed_not_dispatched():
    agent = subagent_agent()
    ex1 = ReplayExecutor(agent=agent, plan={"inputs": [("k", "a")]}, key_format="K1.5", seed=1)
    ex1.step()
    marker = ex1.checkpoint()
    ex1.run()
    log = ex1.to_log()
    ex = ReplayExecutor(log, agent=agent, plan={"inputs": [("k", "a")]}, markers=[marker], seed=2)
    ex.run()
    nd = [s for s in ex.step_list if s.kind is StepKind.NOT_DISPATCHED]
    assert [(s.key, s.seq, s.action, s.outcome) for s in nd] == [("k", 0, "CA", "NOT-DISPATCHED")]
    assert nd[0].detail["pos"] is not None and log.records.loc[nd[0].detail["pos"], "state_key"] == nd[0].state_key
    assert ex.counters.tasks == 1                        # a cached record is not a task
    assert ex.steps["kind"].iloc[-1] == "not-dispatched"
    pred = predict(log, plan=as_plan({"inputs": [("k", "a")]}), agent=agent, markers=[marker])
    rows = pred.tasks[pred.tasks["outcome"] == "NOT-DISPATCHED"]
    assert [(s.key, s.seq, s.action, s.state_key) for s in nd] == \
        list(zip(rows["business_key"], rows["seq"].astype(int), rows["action"], rows["state_key"]))


# -- production-mode journal timestamps --------------------------------------------------------------------

def _persist_steps(ex: ReplayExecutor) -> list[int]:
    return [s.index for s in ex.step_list if s.kind is StepKind.PERSIST]


def test_journal_timestamps_default_none_base_time_or_clock():
    import datetime as dt

    agent = memo_agent()
    plan = {"inputs": [("k", "a"), ("j", "b")]}
    plain = ReplayExecutor(agent=agent, key_format="K1.5", seed=4, plan=plan)
    plain.run()
    assert plain.journal.timestamp_ms == [None] * len(plain.journal)

    base = 1_700_000_000_000
    for clock in (base, dt.datetime.fromtimestamp(base / 1000, tz=dt.UTC)):
        ex = ReplayExecutor(agent=agent, key_format="K1.5", seed=4, plan=plan, clock=clock)
        ex.run()
        assert ex.journal.timestamp_ms == [base + i for i in _persist_steps(ex)]
        assert ex.journal.value == plain.journal.value and ex.journal.key == plain.journal.key
        stamps = ex.to_log().records["timestamp"]
        assert str(stamps.dt.tz) == "UTC" and stamps.is_monotonic_increasing
        assert int(stamps.iloc[0].value // 1_000_000) == base + _persist_steps(ex)[0]

    seen = []

    def latency(i, step):
        seen.append(step.kind)
        return base + 1000 * i + (400 if step.outcome == "completed" else 0)

    ex = ReplayExecutor(agent=agent, key_format="K1.5", seed=4, plan=plan, clock=latency)
    ex.run()
    assert ex.journal.timestamp_ms == [base, base + 1400, base + 2000, base + 3400]
    assert set(seen) == {StepKind.PERSIST}


def test_a_plan_restored_from_a_checkpoint_keeps_its_notes():
    # restoring merged the checkpoint's seqNums and pending tasks into a new plan and dropped what the plan noted
    from agent_inspect.recovery import ReplayPlan

    agent = memo_agent()
    ex1 = ReplayExecutor(agent=agent, key_format="K1.5", seed=1, plan={"inputs": [("j", "a")]})
    ex1.run()
    ex1.checkpoint()
    given = as_plan({"inputs": [("j", "b")]})
    given = ReplayPlan(inputs=given.inputs, begin_event=True, attempt=7,
                       notes=("the log cannot tell which input came first",))
    ex2 = ReplayExecutor(ex1.to_log(), agent=agent, restore=ex1.checkpoints[-1], seed=2, plan=given)
    plan = ex2._engine.plan
    assert plan.notes == given.notes and plan.begin_event and plan.attempt == 7
    assert dict(plan.restored_seq) == {"j": 0} and plan.inputs == given.inputs


def test_a_restore_without_a_plan_replays_the_log_s_window_as_the_markers_alone_do():
    # restore= without plan= started from an empty plan: the inputs the log holds after the checkpoint were dropped
    agent = memo_agent()
    ex1 = ReplayExecutor(agent=agent, key_format="K1.5", seed=1,
                         plan={"inputs": [("k", "a"), ("k", "b"), ("j", "c")]})
    while not any(s.kind is StepKind.ROUND_COMPLETE for s in ex1.step_list):
        ex1.step()
    ex1.checkpoint()                       # after k's first round: k's second and j's first come after it
    cp = ex1.checkpoints[-1]
    ex1.run()
    log = ex1.to_log()
    restored = ReplayExecutor(log, agent=agent, restore=cp, seed=2)
    restored.run()
    inferred = ReplayExecutor(log, agent=agent, markers=[cp.marker], seed=2)
    inferred.run()
    assert _rounds(restored) == _rounds(inferred) == [("k", 1), ("j", 0)]
    assert restored._engine.plan.inputs == inferred._engine.plan.inputs
    assert dict(restored._engine.plan.restored_seq)["k"] == dict(cp.restored_seq)["k"] == 0
