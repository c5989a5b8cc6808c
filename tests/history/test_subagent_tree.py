"""Sub-agent call trees (spec §11.5) for divergence-cases S01–S06, nested and unattributed calls."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_inspect.codec import CallResult
from agent_inspect.history._subagent import ATTRIBUTIONS, CALL_STATUSES, subagent_tree

try:
    from test_graph_support import History, inp, out, session_ids, sub
except ImportError:  # collected as part of a package
    from .test_graph_support import History, inp, out, session_ids, sub


def _by_kind(tree: nx.DiGraph, kind: str) -> list[str]:
    return [n for n, d in tree.nodes(data=True) if d["kind"] == kind]


def _only(tree: nx.DiGraph, kind: str) -> dict:
    (node,) = _by_kind(tree, kind)
    return tree.nodes[node]


def _path_labels(tree: nx.DiGraph, node: str) -> list[str]:
    root = next(n for n, d in tree.nodes(data=True) if d["kind"] == "round")
    return [tree.nodes[n]["kind"] if tree.nodes[n]["kind"] != "action" else tree.nodes[n]["label"]
            for n in nx.shortest_path(tree, root, node)]


def s01(*, caller_calls: bool = False, bootstrap_upstream: bool = False) -> tuple[History, str, str]:
    h = History()
    a1 = inp("A", "a1")
    s, c = session_ids("k", 5, "P", a1)
    if caller_calls:
        h.run("k", 5, "P", a1, "P", calls=[("my_agent.prep", "SUCCEEDED"), (f"{s}#{c}", "PENDING")])
    else:
        h.run("k", 5, "P", a1, "I")
    boot = sub(s, c, "_input_event", "b1", upstream="a1" if bootstrap_upstream else None)
    h.run("k", 5, "CA", boot, outputs=[sub(s, c, "_output_event", "o1")])
    return h, s, c


def test_s01_caller_incomplete_by_namespace_digest() -> None:
    h, s, c = s01()
    tree = subagent_tree(h.log(), "k", 5, action_names=["P"])
    assert nx.is_arborescence(tree)
    assert tree.number_of_nodes() == 5  # round, P, session, call, CA
    child = next(n for n, d in tree.nodes(data=True) if d.get("role") == "bootstrap")
    assert _path_labels(tree, child) == ["round", "P", "session", "call", "CA"]
    call = _only(tree, "call")
    assert (call["call_id"], call["session_id"]) == (c, s)
    assert call["attribution"] == "namespace-digest" and call["call_status"] == "done"
    assert tree.nodes[child]["target_scope"] == "reviewer" and tree.nodes[child]["delegate_type"] == "_input_event"
    assert tree.graph["attributions"] == {s: "namespace-digest"}


def test_s01_without_the_callers_name_the_call_is_kept_unattributed() -> None:
    h, s, _ = s01()
    tree = subagent_tree(h.log(), "k", 5)
    assert nx.is_arborescence(tree)
    child = next(n for n, d in tree.nodes(data=True) if d.get("role") == "bootstrap")
    assert _path_labels(tree, child) == ["round", "unattributed", "session", "call", "CA"]
    assert _only(tree, "call")["attribution"] == "unattributed"
    assert not [n for n, d in tree.nodes(data=True) if d.get("role") == "caller"]


def test_s01_bootstrap_upstream_points_at_the_caller() -> None:
    h, _, _ = s01(bootstrap_upstream=True)
    tree = subagent_tree(h.log(), "k", 5)
    assert _only(tree, "session")["attribution"] == "upstream-event"
    caller = next(n for n, d in tree.nodes(data=True) if d.get("role") == "caller")
    assert tree.nodes[caller]["task_event_id"] == "a1"


def test_caller_call_result_attributes_the_call() -> None:
    h, s, c = s01(caller_calls=True)
    tree = subagent_tree(h.log(), "k", 5)
    call = _only(tree, "call")
    assert call["attribution"] == "call-result"
    assert call["call_status"] == "done"  # the child answered; the caller's slot is still PENDING
    caller = next(n for n, d in tree.nodes(data=True) if d.get("role") == "caller")
    assert tree.nodes[caller]["calls_pending"] == 1 and tree.nodes[caller]["calls_succeeded"] == 1
    assert call["caller"] == caller


def test_s02_completed_caller_consumed_its_call() -> None:
    h = History()
    a1 = inp("A", "a1")
    s, c = session_ids("k", 5, "P", a1)
    h.run("k", 5, "P", a1, outputs=[out("reviewed", "p-out")])  # name known from its outputs
    h.run("k", 5, "CA", sub(s, c, "_input_event", "b1"))
    tree = subagent_tree(h.log(), "k", 5)
    call = _only(tree, "call")
    assert call["call_status"] == "consumed" and call["attribution"] == "namespace-digest"
    caller = next(n for n, d in tree.nodes(data=True) if d.get("role") == "caller")
    assert tree.nodes[caller]["completed"] and tree.nodes[caller]["label"] == "P"


def test_s03_chained_children_hang_under_their_emitter() -> None:
    h = History()
    a1 = inp("A", "a1")
    s, c = session_ids("k", 5, "P", a1)
    h.run("k", 5, "P", a1, "I")
    f1 = h.run("k", 5, "CA1", sub(s, c, "_input_event", "b1"), outputs=[sub(s, c, "CE", "f1")])
    h.run("k", 5, "CA2", f1[0], outputs=[sub(s, c, "_output_event", "o1")])
    tree = subagent_tree(h.log(), "k", 5, action_names=["P"])
    roles = {d["label"]: d["role"] for _, d in tree.nodes(data=True) if d["kind"] == "action"}
    assert roles == {"P": "caller", "CA1": "bootstrap", "CA2": "forwarded"}
    ca2 = next(n for n, d in tree.nodes(data=True) if d.get("label") == "CA2")
    assert _path_labels(tree, ca2) == ["round", "P", "session", "call", "CA1", "CA2"]
    (parent,) = tree.predecessors(ca2)
    assert tree.edges[parent, ca2]["kind"] == "forwards"
    assert _only(tree, "call")["call_status"] == "done"


def test_s05_each_round_has_its_own_tree() -> None:
    h = History()
    a, b = inp("A", "a1"), inp("B", "b2")
    sa, ca = session_ids("k", 5, "P", a)
    sb, cb = session_ids("k", 6, "P", b)
    h.run("k", 5, "P", a)
    h.run("k", 5, "CA", sub(sa, ca, "_input_event", "b1"))
    h.run("k", 6, "P", b)
    h.run("k", 6, "CA", sub(sb, cb, "_input_event", "b3"))
    for seq, session in ((5, sa), (6, sb)):
        tree = subagent_tree(h.log(), "k", seq, action_names=["P"])
        assert _only(tree, "session")["session_id"] == session
        assert _only(tree, "call")["call_status"] == "consumed"
        assert len([n for n, d in tree.nodes(data=True) if d["kind"] == "action"]) == 2
        assert {d["seq"] for _, d in tree.nodes(data=True) if d["kind"] == "action"} == {seq}


def test_s06_incomplete_child_with_calls_is_in_flight() -> None:
    h = History()
    a1 = inp("A", "a1")
    s, c = session_ids("k", 5, "P", a1)
    h.run("k", 5, "P", a1, "I")
    h.run("k", 5, "CA", sub(s, c, "_input_event", "b1"), "P", calls=[("chat", "SUCCEEDED")])
    tree = subagent_tree(h.log(), "k", 5, action_names=["P"])
    assert _only(tree, "call")["call_status"] == "in-flight"
    child = next(d for _, d in tree.nodes(data=True) if d.get("role") == "bootstrap")
    assert (child["completed"], child["calls_succeeded"]) == (False, 1)


def nested(*, inner_caller_done: bool) -> tuple[History, str, str]:
    h = History()
    a1 = inp("A", "a1")
    s0, c0 = session_ids("k", 5, "P", a1)
    h.run("k", 5, "P", a1, "P", calls=[(f"{s0}#{c0}", "PENDING")])
    boot = sub(s0, c0, "_input_event", "b1")
    s1, c1 = session_ids("k", 5, "CA", boot, scope="checker")
    if inner_caller_done:
        h.run("k", 5, "CA", boot, outputs=[sub(s0, c0, "_output_event", "o1")])
    else:
        h.run("k", 5, "CA", boot, "P", calls=[(f"{s1}#{c1}", "PENDING")])
    h.run("k", 5, "GA", sub(s1, c1, "_input_event", "g1", scope="checker"),
          outputs=[sub(s1, c1, "_output_event", "g2", scope="checker")])
    return h, s1, c1


@pytest.mark.parametrize("inner_caller_done", [False, True])
def test_nested_calls_make_the_child_a_caller_one_level_down(inner_caller_done: bool) -> None:
    h, s1, _ = nested(inner_caller_done=inner_caller_done)
    tree = subagent_tree(h.log(), "k", 5, action_names=["P", "CA"])
    assert nx.is_arborescence(tree)
    ga = next(n for n, d in tree.nodes(data=True) if d.get("label") == "GA")
    assert _path_labels(tree, ga) == ["round", "P", "session", "call", "CA", "session", "call", "GA"]
    inner = tree.nodes[f"session:{s1}"]
    assert inner["target_scope"] == "checker" and inner["level"] == 2
    assert inner["attribution"] == ("namespace-digest" if inner_caller_done else "call-result")
    assert tree.nodes[ga]["level"] == 2
    levels = {d["label"]: d["level"] for _, d in tree.nodes(data=True) if d["kind"] == "action"}
    assert levels == {"P": 0, "CA": 1, "GA": 2}
    statuses = {d["session_id"]: d["call_status"] for _, d in tree.nodes(data=True) if d["kind"] == "call"}
    assert statuses[s1] == ("consumed" if inner_caller_done else "done")


def test_unattributed_calls_are_kept_next_to_attributed_ones() -> None:
    h, s, _ = s01(caller_calls=True)
    stray = "00000000-0000-3000-8000-000000000000-0"
    h.run("k", 5, "XA", sub(stray, f"{stray}-1", "_input_event", "x1", scope="ghost"), "I")
    tree = subagent_tree(h.log(), "k", 5)
    assert nx.is_arborescence(tree)
    assert tree.graph["attributions"] == {s: "call-result", stray: "unattributed"}
    stray_call = tree.nodes[f"call:{stray}-1"]
    assert stray_call["attribution"] == "unattributed" and stray_call["call_status"] == "in-flight"
    xa = next(n for n, d in tree.nodes(data=True) if d["kind"] == "action" and d.get("target_scope") == "ghost")
    assert _path_labels(tree, xa)[:3] == ["round", "unattributed", "session"]


def test_digest_keys_need_the_key_text_for_namespace_attribution() -> None:
    h = History(key_format="K2")
    a1 = inp("A", "a1")
    s, c = session_ids("k", 5, "P", a1)
    h.run("k", 5, "P", a1, "I")
    h.run("k", 5, "CA", sub(s, c, "_input_event", "b1"))
    log = h.log()
    digest = log.records["business_key"].iloc[0]
    assert digest != "k"
    assert _only(subagent_tree(log, digest, 5, action_names=["P"]), "call")["attribution"] == "unattributed"
    tree = subagent_tree(log, digest, 5, action_names=["P"], key_text="k")
    assert _only(tree, "call")["attribution"] == "namespace-digest"


def test_resumed_caller_is_one_node_across_attempts() -> None:
    h, s, c = s01()
    a1 = inp("A", "a1-again")
    h.run("k", 5, "P", a1, calls=[(f"{s}#{c}", "SUCCEEDED")], outputs=[out("LGTM", "p-out")])
    tree = subagent_tree(h.log(), "k", 5)
    callers = [n for n, d in tree.nodes(data=True) if d.get("role") == "caller"]
    assert len(callers) == 1
    d = tree.nodes[callers[0]]
    assert d["attempt"] == 2 and d["completed"] and len(d["executions"]) == 2
    assert _only(tree, "call")["call_status"] == "consumed"


def test_a_round_without_sub_agents_is_just_its_root() -> None:
    h = History()
    h.run("k", 5, "IA", inp("A", "a1"))
    tree = subagent_tree(h.log(), "k", 5)
    assert list(tree.nodes) == ["round:5"]


_sessions = st.lists(
    st.tuples(
        st.booleans(),                                      # session ids derived from the caller (else stray)
        st.lists(st.sampled_from("CIP"), min_size=1, max_size=4),   # a chain of children and their statuses
        st.booleans(),                                      # the caller records the call result
    ),
    min_size=1, max_size=4,
)


@settings(deadline=None, max_examples=40)
@given(_sessions, st.sampled_from("CIP"), st.booleans())
def test_tree_invariants_on_generated_rounds(sessions, caller_status, named) -> None:
    h = History()
    a1 = inp("A", "a1")
    calls, plan = [], []
    for n, (derived, chain, recorded) in enumerate(sessions):
        s, c = session_ids("k", 5, "P", a1, session=n) if derived else (f"stray-{n}", f"stray-{n}-1")
        plan.append((s, c, chain))
        if recorded:
            calls.append((f"{s}#{c}", "SUCCEEDED"))
    h.run("k", 5, "P", a1, caller_status, calls=calls, outputs=[out("x", "px")] if named else ())
    for s, c, chain in plan:
        event = sub(s, c, "_input_event", f"{s}.b")
        for i, status in enumerate(chain):
            nxt = sub(s, c, "_output_event" if i == len(chain) - 1 else "CE", f"{s}.f{i}")
            emitted = h.run("k", 5, f"CA{i}", event, status, outputs=[nxt] if status == "C" else ())
            if not emitted:
                break
            event = emitted[0]
    log = h.log()
    tree = subagent_tree(log, "k", 5)
    assert nx.is_arborescence(tree)
    recs = log.records
    child_rows = set(recs.index[recs["task_event_type"] == "InternalSubagentCallEvent"])
    covered = [p for _, d in tree.nodes(data=True) if d.get("role") in ("bootstrap", "forwarded")
               for p in d["positions"]]
    assert sorted(covered) == sorted(child_rows)
    for _, d in tree.nodes(data=True):
        if d["kind"] == "call":
            assert d["call_status"] in CALL_STATUSES and d["attribution"] in ATTRIBUTIONS
            if d["session_id"].startswith("stray"):
                assert d["attribution"] in ("unattributed", "call-result")
            if d["caller"] is not None and tree.nodes[d["caller"]]["completed"]:
                assert d["call_status"] == "consumed"
    name_known = named and caller_status == "C"  # a name is written only on a completed record's outputs
    for (s, _, _), (_, _, recorded) in zip(plan, sessions):
        expected = "call-result" if recorded else (
            "namespace-digest" if name_known and not s.startswith("stray") else "unattributed")
        assert tree.graph["attributions"][s] == expected


def test_a_call_result_cut_by_a_later_mismatch_still_attributes_the_call() -> None:
    # spec §9.4: a non-deterministic call truncates the journal; the caller's last record lost s#c.
    h = History()
    a1 = inp("A", "a1")
    s, c = session_ids("k", 5, "P", a1)
    h.run("k", 5, "P", a1, "P", calls=[(f"{s}#{c}", "PENDING")])
    cut = CallResult(function_id="other.call", status="SUCCEEDED", result_payload="Im9rIg==")
    h.batch.append(0, len(h.batch), None, h.batch.key[-1], h._state(a1, calls=[cut]))
    h.run("k", 5, "CA", sub(s, c, "_input_event", "b1"))
    tree = subagent_tree(h.log(), "k", 5)
    assert _only(tree, "call")["attribution"] == "call-result"


def test_tree_lanes_put_each_attempts_children_in_a_whole_tree_of_its_own():
    import agent_inspect as ai

    tree = nx.DiGraph(seq=5)
    tree.add_node("round:5", kind="round")
    tree.add_node("caller", kind="action", attempt=1, role="caller")
    tree.add_node("call", kind="call")
    tree.add_node("c1", kind="action", attempt=1)
    tree.add_node("c2", kind="action", attempt=2)
    tree.add_node("result", kind="result", produced_by="c2")
    nx.add_path(tree, ["round:5", "caller", "call", "c1"])
    tree.add_edge("call", "c2")
    tree.add_edge("call", "result")
    laned = ai.history.tree_lanes(tree)
    lane = dict(laned.nodes(data="attempt"))
    assert lane["c1"] == 1 and lane["c2"] == 2 and lane["caller"] == 1 and lane["result"] == 2
    assert lane[("call", 1)] == 1 and lane[("call", 2)] == 2 and "call" not in laned   # one call node per lane
    assert lane[("round:5", 1)] == 1 and lane[("round:5", 2)] == 2
    # the caller attempt 1 ran opened the call attempt 2 ran again: an edge into the other lane
    assert laned.has_edge("caller", ("call", 2)) and laned.has_edge(("call", 2), "c2")
    assert laned.has_edge(("call", 2), "result") and not laned.has_edge(("call", 1), "result")
    drawing = ai.history.layered_drawing(laned, lane="attempt")
    assert set(drawing.lanes) == {1, 2}
    assert drawing.positions["c1"][0] < drawing.positions["c2"][0]
    single = ai.history.tree_lanes(tree.subgraph(["round:5", "caller", "call", "c1"]).copy())
    assert set(dict(single.nodes(data="attempt")).values()) == {1} and set(single) == {"round:5", "caller", "call", "c1"}
