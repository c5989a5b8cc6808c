"""Action graphs of divergence-case histories, built from real encoded logs (divergence-cases.md)."""

from __future__ import annotations

import networkx as nx
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_inspect._errors import RecoveryError
from agent_inspect.history._graph import NOT_IN_LOG, action_graph, graph_edges, graph_nodes
from agent_inspect.history._layout import layered_layout

try:
    from test_graph_support import History, inp, out, work
except ImportError:  # collected as part of a package
    from .test_graph_support import History, inp, out, work


def _kinds(g: nx.DiGraph) -> tuple[int, int]:
    actions = sum(1 for _, d in g.nodes(data=True) if d["kind"] == "action")
    return actions, g.number_of_nodes() - actions


def _action(g: nx.DiGraph, label: str, seq: int, attempt: int | None = None) -> str:
    found = [
        n for n, d in g.nodes(data=True)
        if d["kind"] == "action" and d["label"] == label and d["seq"] == seq
        and (attempt is None or d["attempt"] == attempt)
    ]
    assert len(found) == 1, (label, seq, attempt, found)
    return found[0]


def n04(**fmt: str) -> History:
    h = History(**fmt)
    w1 = h.run("k", 5, "IA", inp("A", "a1"), outputs=[work("a", "w1")])
    h.run("k", 5, "WA", w1[0], outputs=[out("done-a", "o1")])
    w2 = h.run("k", 6, "IA", inp("B", "b1"), outputs=[work("b", "w2")])
    if fmt.get("value_format") == "V0":  # 0.1 had no durable calls and no completed flag
        h.run("k", 6, "WA", w2[0], "I")
    else:
        h.run("k", 6, "WA", w2[0], "P", calls=[("my_agent.ask_llm", "SUCCEEDED"), ("my_agent.post", "PENDING")])
    return h


def test_cascade_two_rounds_nodes_edges_and_lineage() -> None:
    log = n04().log()
    g = action_graph(log, "k")
    assert _kinds(g) == (4, 5)  # IA, WA per round; a1, w1, o1, b1, w2
    edges = graph_edges(g)
    assert len(edges) == 7
    assert set(edges["kind"]) == {"triggers", "emits"}
    assert not edges["inferred"].any()
    for u, v, d in g.edges(data=True):
        assert (g.nodes[u]["kind"], g.nodes[v]["kind"]) == (
            ("event", "action") if d["kind"] == "triggers" else ("action", "event"))
    ia5, wa5 = _action(g, "IA", 5), g.successors("event:w1")
    assert list(g.successors(ia5)) == ["event:w1"]
    assert g.nodes["event:a1"]["is_root"] and not g.nodes["event:w1"]["is_root"]
    assert g.graph["rounds"] == (5, 6) and g.graph["attempts"] == (1,)
    assert g.graph["statuses_known"] is False
    assert {d["status"] for _, d in g.nodes(data=True)} == {"unknown"}
    wa5 = next(iter(wa5))
    assert g.nodes[wa5]["completed"] and g.nodes[wa5]["positions"] == (2, 3)
    # The round-6 child is still running: its call journal is what the node reports.
    wa6 = next(iter(g.successors("event:w2")))
    d = g.nodes[wa6]
    assert (d["completed"], d["calls_succeeded"], d["calls_pending"], d["calls_failed"]) == (False, 1, 1, 0)
    assert d["positions"] == (6, 7, 8) and d["writes"] == 3 and not d["resumed"]


def test_one_round_selects_its_subgraph() -> None:
    log = n04().log()
    g = action_graph(log, "k", seq=6)
    assert _kinds(g) == (2, 2)
    assert g.number_of_edges() == 3
    assert g.graph["seq"] == 6 and g.graph["rounds"] == (6,)
    assert nx.is_directed_acyclic_graph(g)
    assert [g.nodes[n]["event_type"] for n in nx.topological_sort(g) if g.nodes[n]["kind"] == "event"] == [
        "_input_event", "WorkEvent"]


def test_unknown_key_is_a_clear_error() -> None:
    with pytest.raises(RecoveryError, match="log.keys"):
        action_graph(n04().log(), "nope")


def g01() -> History:
    h = History()
    h.run("k", 5, "IA", inp("A", "a1"))            # att1
    h.run("k", 5, "IA", inp("B", "b1"))            # att2: another input at seq 5 (source order changed)
    h.run("k", 6, "IA", inp("C", "c1"))
    h.run("k", 5, "IA", inp("A", "a3"))            # att3 (G03 line 4): back to seq 5
    return h


def test_attempts_from_the_log_alone() -> None:
    g = action_graph(g01().log(), "k")
    attempts = {g.nodes[n]["task_event_id"]: g.nodes[n]["attempt"] for n in g if g.nodes[n]["kind"] == "action"}
    assert attempts == {"a1": 1, "b1": 2, "c1": 2, "a3": 3}
    assert g.graph["attempts"] == (1, 2, 3)
    only = action_graph(g01().log(), "k", attempt=2)
    assert sorted(d["task_event_id"] for _, d in only.nodes(data=True) if d["kind"] == "action") == ["b1", "c1"]
    assert only.graph["attempt"] == 2


def test_identical_attribute_fan_out_keeps_the_unserved_event() -> None:
    # G09: WA ran once for W{}#1; W{}#2 hit #1's record and never ran, so #2 triggers nothing.
    h = History()
    ws = h.run("k", 5, "FA", inp("A", "a1"), outputs=[work(None, "1"), work(None, "2")])
    h.run("k", 5, "WA", ws[0])
    h.run("k", 6, "FA", inp("B", "b1"))
    g = action_graph(h.log(), "k")
    assert _kinds(g) == (3, 4)
    assert g.out_degree("event:1") == 1 and g.out_degree("event:2") == 0
    assert g.in_degree("event:2") == 1


def test_tombstones_mark_their_execution() -> None:
    h = History()
    h.run("k", 5, "IA", inp("A", "a1"))
    h.run("k", 5, "IA", inp("B", "b1"))
    h.tomb("k", 5, "IA", inp("A", "x"))
    h.tomb("k", 5, "IA", inp("B", "y"))
    h.run("k", 6, "IA", inp("C", "c1"))
    g = action_graph(h.log(), "k")
    assert _kinds(g) == (3, 3)
    tombstoned = {g.nodes[n]["task_event_id"] for n in g if g.nodes[n].get("tombstoned")}
    assert tombstoned == {"a1", "b1"}


def test_missing_emitter_becomes_a_marked_placeholder_v3() -> None:
    # N13: the window starts after IA's completion record; WA's taskEvent still names its emitter.
    h = History()
    outs = History().run("k", 5, "IA", inp("A", "a1"), outputs=[work("a", "w1")])
    h.run("k", 5, "WA", outs[0])
    h.run("k", 6, "IA", inp("B", "b1"))
    g = action_graph(h.log(), "k")
    placeholder = "action:?a1/IA"
    assert g.nodes[placeholder]["placeholder"] and g.nodes[placeholder]["status"] == NOT_IN_LOG
    assert g.nodes[placeholder]["label"] == "IA"
    assert list(g.successors(placeholder)) == ["event:w1"]
    assert g.nodes["event:a1"]["in_log"] is False
    assert g.edges[placeholder, "event:w1"]["inferred"] and g.edges["event:a1", placeholder]["inferred"]
    assert not g.nodes["event:w1"]["orphan"]


def test_missing_emitter_without_lineage_is_kept_as_an_orphan_v2b() -> None:
    h = History(value_format="V2b")
    outs = History().run("k", 5, "IA", inp("A", "a1"), outputs=[work("a", "w1")])
    h.run("k", 5, "WA", outs[0])
    g = action_graph(h.log(), "k")
    assert _kinds(g) == (1, 1)
    event = g.nodes["event:w1"]
    assert event["orphan"] and "pre-V3" in event["lineage_note"]
    (action,) = g.successors("event:w1")
    assert not g.nodes[action]["lineage_fields"] and g.nodes[action]["status"] == "unknown"


@pytest.mark.parametrize("key_format", ["K0", "K1", "K1.5-draft", "K1.5", "K1.6", "K2"])
@pytest.mark.parametrize("value_format", ["V0", "V1", "V2a", "V2b", "V3", "V3+"])
def test_every_key_and_value_format_gives_the_same_structure(key_format: str, value_format: str) -> None:
    log = n04(key_format=key_format, value_format=value_format).log()
    key = log.records["business_key"].dropna().iloc[0]
    g = action_graph(log, key)
    assert _kinds(g) == (4, 5)
    assert g.number_of_edges() == 7
    lineage = {g.nodes[n]["lineage_fields"] for n in g if g.nodes[n]["kind"] == "action"}
    assert lineage == {value_format in ("V3", "V3+")}
    if key_format != "K0":
        assert g.graph["rounds"] == (5, 6)


def test_frames_have_one_row_per_node_and_edge() -> None:
    g = action_graph(n04().log(), "k")
    nodes, edges = graph_nodes(g), graph_edges(g)
    assert list(nodes.index) == list(g.nodes) and nodes.index.name == "node"
    assert {"kind", "label", "status", "reason", "seq", "attempt", "positions", "completed",
            "calls_pending", "calls_succeeded", "calls_failed", "state_key"} <= set(nodes.columns)
    assert list(edges.columns[:3]) == ["source", "target", "kind"]
    assert len(edges) == g.number_of_edges()
    assert nodes.loc[nodes["kind"] == "action", "calls_succeeded"].sum() == 1
    assert isinstance(nodes.loc["event:a1", "status"], str)
    empty = graph_edges(nx.DiGraph())
    assert list(empty.columns) == ["source", "target", "kind"] and len(empty) == 0
    assert isinstance(graph_nodes(nx.DiGraph()), pd.DataFrame)


def test_an_undecodable_value_stays_a_marked_node() -> None:
    h = n04()
    h.batch.append(0, len(h.batch), None, h.batch.key[0], b'{"taskEvent": [broken')
    log = h.log()
    g = action_graph(log, "k")
    broken = [d for _, d in g.nodes(data=True) if d["kind"] == "action" and d.get("error")]
    assert len(broken) == 1 and broken[0]["positions"] == (len(log.records) - 1,)


_steps = st.lists(
    st.tuples(
        st.integers(5, 7),                                  # seq
        st.sampled_from("ABC"),                             # root input
        st.lists(st.sampled_from("CIP"), max_size=3),       # children (one per output) and their status
        st.sampled_from("CIP"),                             # root status
    ),
    min_size=1, max_size=8,
)


@settings(deadline=None, max_examples=40)
@given(_steps, st.sampled_from([("K1", "V3"), ("K1.5", "V2b"), ("K2", "V3+"), ("K1.6", "V1")]))
def test_graph_invariants_on_generated_histories(steps, formats) -> None:
    key_format, value_format = formats
    h = History(key_format=key_format, value_format=value_format)
    for i, (seq, letter, kids, status) in enumerate(steps):
        outs = [work(f"{letter}{j}", f"w{i}.{j}") for j in range(len(kids))] if status == "C" else []
        emitted = h.run("k", seq, "IA", inp(letter, f"in{i}"), status, outputs=outs, calls=[("f", "SUCCEEDED")])
        for j, (ev, kid) in enumerate(zip(emitted, kids)):
            h.run("k", seq, f"WA{j}", ev, kid, calls=[("g", "PENDING")] if kid == "P" else ())
    log = h.log()
    key = log.records["business_key"].iloc[0]
    g = action_graph(log, key)
    rows = log.records
    actions = [n for n, d in g.nodes(data=True) if d["kind"] == "action" and not d["placeholder"]]
    covered = sorted(p for n in actions for p in g.nodes[n]["positions"])
    assert covered == list(rows.index[~rows["tombstone"].astype(bool)])
    for n in actions:
        d = g.nodes[n]
        (trigger,) = g.predecessors(n)
        assert g.edges[trigger, n]["kind"] == "triggers"
        assert g.nodes[trigger]["event_id"] == d["task_event_id"]
        emitted_ids = set(rows.loc[d["last_pos"], "output_event_ids"])
        for _, target, e in g.out_edges(n, data=True):
            assert e["kind"] == "emits" and (e["inferred"] or g.nodes[target]["event_id"] in emitted_ids)
    firsts = sorted((g.nodes[n]["first_pos"], g.nodes[n]["attempt"]) for n in actions)
    assert [a for _, a in firsts] == sorted(a for _, a in firsts)
    assert len(graph_nodes(g)) == g.number_of_nodes() and len(graph_edges(g)) == g.number_of_edges()
    pos = layered_layout(g)
    assert all(pos[v][1] < pos[u][1] for u, v in g.edges)


def test_sources_without_values_are_refused_with_a_reason() -> None:
    from agent_inspect.recovery import reconstruct

    log = n04().log()
    with pytest.raises(RecoveryError, match="ActionStateLog"):
        action_graph(reconstruct(log.records, rule="fixed"), "k")
    with pytest.raises(TypeError, match="ActionStateLog or a Reconstruction"):
        action_graph(log.records, "k")


def test_unknown_round_is_a_clear_error() -> None:
    with pytest.raises(RecoveryError, match=r"no round seq=9; its rounds are: 5, 6"):
        action_graph(n04().log(), "k", seq=9)
    assert action_graph(n04().log(), "k", seq=5, attempt=2).number_of_nodes() == 0


def test_an_unknown_round_lists_ten_rounds_then_an_ellipsis() -> None:
    h = History()
    for s in range(12):
        h.run("k", s, "IA", inp("A", f"a{s}"))
    with pytest.raises(RecoveryError, match=r"no round seq=99; its rounds are: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, …$"):
        action_graph(h.log(), "k", seq=99)
