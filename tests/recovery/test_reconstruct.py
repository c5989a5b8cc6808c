"""reconstruct() on real logs (codec keys and values through ActionStateLog.from_raw)."""

from __future__ import annotations

import sys
from pathlib import Path

import networkx as nx
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from recovery_logs import LogBuilder, inp, work

import agent_inspect as ai
from agent_inspect.recovery import STATUSES, Reconstruction, lint, reconstruct


def n04(fmt: str = "K1.5", kind: str = "kafka") -> LogBuilder:
    b = LogBuilder(fmt=fmt, kind=kind)
    a = inp("A", "a1")
    (w,) = b.run("k", 5, "IA", a, outs=[work("a", "w1")])
    b.run("k", 5, "WA", w, upstream="a1")
    bb = inp("B", "b1")
    (w,) = b.run("k", 6, "IA", bb, outs=[work("b", "w2")])
    b.run("k", 6, "WA", w, upstream="b1")
    return b


def g01() -> LogBuilder:
    b = LogBuilder()
    b.run("k", 5, "IA", inp("A", "a1"))
    b.run("k", 5, "IA", inp("B", "b1"))
    b.run("k", 6, "IA", inp("C", "c1"))
    return b


def completed(r: Reconstruction) -> pd.DataFrame:
    return r.records[r.records["completed"].fillna(False).astype(bool)]


def test_n04_original_evicts_later_round_fixed_reuses_all() -> None:
    log = n04().log()
    orig = ai.reconstruct(log, rule="original")
    done = completed(orig)
    assert done["status"].tolist() == ["live", "live", "evicted", "evicted"]
    assert done["outcome"].tolist() == ["REUSE", "REUSE", "RERUN", "RERUN"]
    (div,) = orig.divergences.itertuples()
    assert (div.business_key, div.seq, div.kind, div.step, div.positions) == ("k", 5, "count>1", "lookup", (1, 3))
    assert done["divergence_id"].tolist()[2:] == [div.id, div.id]
    assert orig.evictions.loc[0, "positions"] == (5, 7) and orig.evictions.loc[0, "op"] == "evict"
    fixed = reconstruct(log, rule="fixed")
    assert completed(fixed)["status"].tolist() == ["live"] * 4
    assert completed(fixed)["outcome"].tolist() == ["REUSE"] * 4
    assert fixed.divergences.empty and fixed.evictions.empty
    # intermediate writes are superseded by the completion of the same state key
    assert set(fixed.records.loc[[0, 2, 4, 6], "status"]) == {"superseded"}
    assert fixed.records["status"].dtype == "category" and list(fixed.records["status"].cat.categories) == list(STATUSES)
    assert fixed.records["attempt"].tolist() == [1] * 8 and fixed.records["execution"].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]


def test_g01_root_conflict_with_attribute_diff() -> None:
    r = reconstruct(g01().log(), rule="fixed")
    assert completed(r)["status"].tolist() == ["invalidated", "live", "live"]
    div = r.divergences.iloc[0]
    assert (div["kind"], div["step"], div["seq"]) == ("root-conflict", "rebuild", 5)
    assert div["positions"] == (1, 2) and div["trigger_pos"] == 2     # B's initial write conflicts
    assert div["attribute_diff"] == {"input": ("A", "B")}
    assert "conflicts" in div["explanation"]
    assert r.records.loc[1, "divergence_id"] == div["id"]
    assert r.records["attempt"].tolist() == [1, 1, 2, 2, 2, 2]
    naive = reconstruct(g01().log(), rule="naive")
    assert completed(naive)["status"].tolist() == ["live"] * 3


def test_markers_select_the_window() -> None:
    b = n04()
    log = b.log()
    r = reconstruct(log, markers=[{0: 6}, {0: 4}])          # minimum per partition = 4
    assert r.records["status"].tolist()[:4] == ["outside"] * 4
    assert r.markers == {0: 4}
    assert reconstruct(log, markers=[{1: 0}]).records["status"].eq("outside").all()   # partition 0 not named
    assert reconstruct(log, markers=[]).records["status"].eq("outside").all()
    session = ai.recovery.rebuild(log, "fixed", markers={0: 4})
    assert len(session.store) == 2
    assert len(ai.recovery.rebuild(log, "fixed", markers=[]).store) == 0          # a fresh start
    assert len(ai.recovery.rebuild(log, "fixed", markers=None).store) == 4        # the whole loaded log
    with pytest.raises(ai.RecoveryError, match="marker"):
        ai.recovery.rebuild(log, "fixed", markers=[{0: "x"}])


def test_marker_below_loaded_start_is_an_error() -> None:
    b = n04()
    log = b.log()
    from agent_inspect.log import ActionStateLog
    from agent_inspect.raw import SourceInfo

    shifted = ActionStateLog.from_raw(b.batch, SourceInfo(kind="kafka", location="x", topic="t",
                                                          start_offsets={0: 3}, end_offsets={0: 8}))
    with pytest.raises(ai.RecoveryError, match="below the loaded start"):
        reconstruct(shifted, markers=[{0: 1}])
    assert len(reconstruct(log, markers=[{0: 1}]).records) == 8


def test_tombstones_prune_and_keep_miss_eviction_g04() -> None:
    b = LogBuilder()
    a, bb = inp("A", "a1"), inp("B", "b1")
    b.run("k", 5, "IA", a)
    b.run("k", 5, "IA", bb)
    b.tombstone("k", 5, "IA", a)
    b.tombstone("k", 5, "IA", bb)
    b.run("k", 6, "IA", inp("C", "c1"))
    r = reconstruct(b.log(), rule="fixed")
    st = r.records["status"].tolist()
    assert st[4:6] == ["tombstone", "tombstone"]
    assert st[3] == "pruned" and st[1] == "invalidated"
    # spec G04 expect.fixed: A's lookup misses (its round was pruned) and evicts k > 5, so C re-runs
    assert st[7] == "evicted" and r.records.loc[7, "outcome"] == "RERUN"
    assert set(r.evictions["op"]) == {"invalidate", "delete", "evict"}   # the miss eviction


def test_snapshot_kafka_flavours_on_k1_logs() -> None:
    b = LogBuilder(fmt="K1")
    (w,) = b.run("tenant_1", 5, "IA", inp("A", "a1"), outs=[work("a", "w1")])
    b.run("tenant_1", 5, "WA", w)
    b.run("tenant_1", 6, "IA", inp("B", "b1"))
    kafka = reconstruct(b.log(), rule="original")
    assert kafka.records["outcome"].dropna().tolist() == ["FAIL"]
    assert kafka.divergences["kind"].tolist() == ["parser-crash"]
    b.kind = "fluss"
    fluss = reconstruct(b.log(), rule="original")
    assert fluss.records["outcome"].dropna().tolist() == ["REUSE"] * 3     # protection silently off
    assert reconstruct(b.log(), rule="original:segment").records["outcome"].dropna().tolist() == ["REUSE", "REUSE", "RERUN"]


def test_cross_key_eviction_n09() -> None:
    b = LogBuilder(fmt="K1")
    (w,) = b.run("k", 5, "IA", inp("A", "a1"), outs=[work("a", "w1")])
    b.run("k", 5, "WA", w)
    b.run("k2", 7, "IA", inp("X", "x1"))
    b.run("k", 6, "IA", inp("B", "b1"))
    r = reconstruct(b.log(), rule="original")
    k2 = r.records[(r.records["business_key"] == "k2") & r.records["completed"]]
    assert k2["status"].tolist() == ["evicted"]
    div = r.divergences.loc[int(k2["divergence_id"].iloc[0])]
    assert div["kind"] == "cross-key" and div["business_key"] == "k"


def test_per_partition_calls_give_the_same_statuses() -> None:
    b = n04()
    b.partitions["j"] = 1
    b.run("j", 3, "IA", inp("A", "j1"))
    b.run("j", 3, "IA", inp("Q", "j2"))
    log = b.log()
    whole = reconstruct(log, rule="fixed").records
    parts = pd.concat([reconstruct(log.select(log.records["partition"] == p), rule="fixed").records
                       for p in (0, 1)])
    assert parts["status"].tolist() == whole["status"].tolist()
    assert parts["outcome"].astype(object).tolist() == whole["outcome"].astype(object).tolist()


def test_graph_subagent_tree_summary_and_html() -> None:
    b = LogBuilder()
    b.run("<script>x</script>", 5, "IA", inp("A", "a1"))
    b.run("<script>x</script>", 5, "IA", inp("B", "b1"))
    r = reconstruct(b.log(), rule="fixed")
    g = r.graph("<script>x</script>")
    assert isinstance(g, nx.DiGraph)
    statuses = {d.get("status") for _, d in g.nodes(data=True) if d.get("kind") == "action"}
    assert "invalidated" in statuses
    assert isinstance(r.subagent_tree("<script>x</script>", 5), nx.DiGraph)
    html = r._repr_html_()
    assert "<script>x" not in html and "&lt;script&gt;" in html
    s = r.summary()
    assert s["rule"] == "fixed" and s["invalidated"] == 1 and s["divergences"] == {"root-conflict": 1}
    assert "Reconstruction(rule='fixed (what-if" in repr(r)


def test_custom_rule_and_errors() -> None:
    class KeepEverything(ai.rules.DivergenceRule):
        name = "keep"

        def lookup(self, session, task):
            return ai.store.LookupDecision.found(session.store.get(task.state_key))

    r = reconstruct(g01().log(), rule=KeepEverything)
    assert r.rule.name == "keep" and completed(r)["status"].tolist() == ["live"] * 3
    with pytest.raises(ai.RecoveryError, match="not a divergence rule"):
        reconstruct(g01().log(), rule=42)
    with pytest.raises(ai.RecoveryError, match="ActionStateLog"):
        reconstruct([1, 2])


def test_lints() -> None:
    b = LogBuilder(fmt="K1")
    b.run("tenant_1", 5, "IA", inp("A"))
    b.run("a", 5, "IA", inp("A"))
    b.run("a_5", 9, "IA", inp("X"))
    u1, u2 = "0d6d1c4e-7e39-3b7b-9d8e-1a2b3c4d5e6f", "1d6d1c4e-7e39-3b7b-9d8e-1a2b3c4d5e6f"
    b.run("j", 5, "IA", inp("A", "p1"), action_uuid=u1)
    b.run("j", 6, "IA", inp("B", "p2"), action_uuid=u1)
    b.run("j", 5, "IA", inp("A", "p3"), action_uuid=u2)      # attempt 2 in a new JVM (P03)
    log = b.log()
    found = lint(log)
    assert found["lint"].tolist() == ["separator-in-key-text", "separator-in-key-text", "prefix-collision",
                                      "action-uuid-unstable"]
    pc = found[found["lint"] == "prefix-collision"].iloc[0]
    assert (pc["business_key"], pc["seq"], pc["severity"]) == ("a", 5, "error")
    assert reconstruct(log).lints["lint"].tolist() == found["lint"].tolist()


def test_typed_key_and_fingerprint_lints() -> None:
    b = LogBuilder()
    b.run("1", 5, "IA", inp("ping", "l1"))
    sk = b.state_key("1", 5, "IA", inp("ping"))
    other = "7" + sk[sk.index("_"):]                                  # same text "1", another key group
    b._write("1", other, b.batch.value[-1])
    wrong = sk.replace(inp("ping").fp, inp("pong").fp)              # event UUID not of its attributes
    b._write("1", wrong, b.batch.value[-1])
    found = lint(b.log())
    assert set(found["lint"]) == {"typed-key-collision", "fingerprint-mismatch"}
    fm = found[found["lint"] == "fingerprint-mismatch"].iloc[0]
    assert fm["positions"] == (3,)
    assert lint(b.log(), fingerprints=False)["lint"].tolist() == ["typed-key-collision"]


def test_fluss_restore_checks() -> None:
    b = n04(kind="fluss")
    b.partitions["j"] = 1
    b.run("j", 3, "IA", inp("A", "j1"))
    log = b.log()
    assert len(reconstruct(log, markers=[{0: 0, 1: 0}]).records) == 10
    with pytest.raises(ai.RecoveryError, match="bucket set"):
        reconstruct(log, markers=[{0: 0}])
    with pytest.raises(ai.RecoveryError, match="data loss"):
        reconstruct(log, markers=[{0: 0, 1: 99}])


def test_lookup_only_reports_the_conflict_at_lookup_with_both_roots() -> None:
    b = g01()
    b.run("k", 5, "IA", inp("A", "a3"))               # G03: A written again after B's branch
    r = reconstruct(b.log(), rule="lookup-only")
    div = r.divergences.iloc[0]
    assert (div["kind"], div["step"]) == ("root-conflict", "lookup")
    assert div["positions"] == (3, 7) and div["attribute_diff"] == {"input": ("B", "A")}
    assert completed(r)["status"].tolist() == ["superseded", "invalidated", "invalidated", "invalidated"]


def test_prediction_from_a_reconstruction() -> None:
    r = reconstruct(n04().log(), rule="original")
    p = r.predict()
    assert p.rule == "original" and p.reruns() == 2
    assert reconstruct(n04().log(), rule="fixed").predict().reruns() == 0


def test_false_identity_mismatch_known_limit() -> None:
    """A parent re-executed in attempt 2 (new output ids) while its child was reused (no write):
    reusing the parent's new record gives the child an evidenced id that differs from its record."""
    b = LogBuilder()
    a = inp("A", "a1")
    (w,) = b.run("k", 5, "IA", a, outs=[work("a", "w1")])
    b.run("k", 5, "WA", w, upstream="a1")
    b.run("k", 5, "IA", inp("A", "a2"), outs=[work("a", "w2")])      # attempt 2: re-executed parent
    r = reconstruct(b.log(), rule="fixed")
    assert r.records["attempt"].tolist() == [1, 1, 1, 1, 2, 2]
    assert completed(r)["outcome"].astype(object).fillna("-").tolist() == ["-", "RERUN", "REUSE"]
    div = r.divergences.iloc[0]
    assert div["kind"] == "identity-mismatch" and div["positions"] == (3,)
    with pytest.raises(ai.RecoveryError, match="reads record values"):   # no values: no ids to match
        reconstruct(b.log().records, rule="fixed")
    rebuilt = reconstruct(b.log().records, rule="fixed", replay=False)    # the rebuild alone needs none
    assert completed(rebuilt)["outcome"].isna().all()
