"""Issue 24 items 1-4 in the kernel: divergence points and evicted suffixes in the graphs, sub-agent trees that say
what the recovery did with each call, a stepper that says why, the divergence view paging through every record."""

from __future__ import annotations

import pytest
from _widget_view import click

import agent_inspect as ai
from agent_inspect.agents import AsRecordedAgent
from agent_inspect.recovery import lookup_words
from agent_inspect.widgets import DivergenceView, GraphView, ReplayStepper, SubagentTreeView
from agent_inspect.widgets._stepper import step_cause


@pytest.fixture(scope="module")
def production():
    log = ai.load(ai.samples.path("production"))
    return ai.reconstruct(log, rule="original", markers=ai.samples.markers("production"))


@pytest.fixture(scope="module")
def subagents():
    log = ai.load(ai.samples.path("subagents"))
    return ai.reconstruct(log, rule="original", markers=ai.samples.markers("subagents"))


def _trace(view, name):
    return next((i, t) for i, t in enumerate(view.figure.data) if t.name == name)


def test_the_diverging_node_is_ringed_and_its_hover_names_rule_cause_and_removed(production):
    view = GraphView(production, "user-0004", 0)
    index, mark = _trace(view, "divergence point")
    divergence = production.divergences.loc[production.divergences["business_key"] == "user-0004"].iloc[0]
    (node,) = [view._nodes[i] for i in mark.customdata]
    assert divergence["trigger_pos"] in view.graph.nodes[node]["positions"]  # the lookup that triggered the rule
    text = view.figure._hover_text(index, 0)
    assert "rule original" in text and "cause: original rule: 5 cached records" in text
    assert "removed: seq 1 ×5, seq 2 ×6, seq 3 ×5, seq 4 ×6, seq 5 ×5 (27 records)" in text
    # the suffix lies outside this round: the title says what was removed
    assert "attempts 1, 2" in view.title.value and "removed seq 1 ×5" in view.title.value
    assert {a.text for a in view.figure.layout.annotations} == {"<b>attempt 1</b>", "<b>attempt 2</b>"}
    click(view.figure, index, 0)
    assert f"divergence #{divergence['id']}" in view.detail.value
    assert view.explain_box.children and "at round 0 of key user-0004" in view.explain_box.children[0].story.value


def test_an_evicted_round_sits_in_a_band_named_in_the_legend(production):
    view = GraphView(production, "user-0004", 3)
    bands = [s for s in view.figure.layout.shapes if s.type == "rect"]
    assert bands and bands[0].name == "evicted suffix" and bands[0].showlegend
    evicted = [n for n, d in view.graph.nodes(data=True) if d.get("status") == "evicted"]
    assert evicted
    for n in evicted:
        x, y = view.positions[n]
        assert any(b.x0 <= x <= b.x1 and b.y0 <= y <= b.y1 for b in bands)
    # folded: the attempt groups holding the divergence and the eviction are marked too
    view.show_round(None)
    if view.grouped:
        assert any(t.name == "divergence point" for t in view.figure.data)


def test_a_typed_number_picks_its_round(production):
    view = GraphView(production, "user-0004", 0)
    view.round_picker.value = "4"
    assert view.seq == 4 and view.round_picker.value == "seq 4"
    view.round_picker.value = " seq 2 "
    assert view.seq == 2


def test_subagent_children_carry_what_the_recovery_did_with_them(subagents):
    view = SubagentTreeView(subagents, "order-1")
    assert view.seq is None and list(view.round_picker.options) == ["all rounds", "seq 5", "seq 6"]
    names = {t.name: t for t in view.figure.data}
    # seq 5: the caller is reused and makes no call, so its finished children are not dispatched (spec S02)
    assert {"child · not-dispatched", "child · re-run", "caller · reused", "caller · re-run"} <= set(names)
    assert names["child · not-dispatched"].marker.color != names["child · re-run"].marker.color
    assert all("<b>NOT-DISPATCHED</b><br>live" in x for x in names["child · not-dispatched"].text)
    assert all("<b>RE-RUN</b><br>evicted" in x for x in names["child · re-run"].text)
    # CA1 and CA2 are siblings under their call; the child whose event started CA2 is drawn beside the tree
    for node, attrs in view.graph.nodes(data=True):
        if attrs.get("role") in ("bootstrap", "forwarded"):
            (parent,) = view.graph.predecessors(node)
            assert view.graph.nodes[parent]["kind"] == "call"
    assert len(view.graph.graph["emits"]) == 2
    words = [a.text for a in view.figure.layout.annotations if a.text]
    assert {"<i>runs</i>", "<i>opens</i>", "<i>call</i>", "<i>calls</i>", "<i>emits</i>"} <= set(words)
    view.round_picker.value = "6"
    assert view.seq == 6 and {t.name for t in view.figure.data} >= {"child · re-run"}


def test_a_reused_child_is_told_from_a_not_dispatched_one():
    """Under the fixed rule order-2's round 8 keeps its cache: its caller resumes and its child is reused."""
    log = ai.load(ai.samples.path("subagents"))
    view = SubagentTreeView(ai.reconstruct(log, rule="fixed", markers=ai.samples.markers("subagents")), "order-2")
    names = {t.name: t for t in view.figure.data}
    assert {"child · reused", "child · not-dispatched", "caller · resumed"} <= set(names)
    assert names["child · reused"].marker.color != names["child · not-dispatched"].marker.color
    assert all("<b>REUSED</b><br>live" in x for x in names["child · reused"].text)


def test_v4_result_events_say_how_the_recovery_replays_them():
    log = ai.load(ai.samples.path("production_v4"))
    result = ai.reconstruct(log, rule="fixed", markers=ai.samples.markers("production_v4"))
    sub = result.records[result.records["subagent_result_count"].fillna(0) > 0]
    key, seq = sub["business_key"].iloc[-1], int(sub["seq"].iloc[-1])
    view = SubagentTreeView(result, key, seq)
    results = [x for t in view.figure.data if t.name == "result" for x in t.text]
    assert results and all(any(w in x for w in ("replayed from the record", "produced again", "as recorded"))
                           for x in results)


def test_an_eviction_cause_shows_what_it_removed_as_the_engine_grouped_it():
    # the stepper grouped the engine's text again, as if it listed each record: "user-0009@5 ×5 ×1"
    log = ai.load(ai.samples.path("production"))
    executor = ai.ReplayExecutor(log, agent=AsRecordedAgent(log), rule="original",
                                 markers=ai.samples.markers("production"))
    executor.run()
    steps = executor.steps
    eviction = steps[steps["kind"] == "eviction"].iloc[1]
    assert eviction["change"] == "removed 14: user-0001@2 ×3, @3 ×5, @4 ×3, @5 ×3"
    assert step_cause(steps, eviction).endswith(f" — {eviction['change']}")


def test_steps_say_why_and_the_chart_keeps_evictions_on_top():
    log = ai.load(ai.samples.path("production"))
    executor = ai.ReplayExecutor(log, agent=AsRecordedAgent(log), rule="original",
                                 markers=ai.samples.markers("production"))
    stepper = ReplayStepper(executor)
    stepper.run()
    steps = executor.steps
    eviction = steps[steps["kind"] == "eviction"].iloc[0]
    assert step_cause(steps, eviction).startswith(lookup_words(eviction["action"], eviction["key"], int(eviction["seq"])))
    rerun = steps[steps["kind"] == "rerun"].iloc[0]
    cause = step_cause(steps, rerun)
    by = int(cause.rsplit("by step ", 1)[1].split()[0])
    removal = steps[steps["index"] == by].iloc[0]
    assert removal["kind"] == "eviction" and removal["key"] == rerun["key"] and removal["seq"] < rerun["seq"]
    names = [t.name for t in stepper.figure.data]
    assert names.index("eviction") > max(names.index(k) for k in ("rerun", "reuse", "persist"))
    (eviction_trace,) = [t for t in stepper.figure.data if t.name == "eviction"]
    (rerun_trace,) = [t for t in stepper.figure.data if t.name == "rerun"]
    assert eviction_trace.marker.symbol == "x" and eviction_trace.marker.size > rerun_trace.marker.size
    assert rerun_trace.marker.opacity < 1  # density, under the evictions
    stepper.key_filter.value = "user-0001"
    assert "counters of key <code>user-0001</code> only" in stepper.counters.value


def test_divergence_view_pages_through_every_record(production):
    view = DivergenceView(production, key="user-0004")
    row = view.divergences.iloc[0]
    positions = list(row["positions"])
    assert len(positions) == 5
    assert "records 1–4 of 5 · 1 more" in view.page_label.value and view.pager.layout.display is None
    assert f"record {positions[-1]}" not in view.sides.value and "1 more" in view.sides.value
    view.next_button.click()
    assert view.page == 1 and f"record {positions[-1]}" in view.sides.value
    assert "record 5 of 5" in view.sides.value and view.next_button.disabled
    view.previous_button.click()
    assert view.page == 0 and "record 1 of 5" in view.sides.value


def test_the_inspector_names_the_runtime_once(production):
    inspector = ai.inspect(production)
    records = inspector.view("Records")
    assert records.runtime.layout.display == "none" and "ai-runtime" in inspector.runtime.value


def test_the_folded_graph_keeps_edges_between_groups_and_names_what_they_hold(production):
    from agent_inspect.history import GROUP_EDGE_KINDS

    view = GraphView(production, "user-0004")
    assert view.grouped
    groups = dict(view.shown.nodes(data=True))
    assert set(groups) == {("attempt", 1), ("attempt", 2)}
    # attempt 2 restored and ran seq 0 again: the edge says so, and what it means is its hover
    assert view.shown.edges[("attempt", 1), ("attempt", 2)]["kinds"] == {"reruns": 1}
    (label,) = [a for a in view.figure.layout.annotations if "re-runs" in a.text]
    assert label.hovertext == GROUP_EDGE_KINDS["reruns"]
    # which group holds the divergence and the evicted suffix, without hovering
    assert "✕ 1 divergence" in groups[("attempt", 2)]["label"] and "27 removed" in groups[("attempt", 2)]["label"]
    assert "divergence" not in groups[("attempt", 1)]["label"]
    (ring,) = [t for t in view.figure.data if t.name == "divergence point"]
    assert [view._nodes[i] for i in ring.customdata] == [("attempt", 2)]
    view.expand(("attempt", 2))
    kinds = {(u, v): d["kind"] for u, v, d in view.shown.edges(data=True)}
    assert kinds[("attempt", 1), ("round", 2, 0)] == "reruns"
    assert [kinds[("round", 2, s), ("round", 2, s + 1)] for s in range(5)] == ["next"] * 5
    words = [a.text for a in view.figure.layout.annotations]
    assert words.count("<i>then</i>") == 5 and "<b>attempt 1</b>" in words and "<b>attempt 2</b>" in words


def test_a_big_round_is_laid_out_in_attempt_lanes_with_room_for_every_label(production):
    view = GraphView(production, "vip_0042", 0)
    title = view.title.value
    assert "vip_0042" in title and "seq 0" in title and "attempts 1, 2" in title
    lanes = view._lanes
    assert list(lanes) == [1, 2] and lanes[1][1] < lanes[2][0]
    for node, attrs in view.shown.nodes(data=True):
        left, right = lanes[attrs["attempt"]]
        assert left <= view.positions[node][0] <= right, node
    # the figure grows with the layers: one layer is tall enough for a marker, its label and the edges between
    geometry = view.geometry
    layers = len({y for _, y in view.positions.values()})
    assert view.figure.layout.height >= layers * geometry.layer_px
    assert geometry.below < 1 - geometry.above       # a label ends above the next layer's arrowheads
    assert all(len(line) <= 24 for t in view.figure.data[1:] if t.text is not None for x in t.text
               for line in x.split("<br>"))
