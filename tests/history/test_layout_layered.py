"""The layered layout: edges point down, positions are unique and independent of build order."""

from __future__ import annotations

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

import agent_inspect as ai
from agent_inspect.history._layout import layered_layout


@st.composite
def dags(draw: st.DrawFn) -> nx.DiGraph:
    n = draw(st.integers(min_value=0, max_value=40))
    g = nx.DiGraph()
    g.add_nodes_from(f"n{i}" for i in range(n))
    for v in range(1, n):
        for u in draw(st.lists(st.integers(min_value=0, max_value=v - 1), max_size=3, unique=True)):
            g.add_edge(f"n{u}", f"n{v}")
    return g


@settings(deadline=None, max_examples=60)
@given(dags(), st.randoms(use_true_random=False))
def test_edges_go_down_and_layout_ignores_build_order(g: nx.DiGraph, rnd) -> None:
    pos = layered_layout(g)
    assert set(pos) == set(g.nodes)
    assert len(set(pos.values())) == len(pos)
    for u, v in g.edges:
        assert pos[v][1] < pos[u][1]
    for node, (_, y) in pos.items():
        if g.in_degree(node) == 0:
            assert y == 0.0
        else:
            # longest-path layering: exactly one layer below the deepest predecessor
            assert y == min(pos[p][1] for p in g.predecessors(node)) - 1
    nodes, edges = list(g.nodes), list(g.edges)
    rnd.shuffle(nodes)
    rnd.shuffle(edges)
    shuffled = nx.DiGraph()
    shuffled.add_nodes_from(nodes)
    shuffled.add_edges_from(edges)
    assert layered_layout(shuffled) == pos


@settings(deadline=None, max_examples=40)
@given(st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), max_size=40))
def test_cycles_and_self_loops_still_get_positions(edges: list[tuple[int, int]]) -> None:
    g = nx.DiGraph(edges)
    pos = layered_layout(g)
    assert set(pos) == set(g.nodes)
    assert len(set(pos.values())) == len(pos)
    assert layered_layout(g) == pos


def test_layers_are_centred_and_follow_the_order_attribute() -> None:
    g = nx.DiGraph()
    g.add_node("root", order=0)
    for i, name in enumerate(["c", "a", "b"]):
        g.add_node(name, order=i + 1)
        g.add_edge("root", name)
    pos = layered_layout(g)
    assert pos["root"] == (0.0, 0.0)
    assert [pos[n] for n in ("c", "a", "b")] == [(-1.0, -1.0), (0.0, -1.0), (1.0, -1.0)]


def test_barycentric_sweeps_remove_an_avoidable_crossing() -> None:
    g = nx.DiGraph()
    for i, name in enumerate(["a", "b", "y", "x"]):
        g.add_node(name, order=i)
    g.add_edges_from([("a", "x"), ("b", "y")])
    pos = layered_layout(g)
    assert (pos["a"][0] < pos["b"][0]) == (pos["x"][0] < pos["y"][0])


def test_empty_graph() -> None:
    assert layered_layout(nx.DiGraph()) == {}


def test_numpy_orders_are_honoured() -> None:
    import numpy as np

    g = nx.DiGraph()
    g.add_node("late", order=np.int64(9))
    g.add_node("early", order=np.int64(1))
    g.add_node("unordered")
    pos = layered_layout(g)
    assert pos["early"][0] < pos["late"][0] < pos["unordered"][0]


def test_long_edges_cross_layers_in_slots_of_their_own() -> None:
    from agent_inspect.history import layered_drawing

    g = nx.DiGraph()
    for i, name in enumerate(["a", "b", "c", "d", "x"]):
        g.add_node(name, order=i)
    g.add_edges_from([("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("x", "c")])
    drawing = layered_drawing(g)
    assert drawing.positions == layered_layout(g) and drawing.layers == 4
    route = drawing.routes[("a", "d")]
    assert route[0] == drawing.positions["a"] and route[-1] == drawing.positions["d"]
    # one point in each layer between, never where a node is
    assert [y for _, y in route[1:-1]] == [-1.0, -2.0]
    assert not set(route[1:-1]) & set(drawing.positions.values())
    assert drawing.routes[("a", "b")] == [drawing.positions["a"], drawing.positions["b"]]


def test_lanes_sit_side_by_side_and_share_layers() -> None:
    from agent_inspect.history import layered_drawing

    g = nx.DiGraph()
    for attempt in (2, 1):
        g.add_edge(f"in{attempt}", f"act{attempt}")
        g.add_edge(f"act{attempt}", f"out{attempt}")
        for n in (f"in{attempt}", f"act{attempt}", f"out{attempt}"):
            g.nodes[n]["attempt"] = attempt
    g.add_node("lone", attempt=1)
    drawing = layered_drawing(g, lane="attempt")
    lanes = drawing.lanes
    assert list(lanes) == [1, 2] and lanes[1][1] < lanes[2][0]
    for n, (x, _) in drawing.positions.items():
        left, right = lanes[g.nodes[n]["attempt"]]
        assert left <= x <= right
    assert drawing.positions["in1"][1] == drawing.positions["in2"][1] == 0.0
    assert drawing.positions["out1"][1] == drawing.positions["out2"][1] == -2.0
    assert layered_drawing(g).lanes == {}


def test_a_tall_chain_wraps_into_bands_side_by_side_with_edges_in_the_gutters():
    g = nx.DiGraph()
    for i in range(30):
        g.add_node(("a", i), attempt=1, order=i)
    for i in range(20, 30):
        g.add_node(("b", i), attempt=2, order=100 + i)
        g.add_edge(("a", i), ("b", i))                      # a later attempt runs the round again
    nx.add_path(g, [("a", i) for i in range(30)])
    nx.add_path(g, [("b", i) for i in range(20, 30)])
    tall = ai.history.layered_drawing(g, lane="attempt")
    assert tall.layers == 31 and tall.band_shifts == (0.0,)
    assert ai.history.wrapped_drawing(tall, rows=40) is tall            # short enough: unchanged
    wide = ai.history.wrapped_drawing(tall, rows=11)
    assert wide.layers == 11 and len(wide.band_shifts) == 3
    ys = [y for _, y in wide.positions.values()]
    assert min(ys) == -10 and max(ys) == 0
    assert len(set(wide.positions.values())) == len(wide.positions)    # no two nodes in one place
    (u, v), route = next(((e, r) for e, r in wide.routes.items() if e == (("a", 10), ("a", 11))))
    assert len(route) == 6 and route[0] == wide.positions[u] and route[-1] == wide.positions[v]
    gutter = route[2][0]
    band_0 = [x for n, (x, _) in wide.positions.items() if tall.positions[n][1] > -11]
    band_1 = [x for n, (x, _) in wide.positions.items() if -22 < tall.positions[n][1] <= -11]
    assert max(band_0) < gutter < min(band_1)                          # it climbs between the bands
    assert route[1][1] < wide.positions[u][1] and route[3][1] == wide.positions[v][1] + wide.entry > route[1][1]
    # into a later lane: across over the row's markers (before: along the row, through a22's marker), then down
    route = wide.routes[(("a", 21), ("b", 21))]
    (xv, yv), (xw, yw) = wide.positions[("b", 21)], wide.positions[("a", 22)]
    assert yw == yv and route[2][0] < xw < xv                          # a22 lies between the gutter and b21
    assert route[-3] == (route[2][0], yv + wide.entry) and route[-2] == (xv, yv + wide.entry) and wide.entry > 0
    assert wide.routes[(("a", 1), ("a", 2))] == [wide.positions[("a", 1)], wide.positions[("a", 2)]]
    assert wide.lanes.keys() == tall.lanes.keys()
