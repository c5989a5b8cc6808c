from __future__ import annotations

import html

from _widget_logs import IMG, SCRIPT

import agent_inspect as ai
from agent_inspect.widgets import DivergenceView


def test_root_conflict_side_by_side_with_diff(probe_result):
    view = DivergenceView(probe_result)
    row = probe_result.divergences.iloc[0]
    assert row["kind"] == "root-conflict"
    earlier, later = row["positions"]
    assert f"earlier root · record {earlier}" in view.sides.value
    assert f"later root · record {later}" in view.sides.value
    assert html.escape(row["explanation"]) in view.explanation.value
    # the diff row of attribute "input": the two roots' values, escaped
    assert "<code>input</code>" in view.diff.value
    assert html.escape(f'"A {SCRIPT}"') in view.diff.value and html.escape(f'"B {IMG}"') in view.diff.value
    # the records the divergence invalidated, as the reconstruction lists them
    removed = probe_result.evictions[probe_result.evictions["divergence_id"] == row["id"]]
    assert len(removed) == 1 and "cache removals it caused" in view.removals.value
    positions = ", ".join(map(str, removed.iloc[0]["positions"]))  # plain numbers, not a Python tuple
    assert f"<td>{positions}</td>" in view.removals.value and "(" not in positions


def test_count_rule_divergences_list_their_records(probe_log):
    result = ai.reconstruct(probe_log, rule="original")
    view = DivergenceView(result)
    assert len(view.selector.options) == len(result.divergences) == 2
    for index, row in enumerate(result.divergences.itertuples()):
        view.show(index)
        assert row.kind == "count>1" and "count&gt;1" in view.explanation.value
        for i, pos in enumerate(row.positions):
            assert f"record {i + 1} of {len(row.positions)} · record {pos}" in view.sides.value
        assert "no attribute diff" in view.diff.value


def test_filtered_to_a_key_and_empty(probe_result, probe_log):
    other = f"acct-{SCRIPT}"
    shown = DivergenceView(probe_result, key=other)
    mine = probe_result.divergences[probe_result.divergences["business_key"] == other]
    assert len(shown.selector.options) == len(mine)
    assert "no divergence" in DivergenceView(ai.reconstruct(probe_log, rule="fixed", replay=False),
                                             key=other).explanation.value
    assert "no divergence" in DivergenceView(ai.reconstruct(probe_log, rule="naive")).explanation.value


def test_the_divergence_grid_lists_them_and_a_click_picks_one(probe_log):
    result = ai.reconstruct(probe_log, rule="original")
    view = DivergenceView(result)
    assert view.table.total == len(result.divergences) >= 2
    view.table.sort_by("seq", descending=True)  # sorted in the kernel; the click reports the frame row
    first_shown = int(view.table.window["ids"][0])
    view.table._on_message(view.table, {"type": "select", "row": first_shown}, [])  # what grid.js sends
    assert view.selector.value == first_shown
    row = result.divergences.iloc[first_shown]
    assert html.escape(row["explanation"]) in view.explanation.value
    assert view.table.selected == first_shown
