"""Property tests of ai.diff over random recovery histories from the checker's generator."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agent_inspect as ai
from agent_inspect.checker import generate_history
from agent_inspect.history import annotate
from tests.support.diffs import mirrored, plain

SMALL = {"keys": 2, "rounds": 3, "attempts": 3, "min_attempts": 2}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(min_value=0, max_value=10_000))
def test_diff_over_random_histories(seed):
    log = generate_history(seed, SMALL).log
    # a log against itself is empty
    assert ai.diff(log, log).empty
    if not len(log):  # a history whose attempts all died before writing anything
        return
    ann = annotate(log)     # as diffing.attempt reads it: without checkpoint-time refresh rows
    for key in sorted(log.records["business_key"].dropna().astype(str).unique()):
        n = int(ann.loc[(log.records["business_key"] == key).to_numpy(bool), "attempt"].max())
        for x, y in ((1, n), (1, 2)) if n >= 2 else ():
            a, b = ai.diffing.attempt(log, key, x), ai.diffing.attempt(log, key, y)
            ab, ba = ai.diff(a, b), ai.diff(b, a)
            # symmetric, and every execution of each side is in exactly one pair
            assert plain(ab) == mirrored(ba)
            c = ab.counts()
            assert c["same"] + c["changed"] + c["only in a"] == len(a.units)
            assert c["same"] + c["changed"] + c["only in b"] == len(b.units)
            assert ab.pairs["a"].dropna().is_unique and ab.pairs["b"].dropna().is_unique
            # a pair is changed exactly when it has field changes; the first divergence is the earliest round
            assert all((str(r.status) == "changed") == bool(r.changes) for r in ab.pairs.itertuples()
                       if str(r.status) in ("same", "changed"))
            if not ab.empty:
                first = ab.first_divergence(key)
                assert first["seq"] == ab.differences["seq"].min()
            assert ai.diff(b, b).empty
    # one key against the whole log: that key's executions are the same, the others only in a
    key = str(log.records["business_key"].dropna().iloc[0])
    d = ai.diff(log, log.for_key(key))
    assert set(d.pairs.loc[d.pairs["status"] == "same", "business_key"].astype(str)) == {key}
    assert set(d.pairs["status"].astype(str)) <= {"same", "only in a"}
