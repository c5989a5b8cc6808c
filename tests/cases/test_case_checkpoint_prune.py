"""Spec §8.3: the snapshot Kafka pruneState crash, on case histories driven through a completing checkpoint.

Case files cannot hold a checkpoint inside the replay (the static predictor has none), so these
histories are case-file text run through the replay executor, which can complete a checkpoint.
"""

from __future__ import annotations

import tomllib

import pytest

from agent_inspect.cases import build_case, run_case
from agent_inspect.cases._format import parse_case
from agent_inspect.executor import ReplayExecutor

# P01's key text on one record per round: lookups hit with count 1 and never evict, so only the prune parses
P01_ROUNDS = """
id = "P01-checkpoint"
replay = ["k:In(A)", "k:In(B)"]
log = [
  { att = 1, key = "k", seq = 5, action = "IA", event = "In(A)#a1", status = "C" },
  { att = 1, key = "k", seq = 6, action = "IA", event = "In(B)#b1", status = "C" },
]
[keys]
k = { text = "tenant_1" }
[agent]
actions = [{ name = "IA", triggers = ["_input_event"] }]
[expect]
original = "A.IA=REUSE B.IA=REUSE"
fixed = "A.IA=REUSE B.IA=REUSE"
"""

# P02's key texts: key a_5 writes a_5_9_… during the replay; pruning key a scans everything starting a_
P02_PREFIX = """
id = "P02-checkpoint"
replay = ["a:In(A)", "a_5:In(X)"]
log = [{ att = 1, key = "a", seq = 5, action = "IA", event = "In(A)#a1", status = "C" }]
[keys]
a_5 = { restored_seq = 8 }
[agent]
actions = [{ name = "IA", triggers = ["_input_event"] }]
[expect]
original = "a:A.IA=REUSE a_5:X.IA=RERUN"
fixed = "a:A.IA=REUSE a_5:X.IA=RERUN"
"""


def run_then_checkpoint(text: str, key_format: str, source: str, rule: str = "original"):
    data = tomllib.loads(text)
    data["setup"] = {"key_format": key_format, "source": source}
    (case,) = parse_case(data, path="<test>")
    assert run_case(case, rule).passed            # the replay itself goes through, as the case expects
    built = build_case(case)
    ex = ReplayExecutor(built.log, agent=built.agent, plan=built.plan, markers=list(built.markers), rule=rule)
    ex.run()
    assert ex.failure is None
    ex.checkpoint(complete=True)
    steps = ex.steps
    prunes = steps[steps["kind"].astype(str).str.contains("prune", case=False)]
    return ex, list(zip(prunes["key"], prunes["seq"], prunes["outcome"]))


@pytest.mark.parametrize(("text", "parsed"), [(P01_ROUNDS, "tenant_1_5_"), (P02_PREFIX, "a_5_9_")],
                         ids=["P01", "P02"])
def test_snapshot_kafka_prune_crashes_on_a_key_text_with_separator(text, parsed):
    ex, prunes = run_then_checkpoint(text, "K1", "kafka")
    assert ex.failure is not None                                           # ✗crash: restart loop
    assert "strict 4-part parser" in str(ex.failure) and f"'{parsed}" in str(ex.failure)
    assert prunes[-1][2] == "failed"


def test_snapshot_fluss_prune_keeps_what_it_cannot_parse():
    ex, prunes = run_then_checkpoint(P02_PREFIX, "K1", "fluss")
    assert ex.failure is None
    assert prunes == [("a", 5, "pruned"), ("a_5", 9, "pruned")]
    # a_5_9_… does not parse with the strict parser: it is kept, by both prunes
    assert [(e.business_key, e.seq) for e in ex.store.entries()] == [("a_5", 9)]


@pytest.mark.parametrize("text", [P01_ROUNDS, P02_PREFIX], ids=["P01", "P02"])
@pytest.mark.parametrize("rule", ["original", "fixed"])
def test_segment_exact_prune_never_crashes(text, rule):
    ex, prunes = run_then_checkpoint(text, "K1.5", "kafka", rule)
    assert ex.failure is None and prunes and all(o == "pruned" for _, _, o in prunes)
    assert len(ex.store) == 0
