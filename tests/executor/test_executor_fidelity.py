"""Regressions for spec-fidelity bugs of the replay executor (source kind, prune failures, sub-agent ids)."""

from __future__ import annotations

from pathlib import Path

from agent_inspect.cases import build_case, executor_for, load_cases
from agent_inspect.executor import ReplayExecutor, StepKind

CASES = Path(__file__).resolve().parents[2] / "cases"


def _case(case_id: str):
    return build_case(next(c for c in load_cases(sorted(CASES.glob("*.toml"))) if c.id == case_id))


def _lookups(ex: ReplayExecutor) -> list[tuple[str, str]]:
    return [(s.action, s.outcome) for s in ex.step_list if s.kind is StepKind.LOOKUP]


def test_source_kind_reaches_the_rule():
    # K1 key text with '_': snapshot Kafka's strict parser throws on the miss, snapshot Fluss keeps going
    built = _case("P01/snapshot-kafka-k1")
    runs = {}
    for kind in ("kafka", "fluss"):
        ex = ReplayExecutor(None, agent=built.agent, plan={"inputs": [("tenant_1", "A")], "restored_seq": {}},
                            key_format="K1", rule="original", source_kind=kind)
        ex.run()
        assert ex.session.source_kind == kind
        runs[kind] = (ex.failure, _lookups(ex))
    assert runs["kafka"][0] is not None and ("WA", "FAIL") in runs["kafka"][1]
    assert runs["fluss"][0] is None and all(o != "FAIL" for _, o in runs["fluss"][1])


def test_source_kind_defaults_to_the_logs():
    built = _case("P01/snapshot-kafka-k1")
    ex = ReplayExecutor(built.log, agent=built.agent, plan=built.plan, markers=list(built.markers), rule="original")
    ex.step()
    assert ex.session.source_kind == built.log.source.kind


N01U = '''
id = "N01U"
name = "single-input-single-action"
category = "normal"
summary = "control: one input, one completed record"
replay = ["k:In(A)"]
log = [
  { att = 1, key = "k", seq = 5, action = "IA", event = "In(A)#a1", status = "C" },
]

[agent]
actions = [{ name = "IA", triggers = ["_input_event"] }]

[expect]
original = "A.IA=REUSE"
fixed = "A.IA=REUSE"

[setup]
key_format = "K1"
source = "kafka"

[keys]
k = { text = "t_1" }
'''


def test_a_failing_prune_fails_the_job(tmp_path):
    # snapshot Kafka pruneState throws on key text with '_': notifyCheckpointComplete fails the job (§8.3)
    path = tmp_path / "N01U.toml"
    path.write_text(N01U)
    ex = executor_for(load_cases([path])[0], rule="original")
    ex.run()
    assert ex.failure is None and ex.done
    ex.checkpoint()
    prunes = [s for s in ex.step_list if s.kind is StepKind.PRUNE]
    assert prunes and prunes[-1].outcome == "failed"
    assert ex.failure is not None and "checkpoint" in ex.failure and ex.done
    ex.back()
    assert ex.failure is None


def _caller_agent():
    from agent_inspect.agents import PythonAgent

    agent = PythonAgent()

    @agent.action("P", listens=["_input_event"])
    def P(event, ctx):
        ctx.call_subagent("child", "_input_event", {"input": "one"})
        ctx.call_subagent("other", "_input_event", {"input": "one"})
        ctx.call_subagent("child", "_input_event", {"input": "two"})

    for name in ("child", "other"):
        sub = PythonAgent()

        @sub.action(f"C_{name}", listens=["_input_event"])
        def body(event, ctx):
            ctx.send_event("_output_event", {"output": "ok"})

        agent.subagent(name, sub)
    return agent


def test_subagent_ids_per_handle_and_both_engines_agree_on_every_crash_point():
    from agent_inspect.codec import subagent_namespace_digest
    from agent_inspect.executor import as_plan
    from agent_inspect.log import ActionStateLog
    from agent_inspect.raw import RawBatch
    from agent_inspect.recovery import predict

    agent = _caller_agent()
    plan = {"inputs": [("k", "A")], "restored_seq": {"k": 4}}
    prod = ReplayExecutor(None, agent=agent, plan=plan, rule="fixed", seed=1)
    prod.run()
    log = prod.to_log()
    calls = {(a["targetScope"], a["sessionId"], a["callId"])
             for pos in log.records.index
             for a in [log.value(pos).task_event.attrs()] if "callId" in a}
    digest = {s: subagent_namespace_digest("k", 5, "P", "_input_event", {"input": "A"}, agent_name=s)
              for s in ("child", "other")}
    # spec §11.2: one session per sub-agent handle in the execution, calls count up within it
    assert calls == {("child", f"{digest['child']}-0", f"{digest['child']}-0-1"),
                     ("child", f"{digest['child']}-0", f"{digest['child']}-0-2"),
                     ("other", f"{digest['other']}-1", f"{digest['other']}-1-1")}
    raw = log.raw
    for cut in range(1, len(log.records)):
        batch = RawBatch()
        for i in range(cut):
            batch.append(raw.partition[i], raw.offset[i], raw.timestamp_ms[i], raw.key[i], raw.value[i])
        part = ActionStateLog.from_raw(batch, log.source)
        ex = ReplayExecutor(part, agent=agent, plan=plan, rule="fixed", markers=[{0: 0}], seed=2)
        ex.run()
        got = [(s.action, s.state_key, s.outcome) for s in ex.step_list
               if s.kind in (StepKind.LOOKUP, StepKind.NOT_DISPATCHED)]
        executed = sorted(s.function_id for s in ex.step_list if s.outcome == "execute")
        p = predict(part, plan=as_plan(plan), agent=agent, rule="fixed", markers=[{0: 0}])
        rows = p.tasks
        assert got == list(zip(rows["action"], rows["state_key"], rows["outcome"])), cut
        # a call step that runs is a durable call or a sub-agent call: predict's ledger keeps them as two kinds
        subagent = p.ledger[p.ledger["kind"] == "subagent"]
        sent = [str(n) for n, c in zip(subagent["name"], subagent["count"]) for _ in range(int(c))]
        assert executed == sorted([*p.calls_executed().elements(), *sent]), cut
