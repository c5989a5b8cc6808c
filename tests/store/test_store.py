"""The Store: indexes, range removals, prefix matching, copies."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_inspect.store import Entry, Store
from agent_inspect.store._store import strict_k1_seq


def e(key: str, seq: int, fp: str = "e", action: str = "a", *, root: bool = False, fmt: str = "K1.5",
      pos: int | None = None) -> Entry:
    return Entry(state_key=f"{key}_{seq}_{fp}_{action}", business_key=key, seq=seq, event_uuid=fp,
                 action_uuid=action, key_format=fmt, key_text=key, is_root=root, pos=pos)


def test_put_get_replace_and_indexes() -> None:
    s = Store()
    a = e("k", 5, "A", root=True, pos=0)
    assert s.put(a) is None
    a2 = replace(a, completed=True, pos=1)
    assert s.put(a2) is a
    assert s.get(a.state_key) is a2 and len(s) == 1
    s.put(e("k", 5, "A", "b", root=True))
    s.put(e("k", 5, "W", "c"))
    s.put(e("k", 7, "B", root=True))
    assert s.count("k", 5) == 3 and s.roots("k", 5) == {"A"} and s.roots("k", 7) == {"B"}
    assert s.seqs("k") == [5, 7] and s.max_seq("k") == 7
    assert len(s.root_entries("k", 5)) == 2
    assert [x.seq for x in s.entries_from("k", 6)] == [7]


def test_range_removals_touch_only_their_range() -> None:
    s = Store([e("k", q, f"f{q}", root=True) for q in range(1, 8)] + [e("j", q) for q in range(1, 8)])
    assert sorted(x.seq for x in s.evict("k", 5)) == [6, 7]
    assert sorted(x.seq for x in s.invalidate("k", 4)) == [4, 5]
    assert sorted(x.seq for x in s.prune("k", 2)) == [1, 2]
    assert s.seqs("k") == [3] and s.seqs("j") == list(range(1, 8))
    assert s.roots("k", 4) == frozenset() and s.roots("k", 3) == {"f3"}
    assert s.evict("missing", 0) == []


def test_cross_key_eviction_and_lazy_indexes_stay_consistent() -> None:
    s = Store([e("k", 5), e("j", 6), e("j", 9)])
    assert s.count_prefix("j_") == 2                 # builds the sorted index
    assert sorted(x.seq for x in s.evict_all_keys(5)) == [6, 9]
    assert s.count_prefix("j_") == 0 and len(s) == 1
    s.put(e("j", 8))
    s.put(e("j", 8))
    assert s.count_prefix("j_8_") == 1 and s.keys_with_prefix("j_") == ["j_8_e_a"]
    assert [x.seq for x in s.evict_all_keys(7)] == [8]


def test_strict_parser_and_unparsable_keys() -> None:
    assert strict_k1_seq("k_5_e_a") == 5
    assert strict_k1_seq("tenant_1_5_e_a") is None
    assert strict_k1_seq("k_x_e_a") is None
    s = Store([e("tenant_1", 5, fmt="K1"), e("k", 5, fmt="K1"), e("tenant_1", 6, fmt="K1.5")])
    assert s.unparsable_k1() == {"tenant_1_5_e_a"}
    s.remove("tenant_1_5_e_a")
    assert s.unparsable_k1() == frozenset()


def test_copy_is_independent() -> None:
    s = Store([e("k", 5, root=True), e("k", 6)])
    s.count_prefix("k_")
    c = s.copy()
    c.invalidate("k", 0)
    c.put(e("z", 1))
    assert len(s) == 2 and s.count_prefix("k_") == 2 and s.roots("k", 5) == {"e"}
    assert len(c) == 1 and c.count_prefix("k_") == 0


ops = st.lists(st.tuples(st.sampled_from(["put", "evict", "invalidate", "prune", "remove", "cross"]),
                         st.sampled_from(["k", "j", "k_1"]), st.integers(0, 6), st.sampled_from(["A", "B"]),
                         st.booleans()), max_size=40)


@settings(deadline=None, max_examples=150)
@given(ops)
def test_indexes_match_a_plain_dict_model(steps: list[tuple[str, str, int, str, bool]]) -> None:
    s, model = Store(), {}
    s.count_prefix("")                                   # maintain the lazy indexes from the start
    for op, key, seq, fp, root in steps:
        if op == "put":
            x = e(key, seq, fp, root=root)
            s.put(x)
            model[x.state_key] = x
        elif op == "remove":
            sk = f"{key}_{seq}_{fp}_a"
            s.remove(sk)
            model.pop(sk, None)
        else:
            pred = {"evict": lambda x: x.business_key == key and x.seq > seq,
                    "invalidate": lambda x: x.business_key == key and x.seq >= seq,
                    "prune": lambda x: x.business_key == key and x.seq <= seq,
                    "cross": lambda x: x.seq > seq}[op]
            expected = {k for k, x in model.items() if pred(x)}
            removed = {"evict": s.evict, "invalidate": s.invalidate, "prune": s.prune}[op](key, seq) \
                if op != "cross" else s.evict_all_keys(seq)
            assert {x.state_key for x in removed} == expected
            for k in expected:
                del model[k]
        assert set(s) == set(model)
        for key2 in ("k", "j", "k_1"):
            for q in range(7):
                assert s.count(key2, q) == sum(1 for x in model.values() if x.business_key == key2 and x.seq == q)
                assert s.roots(key2, q) == {x.event_uuid for x in model.values()
                                            if x.business_key == key2 and x.seq == q and x.is_root}
        assert s.count_prefix("k_") == sum(1 for k in model if k.startswith("k_"))


def test_markers_take_the_same_forms_as_the_loaders():
    import pytest

    from agent_inspect import RecoveryError
    from agent_inspect.recovery import normalize_markers

    versioned = {"schemaVersion": 1, "topic": "t", "topicId": "x", "offsets": {"0": 5, "1": 7}}
    assert normalize_markers([versioned, {0: 3}]) == {0: 3, 1: 7}
    assert normalize_markers([]) is None and normalize_markers(None) is None
    with pytest.raises(RecoveryError, match="partition must be an integer"):
        normalize_markers({"p0": 1})
    with pytest.raises(RecoveryError, match="offset must be an integer"):
        normalize_markers({0: True})
