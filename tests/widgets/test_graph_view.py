from __future__ import annotations

import html

import pytest
from _widget_agents import subagent_log
from _widget_logs import IMG
from _widget_view import click

import agent_inspect as ai
from agent_inspect.widgets import GraphView, SubagentTreeView

KEY = f"user-{IMG}"


def _node_traces(view):
    return [t for t in view.figure.data if t.name != "edges"]


def test_every_node_is_drawn_with_its_status(probe_result):
    view = GraphView(probe_result, KEY)
    graph = probe_result.graph(KEY)
    assert view.graph.number_of_nodes() == graph.number_of_nodes() > 0
    drawn = [view._nodes[i] for t in _node_traces(view) for i in t.customdata]
    assert sorted(map(str, drawn)) == sorted(map(str, graph.nodes))
    edges = view.figure.data[0]
    assert len(edges.x) == 3 * graph.number_of_edges()
    invalidated = [t for t in _node_traces(view) if t.name.endswith("· invalidated")]
    assert invalidated and all(t.marker.line.color == "#d62728" for t in invalidated)
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
    assert any(n.startswith("call · ") for n in names)
    calls = [d for _, d in view.graph.nodes(data=True) if d["kind"] == "call"]
    assert any(f"call · {d['call_status']}" in names for d in calls)
    for i in range(1, len(view.figure.data)):
        click(view.figure, i, 0)
        node = view._nodes[int(view.figure.data[i].customdata[0])]
        assert view.selected_node == node
        assert f"node {html.escape(str(node))}" in view.detail.value


def test_round_picker_switches_rounds(probe_result):
    view = GraphView(probe_result, KEY)
    assert view.seq is None and [v for _, v in view.round_picker.options] == [None, 0, 1]
    everything = view.graph.number_of_nodes()
    view.round_picker.value = 1
    assert view.seq == 1 and 0 < view.graph.number_of_nodes() < everything
    assert {d.get("seq") for _, d in view.graph.nodes(data=True) if d["kind"] == "action"} == {1}
    drawn = sum(len(t.customdata) for t in _node_traces(view))
    assert drawn == view.graph.number_of_nodes()
    assert "seq 1" in view.title.value


def test_labelled_graphs_are_svg_and_large_ones_webgl(probe_result):
    # WebGL text would show "&lt;" literally, so only unlabelled (large) graphs use scattergl.
    small = GraphView(probe_result, KEY, seq=0)
    assert {t.type for t in small.figure.data} == {"scatter"}
    assert all(t.text is not None for t in _node_traces(small))
    from _widget_logs import Journal, round_

    journal = Journal()
    for seq in range(30):
        round_(journal, "big", seq, {"input": seq})
    big_result = ai.reconstruct(journal.log(), rule="fixed")
    big = GraphView(big_result, "big")
    assert big.graph.number_of_nodes() > 80
    assert {t.type for t in big.figure.data} == {"scattergl"}
    assert all(t.text is None for t in _node_traces(big))
