"""One question, one answer on random recovery histories: over histories the rule checker generates (random
agents and the case files' agents, 0.3 / 0.4 / main runtimes, branch changes, savepoints, durable-call shapes,
sub-agents), ``predict``, ``reconstruct``, the executor's production mode, ``explain`` and the scan's key frame
report the same outcome for every task, with the plan inferred from the log and with the history's own plan and
agent. ``tests/test_consistency.py`` does the same over the bundled samples.

A longer run of the same comparison found a predicted job that ran past a body failing on a recorded failure,
and a window of refresh rows alone that made the plan raise; both are fixed.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agent_inspect as ai
from agent_inspect.fleet import key_frame
from agent_inspect.store import Outcome
from tests.support.outcomes import by_state_key

_COLUMNS = (("reused", "REUSE"), ("resumed", "RESUME"), ("rerun", "RERUN"), ("failed", "FAIL"),
            ("not_dispatched", "NOT-DISPATCHED"))


def _history(seed: int) -> ai.checker.History:
    rng = random.Random(seed)
    options = {"keys": rng.randint(1, 3), "rounds": rng.randint(1, 4), "attempts": rng.randint(1, 3),
               "case_agents": rng.choice([0.25, 0.5]), "key_format": rng.choice(["K1.5", "K1.5", "K1", "K2"]),
               "subagents": rng.choice([0.25, 0.6]), "savepoint_target": rng.choice(["any", "first"])}
    return ai.checker.generate_history(seed, **options)


def _differences(reference: dict, other: dict) -> dict:
    return {t: (reference[t], other[t]) for t in reference.keys() & other.keys() if reference[t] != other[t]}


@pytest.mark.parametrize("own_plan", [False, True], ids=["inferred-plan", "history-plan"])
@settings(deadline=None, max_examples=60, derandomize=True, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(min_value=0, max_value=2**31), rule=st.sampled_from([None, "original", "fixed",
                                                                             "branch-aware"]))
def test_every_verb_reports_the_same_outcome_on_random_histories(own_plan: bool, seed: int, rule: str | None) -> None:
    h = _history(seed)
    log = h.log
    given_settings: dict = {} if rule is None else {"rule": rule}
    if own_plan:
        given_settings.update(plan=h.plan, agent=h.agent)
    recovery = ai.Recovery.for_log(log, markers=list(h.markers), **given_settings)
    tasks = ai.predict(log, recovery=recovery).tasks
    reference = by_state_key(tasks)
    found = {}

    recon = ai.reconstruct(log, recovery=recovery)
    found["reconstruct"] = _differences(reference, by_state_key(recon.records[recon.records["outcome"].notna()]))

    executor = ai.ReplayExecutor(log, recovery=recovery)
    executor.run()
    lookups = by_state_key(executor.steps[executor.steps["kind"] == "lookup"])
    found["executor"] = _differences(reference, lookups)
    assert lookups.keys() == reference.keys(), h.describe()

    seen: Counter[tuple[str, int, str]] = Counter()
    for i, outcome in enumerate(tasks["outcome"].astype(str)):
        if outcome == Outcome.NOT_DISPATCHED:
            continue
        key, seq, action = str(tasks["key"].iat[i]), int(tasks["seq"].iat[i]), str(tasks["action"].iat[i])
        why = ai.explain(log, key, seq, action, occurrence=seen[(key, seq, action)], recovery=recovery)
        seen[(key, seq, action)] += 1
        if (why.outcome, why.state_key) != (outcome, str(tasks["state_key"].iat[i])):
            found.setdefault("explain", {})[(key, seq, action)] = (outcome, why.outcome)

    if not own_plan:   # the scan infers the plan from the log and reads it back with the log-only agent
        base = rule or log.runtime().default_rule
        keys = key_frame(log, rules=(base,), markers=recovery.markers).set_index("business_key")
        per_key = Counter(zip(tasks["business_key"].astype(str), tasks["outcome"].astype(str)))
        for column, outcome in _COLUMNS:
            got = {k: int(n) for k, n in keys[f"{base}_{column}"].items() if n}
            want = {k: n for (k, o), n in per_key.items() if o == outcome}
            if got != want:
                found.setdefault("scan", {})[column] = (want, got)

    assert {verb: d for verb, d in found.items() if d} == {}, h.describe()
