"""Every case file, run through the replay executor: outcomes equal the expected ones and the static
prediction (same Store and rules, independent dispatch loop); D cases through real records."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_inspect import codec
from agent_inspect.agents._protocol import AgentEvent
from agent_inspect.cases import executor_for
from agent_inspect.cases._build import build_case, call_result
from agent_inspect.cases._format import load_cases
from agent_inspect.executor import ReplayExecutor, StepKind
from agent_inspect.recovery._plan import KeyIdentity, ReplayInput, ReplayPlan
from agent_inspect.recovery._predict import predict

CASES = sorted((Path(__file__).resolve().parents[2] / "cases").glob("*.toml"))
ALL = load_cases(CASES)
HISTORIES = [(c, r) for c in ALL if c.call_case is None for r in c.rules]
CALL_CASES = [c for c in ALL if c.call_case is not None]


def test_the_case_matrix_is_there():
    ids = {c.id.split("/")[0] for c in ALL}
    assert {"N04", "G01", "G09", "S01", "S05", "D01", "D06"} <= ids


def _dispatched(ex: ReplayExecutor) -> list[tuple[int, str, str]]:
    return [(s.seq, s.action, s.outcome) for s in ex.step_list
            if s.kind is StepKind.LOOKUP and s.outcome != "NOT-DISPATCHED"]


@pytest.mark.parametrize("case,rule", HISTORIES, ids=[f"{c.id}-{r}" for c, r in HISTORIES])
def test_executor_agrees_with_expectation_and_prediction(case, rule):
    built = build_case(case)
    runtime = dict(runtime=case.setup.runtime, kafka_pending=case.setup.kafka_pending)
    ex = ReplayExecutor(built.log, agent=built.agent, plan=built.plan, markers=list(built.markers), rule=rule,
                        **runtime)
    ex.run()
    got = _dispatched(ex)
    expected = case.expect[rule]
    want = [(i.action, i.outcome) for i in expected.items if i.outcome != "NOT-DISPATCHED"]
    assert [(a, o) for _, a, o in got] == want, f"executor {got} vs expected {expected.text}"
    assert (ex.failure is not None) == expected.crash
    pred = predict(built.log, plan=built.plan, agent=built.agent, rule=rule, markers=list(built.markers), **runtime)
    tasks = pred.tasks[pred.tasks["outcome"] != "NOT-DISPATCHED"]
    assert got == [(int(s), a, o) for s, a, o in zip(tasks["seq"], tasks["action"], tasks["outcome"])]
    # cached records no task looked up: the same as the prediction's, and every one the case expects
    nd = [(s.seq, s.action, s.state_key) for s in ex.step_list if s.kind is StepKind.NOT_DISPATCHED]
    rows = pred.tasks[pred.tasks["outcome"] == "NOT-DISPATCHED"]
    assert nd == [(int(s), a, k) for s, a, k in zip(rows["seq"], rows["action"], rows["state_key"])]
    for item in expected.items:
        if item.outcome == "NOT-DISPATCHED":
            assert item.action in [a for _, a, _ in nd], f"{item} expected, executor lists {nd}"
    executed: dict[str, int] = {}
    for s in ex.step_list:
        if s.call_index is not None and s.outcome == "execute":
            executed[s.function_id] = executed.get(s.function_id, 0) + 1
    for fid, n in case.expect_calls.get(rule, {}).items():
        got_n = sum(executed.values()) if fid == "*" else executed.get(fid, 0)
        assert got_n == n, f"{fid}: executed {got_n}, expected {n}"


# -- D cases: a real incomplete record, a declarative body, the executor's call steps ------------------

_OUTCOMES = {"hit": ("hit", "pending-hit"), "reraise": ("hit-failed",), "execute": ("execute",),
             "reconcile": ("reconcile",)}


def _call_case_run(case, *, trust=True):
    """An incomplete record holding the case's journal; on resume a body makes the case's calls,
    catching each failure (as a try/except or retry loop would) and noting what it got."""
    from agent_inspect.agents._python import PythonAgent
    from agent_inspect.executor import Policies

    cc = case.call_case
    java = cc.producer == "java"
    seen: list[tuple[str, object]] = []
    agent = PythonAgent()

    @agent.action("act", listens=["_input_event"], module="my_agent", qualname="MyAgent.act", java=java)
    def act(event, ctx):
        for call in cc.body:
            def run(call=call):
                if call.raises:
                    raise RuntimeError(call.raises)
                return "fresh"
            try:
                if call.reconciler:
                    def reconcile(call=call):
                        if call.reconciler == "raises":
                            raise RuntimeError("reconciler failed")
                        return "reconciled"
                    value = ctx.durable_execute_reconcilable(call.function_id, call.args_digest, run, reconcile)
                else:
                    value = ctx.durable_execute(call.function_id, call.args_digest, run)
                seen.append(("value", value))
            except Exception as exc:  # noqa: BLE001 - the body handles failures itself
                seen.append(("raised", exc))

    ident = KeyIdentity("k", "K2", key_text="k", key_group=20, key_digest=codec.string_key_digest("k"),
                        serializer_fingerprint="A" * 43 + "=")
    event = AgentEvent("_input_event", {"input": case.id})
    sk = ident.state_key(5, event.fingerprint, codec.name_action_uuid("act"))
    state = codec.ActionState(task_event=codec.Event.new("_input_event", {"input": case.id}, id="e1"),
                              call_results=tuple(call_result(c, where=case.id) for c in cc.record))
    from agent_inspect.log import ActionStateLog
    from agent_inspect.sources import RawBatch, SourceInfo

    batch = RawBatch()
    batch.append(0, 0, None, sk.encode(), codec.encode_action_state(state, value_format=cc.value_format))
    log = ActionStateLog.from_raw(batch, SourceInfo(kind="file", location="d-case", start_offsets={0: 0},
                                                    end_offsets={0: 1}))
    plan = ReplayPlan(inputs=(ReplayInput("k", event),), restored_seq={"k": 4}, keys={"k": ident})
    ex = ReplayExecutor(log, agent=agent, plan=plan, markers=[{0: 0}], rule="fixed",
                        policies=Policies(trust_payloads=trust))
    ex.run()
    return ex, log, seen


@pytest.mark.parametrize("case", CALL_CASES, ids=[c.id for c in CALL_CASES])
def test_durable_call_cases_through_the_executor(case, caplog):

    cc = case.call_case
    ex, log, seen = _call_case_run(case)
    assert ex.failure is None and ex.counters.bodies_executed == 1
    calls = [s for s in ex.step_list if s.call_index is not None and s.outcome not in ("mismatch", "truncate",
                                                                                       "pending")]
    assert [s.kind for s in ex.step_list if s.kind in (StepKind.LOOKUP,)] == [StepKind.LOOKUP]
    assert len(calls) == len(cc.body)
    for step, exp in zip(calls, cc.expect):
        assert step.outcome in _OUTCOMES[exp["outcome"]], (step.outcome, exp)
        if "index" in exp:
            assert step.call_index == exp["index"]
    for text in cc.warnings:
        assert text in caplog.text
    if cc.final_record is not None:
        writes = [v for _, _, v in ex._engine.run.writes if not v.completed]
        final = writes[-1].calls if writes else log.value(0).call_results
        got = [(c.function_id, getattr(c, "status", None) or c.effective_status) for c in final]
        assert got == [(w["fn"], w["status"]) for w in cc.final_record]
    if cc.truncated_to is not None:
        trunc = [s for s in ex.step_list if s.outcome in ("mismatch", "truncate")]
        assert trunc and trunc[0].detail["recorded"] is not None
    if cc.effective_statuses is not None:
        from agent_inspect.executor import CallSlot

        assert tuple(CallSlot.from_record(c).status for c in log.value(0).call_results) == \
            tuple(cc.effective_statuses)
    for (kind, got), exp in zip(seen, cc.expect):
        if "throws" in exp:
            # a Java hit on a null result throws on replay (Optional.of(null), spec §9.4)
            assert kind == "raised" and exp["throws"] in str(got), (kind, got)
        elif exp["outcome"] == "reraise":
            assert kind == "raised" and exp["raises"] in type(got).__name__ + str(got)
        elif "returns" in exp:
            spec = exp["returns"]
            want = spec["pickle"] if "pickle" in spec else spec.get("json")
            assert (kind, got) == ("value", want)
        elif exp.get("null_payloads"):
            assert (kind, got) == ("value", None)


def test_recorded_pickles_stay_opaque_unless_trusted():
    from agent_inspect.executor import RecordedCallError, RecordedValue

    case = next(c for c in CALL_CASES if c.id == "D01")
    ex, _, seen = _call_case_run(case, trust=False)
    assert ex.counters.calls_served == 2 and ex.counters.calls_executed == 1
    assert isinstance(seen[0][1], RecordedValue)
    assert isinstance(seen[1][1], RecordedCallError) and "trust_payloads" in str(seen[1][1])


def test_from_case_file():
    path = next(p for p in CASES if p.name == "N04.toml")
    ex = executor_for(path, rule="original")
    ex.run()
    assert [(a, o) for _, a, o in _dispatched(ex)] == [("IA", "REUSE"), ("WA", "REUSE"), ("IA", "RERUN"),
                                                       ("WA", "RERUN")]
    case = next(c for c in ALL if c.id == "S03")
    assert [o for _, _, o in _dispatched(executor_for(case, rule="fixed"))] == []   # not started
