from __future__ import annotations

import html

import numpy as np
import pytest
from _widget_agents import subagent_log
from _widget_logs import IMG
from _widget_view import click

import agent_inspect as ai
from agent_inspect.widgets import GraphView, SubagentTreeView
from agent_inspect.widgets._style import colour

KEY = f"user-{IMG}"


def _node_traces(view):
    return [t for t in view.figure.data if t.name not in ("edges", "divergence point")]


def test_every_node_is_drawn_with_its_status(probe_result):
    view = GraphView(probe_result, KEY)
    graph = probe_result.graph(KEY)
    assert view.graph.number_of_nodes() == graph.number_of_nodes() > 0
    drawn = [view._nodes[i] for t in _node_traces(view) for i in t.customdata]
    assert sorted(map(str, drawn)) == sorted(map(str, graph.nodes))
    edges = view.figure.data[0]
    assert len(edges.x) == 3 * graph.number_of_edges()
    invalidated = [t for t in _node_traces(view) if t.name.endswith("· invalidated")]
    assert invalidated and all(t.marker.line.color == colour("bad") for t in invalidated)
    statuses = {d.get("status") for _, d in graph.nodes(data=True)}
    assert "invalidated" in statuses


def test_layout_is_layered_and_deterministic(probe_result):
    a = GraphView(probe_result, KEY, seq=0)
    b = GraphView(probe_result, KEY, seq=0)
    assert a.positions == b.positions
    for u, v in a.graph.edges:
        assert a.positions[u][1] > a.positions[v][1]  # edges go down, sources on top


def test_click_a_node_shows_its_attributes_and_record(probe_result):
    view = GraphView(probe_result, KEY, seq=0)
    index = next(i for i, t in enumerate(view.figure.data) if t.name.startswith("action"))
    click(view.figure, index, 0)
    node = view.selected_node
    assert node is not None and view.graph.nodes[node]["kind"] == "action"
    pos = view.graph.nodes[node]["positions"][0]
    assert f"record {pos}" in view.detail.value and "taskEvent" in view.detail.value


@pytest.fixture(scope="module")
def subagent_result():
    return ai.reconstruct(subagent_log(), rule="fixed")


def test_subagent_tree_shows_caller_session_call_and_child(subagent_result):
    key = subagent_result.records["business_key"].iloc[0]
    view = SubagentTreeView(subagent_result, key, 1)
    assert "ai-subagent-tree" in view._dom_classes
    kinds = {d["kind"] for _, d in view.graph.nodes(data=True)}
    assert {"round", "action", "session", "call"} <= kinds
    names = {t.name for t in _node_traces(view)}
    assert "call" in names   # structure is one neutral entry; its status is in its label
    calls = [d for _, d in view.graph.nodes(data=True) if d["kind"] == "call"]
    labels = [x for t in _node_traces(view) if t.name == "call" for x in t.text]
    assert all(any(d["call_status"] in x for x in labels) for d in calls)
    for i in range(1, len(view.figure.data)):
        click(view.figure, i, 0)
        node = view._nodes[int(view.figure.data[i].customdata[0])]
        assert view.selected_node == node
        assert f"node {html.escape(str(node))}" in view.detail.value


def test_round_picker_switches_rounds(probe_result):
    view = GraphView(probe_result, KEY)
    assert view.seq is None and list(view.round_picker.options) == ["all rounds", "seq 0", "seq 1"]
    assert view.round_picker.value == "all rounds"
    everything = view.graph.number_of_nodes()
    view.round_picker.value = "seq"  # typing: nothing changes until a round is named
    assert view.seq is None
    view.round_picker.value = "7"  # not a round of the key
    assert view.seq is None
    view.round_picker.value = "1"  # a typed number picks its round
    assert view.seq == 1 and view.round_picker.value == "seq 1"
    view.round_picker.value = "all rounds"
    assert view.seq is None
    view.round_picker.value = "seq 1"
    assert view.seq == 1 and 0 < view.graph.number_of_nodes() < everything
    assert {d.get("seq") for _, d in view.graph.nodes(data=True) if d["kind"] == "action"} == {1}
    drawn = sum(len(t.customdata) for t in _node_traces(view))
    assert drawn == view.graph.number_of_nodes()
    assert "seq 1" in view.title.value


def _big_result(rounds: int = 30, restore_at: int | None = None):
    from _widget_logs import Journal, round_

    journal = Journal()
    for seq in range(rounds):
        round_(journal, "big", seq, {"input": seq})
    if restore_at is not None:  # a restore that re-runs the later rounds with other inputs: a 2nd attempt
        for seq in range(restore_at, rounds):
            round_(journal, "big", seq, {"input": f"again {seq}"})
    return ai.reconstruct(journal.log(), rule="fixed")


def test_labelled_graphs_are_svg_and_large_ones_webgl(probe_result):
    # WebGL text would show "&lt;" literally, so only unlabelled (large) graphs use scattergl.
    small = GraphView(probe_result, KEY, seq=0)
    assert {t.type for t in small.figure.data} == {"scatter"}
    assert all(t.text is not None for t in _node_traces(small))
    grouped = GraphView(_big_result(), "big")
    assert grouped.graph.number_of_nodes() > 80
    grouped.expanded = {("round", 1, s) for s in range(30)}  # every round open: the whole graph, still labelled
    grouped._redraw()
    assert grouped.shown.number_of_nodes() == grouped.graph.number_of_nodes()
    assert {t.type for t in grouped.figure.data} == {"scatter"} and all(t.text is not None for t in _node_traces(grouped))
    big = ai.inspect(grouped.graph)  # a graph passed in is drawn as it is: unlabelled WebGL
    assert {t.type for t in big.figure.data} == {"scattergl"}
    assert all(t.text is None for t in _node_traces(big))


def test_big_graphs_fold_into_labelled_round_groups(probe_result):
    result = _big_result()
    view = GraphView(result, "big")
    whole = view.graph
    assert view.grouped and whole.number_of_nodes() > 80
    # one attempt: one labelled group per round, collapsed
    assert view.shown.number_of_nodes() == 30
    assert all(d["kind"] == "round" and d["group"] for _, d in view.shown.nodes(data=True))
    labels = [x for t in _node_traces(view) for x in t.text]
    assert len(labels) == 30 and any("seq 7" in x and "actions" in x for x in labels)
    assert {t.type for t in view.figure.data} == {"scatter"}
    assert "drawn as 30" in view.title.value
    # click a group: its actions appear, every other round stays folded
    index = view._nodes.index(("round", 1, 7))
    trace = next(i for i, t in enumerate(view.figure.data) if t.customdata is not None and index in t.customdata)
    click(view.figure, trace, list(view.figure.data[trace].customdata).index(index))
    inside = [n for n in whole if whole.nodes[n].get("seq") == 7]
    assert ("round", 1, 7) not in view.shown and all(n in view.shown for n in inside)
    assert view.shown.number_of_nodes() == 29 + len(inside)
    assert sum(d["count"] for *_, d in view.shown.edges(data=True) if "count" in d) >= 0
    view.collapse_all()
    assert view.shown.number_of_nodes() == 30
    # a single round is drawn whole, unfolded
    view.show_round(7)
    assert not view.grouped and view.shown is view.graph


def test_attempts_fold_above_rounds_and_edges_have_arrowheads():
    result = _big_result(30, restore_at=20)
    view = GraphView(result, "big")
    top = dict(view.shown.nodes(data=True))
    assert set(top) == {("attempt", 1), ("attempt", 2)}
    assert top[("attempt", 2)]["rounds"] == 10 and "attempt 2 · 10 rounds" in top[("attempt", 2)]["label"]
    assert top[("attempt", 1)]["status"] == "invalidated"  # the most telling status of its actions
    view.expand(("attempt", 2))
    kinds = sorted(d["kind"] for _, d in view.shown.nodes(data=True))
    assert kinds == ["attempt"] + ["round"] * 10
    view.expand(("round", 2, 25))
    assert any(d.get("kind") == "action" and d.get("seq") == 25 for _, d in view.shown.nodes(data=True))
    view.collapse(("attempt", 2))
    assert view.shown.number_of_nodes() == 2 and view.expanded == set()
    # edges: one SVG trace, one arrowhead per edge at its last point, turned along its last segment
    small = GraphView(result, "big", seq=0)
    edges = small.figure.data[0]
    assert edges.name == "edges" and edges.mode == "lines+markers"
    assert edges.marker.symbol == "arrow" and edges.marker.angleref == "previous"
    sizes = np.array(edges.marker.size)
    assert np.count_nonzero(sizes == 9) == small.graph.number_of_edges() and not sizes[np.isnan(edges.x)].any()
    below, above = small.geometry.below, small.geometry.above
    for (u, v), route in zip(small.graph.edges, _routes(edges), strict=True):
        # each edge leaves its source under the source's label and ends, arrowhead first, above its target
        (x0, y0), (x1, y1) = small.positions[u], small.positions[v]
        assert route[0] == pytest.approx((x0, y0 - below)) and route[-1] == pytest.approx((x1, y1 + above))


def test_a_long_chain_of_expanded_rounds_wraps_into_bands():
    result = _big_result(30, restore_at=20)
    view = GraphView(result, "big")
    view.expand(("attempt", 1))
    view.expand(("attempt", 2))
    assert ai.history.layered_drawing(view.shown, lane="attempt").layers > 30      # one column: 2,300 px
    assert len(view._band_shifts) > 1 and view.figure.layout.height < 1100
    rows = {round(y) for _, y in view.positions.values()}
    assert len(rows) <= 12                                          # was one row per layer, over 30
    wraps = [r for r in view.routes.values() if len(r) == 6]
    assert wraps and all(r[2][0] == r[3][0] for r in wraps)         # each climbs its gutter
    assert all(r[-2][1] > r[-1][1] for r in wraps)                  # and enters its target from above
    titles = [a.text for a in view.figure.layout.annotations if "attempt" in (a.text or "")]
    assert titles.count("<b>attempt 1</b>") == len(view._band_shifts)
    view.collapse_all()
    assert view._band_shifts == (0.0,)


def _routes(trace):
    """The NaN-separated polylines of an edges trace."""
    out, current = [], []
    for x, y in zip(trace.x, trace.y, strict=True):
        if np.isnan(x):
            out.append(current)
            current = []
        else:
            current.append((x, y))
    return out


def test_many_rounds_fold_into_ranges_first():
    from agent_inspect.history import MAX_CHILDREN, group_graph

    result = _big_result(90)
    view = GraphView(result, "big")
    top = dict(view.shown.nodes(data=True))
    assert 1 < len(top) <= MAX_CHILDREN and all(d["kind"] == "rounds" for d in top.values())
    assert sum(d["rounds"] for d in top.values()) == 90
    first = min(top, key=lambda g: g[2])
    assert top[first]["label"].startswith(f"seq 0–{first[3]} · attempt 1 · {first[3] + 1} rounds")
    view.expand(first)
    inside = [n for n, d in view.shown.nodes(data=True) if d["kind"] == "round"]
    assert len(inside) == first[3] + 1
    view.expand(("round", 1, 0))
    assert any(d.get("kind") == "action" for _, d in view.shown.nodes(data=True))
    view.collapse(first)  # folds the rounds inside it too
    assert dict(view.shown.nodes(data=True)).keys() == top.keys() and view.expanded == set()
    # folded, the ranges keep the order of their rounds; fully open, it is the whole graph again
    whole = view.graph
    folded = group_graph(whole)
    assert [d["kind"] for *_, d in folded.edges(data=True)] == ["next"] * (folded.number_of_nodes() - 1)
    opened = group_graph(whole, set(folded.nodes) | {("round", 1, s) for s in range(90)})
    assert set(opened.nodes) == set(whole.nodes) and set(opened.edges) == set(whole.edges)


def test_a_clicked_action_shows_the_readers_reason_and_the_rules_words():
    """The graph reads reconstruct's outcome: ``outcome_reason`` in a reader's words, ``rule_note`` the rule's."""
    result = ai.reconstruct(ai.load(ai.samples.path("production")), rule="original",
                            markers=ai.samples.markers("production"))
    records = result.records
    rerun = records[records["outcome_reason"].str.contains("evicted it", na=False)].iloc[0]
    view = GraphView(result, rerun["business_key"], seq=int(rerun["seq"]))
    node = next(n for n, a in view.graph.nodes(data=True) if a.get("outcome_reason") == rerun["outcome_reason"])
    click(view.figure, *next((i, j) for i, t in enumerate(view.figure.data) if t.customdata is not None
                             for j, n in enumerate(t.customdata) if view._nodes[n] == node))
    assert view.selected_node == node
    detail = html.unescape(view.detail.value)
    assert f'"outcome_reason": "{rerun["outcome_reason"]}"' in detail
    assert f'"rule_note": "{rerun["rule_note"]}"' in detail and "miss at" in rerun["rule_note"]


def test_a_clicked_evicted_action_says_what_removed_it_and_keeps_the_rules_words():
    """An evicted node's ``reason`` names the lookup that removed it; ``status_rule_note`` the rule's."""
    result = ai.reconstruct(ai.load(ai.samples.path("production")), rule="original",
                            markers=ai.samples.markers("production"))
    records = result.records
    gone = records[records["status"] == "evicted"].iloc[-1]
    view = GraphView(result, gone["business_key"], seq=int(gone["seq"]))
    node = next(n for n, a in view.graph.nodes(data=True) if a.get("kind") == "action" and a["status"] == "evicted")
    attrs = view.graph.nodes[node]
    assert attrs["reason"].startswith("the lookup of ") and "->" not in attrs["reason"]
    assert "> 1 -> evicted" in attrs["status_rule_note"]
    click(view.figure, *next((i, j) for i, t in enumerate(view.figure.data) if t.customdata is not None
                             for j, n in enumerate(t.customdata) if view._nodes[n] == node))
    detail = html.unescape(view.detail.value)
    assert f'"reason": "{attrs["reason"]}"' in detail
    assert f'"status_rule_note": "{attrs["status_rule_note"]}"' in detail


def test_a_divergence_click_on_a_folded_group_explains_the_task_inside_it():
    """The ✕ on a folded attempt group: the click expands the group and explains the action whose record
    triggered the divergence (it raised KeyError: the group node was gone once expanded)."""
    from agent_inspect.widgets._explain import ExplainView

    result = ai.reconstruct(ai.load(ai.samples.path("production")), rule="original",
                            markers=ai.samples.markers("production"))
    divergence = result.divergences[result.divergences["business_key"] == "user-0023"].iloc[0]
    view = GraphView(result, "user-0023")
    assert view.grouped
    index = next(i for i, t in enumerate(view.figure.data) if t.name == "divergence point")
    assert view.shown.nodes[view._nodes[int(view.figure.data[index].customdata[0])]].get("group")
    click(view.figure, index, 0)
    assert view.expanded, "the group unfolds"
    [story] = view.explain_box.children
    assert isinstance(story, ExplainView)
    assert story.explanation.key == "user-0023"
    assert [b.description for b in story.record_buttons] == [f"record {int(divergence['trigger_pos'])}"]


def test_a_click_on_the_diverging_node_beneath_its_ring_explains_it_too():
    """Under load the mouse picks the node beneath the ring as often as the ring: both explain the divergence."""
    from agent_inspect.widgets._explain import ExplainView

    result = ai.reconstruct(ai.load(ai.samples.path("production")), rule="original",
                            markers=ai.samples.markers("production"))
    view = GraphView(result, "user-0023")
    ring = next(t for t in view.figure.data if t.name == "divergence point")
    group = view._nodes[int(ring.customdata[0])]
    index, point = next((i, j) for i, t in enumerate(view.figure.data) if t.name != "divergence point"
                        and t.customdata is not None for j, n in enumerate(t.customdata) if view._nodes[n] == group)
    click(view.figure, index, point)
    [story] = view.explain_box.children
    assert isinstance(story, ExplainView) and story.explanation.key == "user-0023"
