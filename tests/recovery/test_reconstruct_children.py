"""reconstruct's record-by-record replay dispatches sub-agent children as the runtime does (addendum §1.1):
on the S08–S12 cases, under every runtime variant and rule, reconstruct, predict and the executor agree
on every record's outcome (NOT-DISPATCHED included)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_inspect.cases import build_case, load_cases
from agent_inspect.executor import ReplayExecutor, StepKind
from agent_inspect.recovery import predict, reconstruct

ROOT = Path(__file__).resolve().parents[2]
CASES = [c for c in load_cases(sorted((ROOT / "cases").glob("S*.toml")))
         if c.id.split("/")[0] in ("S08", "S09", "S10", "S11", "S12")]
RUNS = [(c, r) for c in CASES for r in c.rules]


def test_every_variant_is_there() -> None:
    assert {c.id for c in CASES} >= {"S08", "S08/0.3", "S09", "S09/0.3", "S09/0.4", "S10", "S10/0.3", "S11",
                                     "S11/0.3", "S12", "S12/0.3"}


@pytest.mark.parametrize("case,rule", RUNS, ids=[f"{c.id}-{r}" for c, r in RUNS])
def test_reconstruct_predict_and_the_executor_agree_on_children(case, rule) -> None:
    built = build_case(case)
    runtime = dict(runtime=case.setup.runtime, kafka_pending=case.setup.kafka_pending)
    recs = reconstruct(built.log, rule=rule, markers=list(built.markers), **runtime).records
    done = recs[recs["outcome"].notna()]
    as_logged = dict(zip(done["state_key"], done["outcome"].astype(str)))
    assert as_logged, "the replay dispatched nothing"

    pred = predict(built.log, plan=built.plan, agent=built.agent, rule=rule, markers=list(built.markers), **runtime)
    predicted = dict(zip(pred.tasks["state_key"], pred.tasks["outcome"].astype(str)))
    assert as_logged == {sk: predicted.get(sk) for sk in as_logged}, (as_logged, predicted)

    ex = ReplayExecutor(built.log, agent=built.agent, plan=built.plan, markers=list(built.markers), rule=rule,
                        **runtime)
    ex.run()
    executed = {s.state_key: str(s.outcome) for s in ex.step_list
                if s.kind in (StepKind.LOOKUP, StepKind.NOT_DISPATCHED) and s.state_key is not None}
    assert as_logged == {sk: executed.get(sk) for sk in as_logged}, (as_logged, executed)


def test_main_skips_what_0_3_dispatches() -> None:
    """S11: a reused root caller re-sends its stored bootstrap under 0.3 (the child is reused again) but not
    under main; the record says why."""
    by_id = {c.id: c for c in CASES}
    main = reconstruct(build_case(by_id["S11"]).log, rule="original", runtime="main").records
    old = reconstruct(build_case(by_id["S11/0.3"]).log, rule="original", runtime="0.3").records
    child = main["task_event_type"] == "InternalSubagentCallEvent"
    assert set(main.loc[child & main["outcome"].notna(), "outcome"].astype(str)) == {"NOT-DISPATCHED"}
    assert main.loc[child & main["outcome"].notna(), "outcome_reason"].str.contains("re-sends no bootstrap").all()
    assert main.loc[child & main["outcome"].notna(), "status"].astype(str).eq("live").all()
    old_child = old["task_event_type"] == "InternalSubagentCallEvent"
    assert set(old.loc[old_child & old["outcome"].notna(), "outcome"].astype(str)) == {"REUSE"}
