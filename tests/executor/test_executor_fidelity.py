"""Regressions for spec-fidelity bugs of the replay executor (source kind, prune failures, sub-agent ids)."""

from __future__ import annotations

from pathlib import Path

from agent_inspect.executor import ReplayExecutor, StepKind
from agent_inspect.rules import build_case, load_cases

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
