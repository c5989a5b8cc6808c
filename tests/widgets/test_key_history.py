"""The compact key history: one line per execution, pages, expand, search, jumps, copy and reopen."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect.history import compact_history, matching_positions
from agent_inspect.widgets import KeyHistory, ResultInspector
from agent_inspect.widgets._common import decoded_value

SAMPLE = str(Path(__file__).resolve().parents[2] / "sample_logs" / "production.jsonl")


@pytest.fixture(scope="module")
def log():
    return ai.load(SAMPLE)


@pytest.fixture(scope="module")
def fixed(log):
    return ai.reconstruct(log, rule="fixed")


def _key_with(result, column, value):
    return result.records.loc[result.records[column] == value, "business_key"].iloc[0]


def test_one_line_per_execution_folds_its_records(fixed):
    frame = fixed.records[fixed.records["business_key"] == "user-0019"]
    lines = compact_history(frame, fixed.divergences)
    assert lines["records"].sum() == len(frame)
    assert len(lines) == frame["execution"].nunique()
    first = lines.iloc[0]
    assert first["positions"] == tuple(frame.index[frame["execution"] == first["execution"]])
    assert first["records"] == 3 and first["calls"] == 1 and first["completed"]
    ts = frame.loc[list(first["positions"]), "timestamp"]
    assert first["duration_ms"] == pytest.approx((ts.max() - ts.min()).total_seconds() * 1000)
    # an execution with an invalidated record shows that status, not its last one
    assert first["status"] == "invalidated" and first["diverged"]
    assert first["statuses"] == ("superseded", "invalidated")
    assert first["action"] == "triage"  # named by the records its output events triggered


def test_pages_hold_the_lines_and_values_come_only_on_expand(fixed):
    key = "user-0012"
    view = KeyHistory(fixed, key, page_size=5)
    assert view.total == len(view.lines) and view.page_count == -(-view.total // 5)
    assert [r["line"] for r in view.rows] == [0, 1, 2, 3, 4]
    assert view.details == {} and "json" not in json.dumps(view.rows)
    view.goto_page(99)
    assert view.page == view.page_count - 1 and view.rows[-1]["line"] == view.total - 1
    view.goto_page(0)
    detail = view.expand(1)
    positions = view.lines.at[1, "positions"]
    assert [r["pos"] for r in detail["records"]] == list(positions)
    for rec in detail["records"]:
        assert json.loads(rec["json"]) == decoded_value(fixed, rec["pos"])
        assert rec["kind"] in ("initial", "call", "completed")
    assert list(view.details) == ["1"]
    view.collapse(1)
    assert view.details == {}


def test_search_runs_in_the_kernel_over_values_and_attributes(log, fixed):
    view = KeyHistory(fixed, "user-0012")
    view.search("order 81715")
    mine = fixed.records[fixed.records["business_key"] == "user-0012"]
    expected = [p for p in mine.index if b"order 81715" in bytes(log.raw.value[p]).lower()]
    assert expected and sorted(view._matches) == expected
    assert {r["line"] for r in view.rows} == {view._line_of[p] for p in expected}
    assert all(r["matches"] for r in view.rows)
    assert "contain 'order 81715'" in view.search_info
    state_key = mine["state_key"].iloc[-1]
    view.search(state_key.upper())  # attributes too, case-insensitively
    assert view._line_of[int(mine.index[-1])] in {r["line"] for r in view.rows}
    view.search("no such text anywhere")
    assert view.rows == [] and view.total == 0
    view.search("")
    assert view.total == len(view.lines)
    assert list(matching_positions(mine, [None] * len(mine), "")) == list(mine.index)


def test_jump_to_first_divergence_and_walk_the_reruns(fixed):
    key = _key_with(fixed, "outcome", "RERUN")
    view = KeyHistory(fixed, key, page_size=4)
    first = view.jump_to_first_divergence()
    assert first == int(view.lines.loc[view.lines["diverged"], "line"].min())
    assert view.focus_line == first and first in [r["line"] for r in view.rows]
    reruns = view.lines.loc[view.lines["rerun"], "line"].tolist()
    assert len(reruns) > 1
    view.focus_line = -1
    seen = [view.next_rerun() for _ in reruns]
    assert seen == reruns
    assert view.page == reruns[-1] // 4  # the page turned to show it
    assert view.next_rerun() == reruns[0]  # wraps around
    clean = KeyHistory(fixed, "user-0012")
    assert clean.jump_to_first_divergence() is None and clean.notice == "no divergence in this key"


def test_the_copy_link_snippet_reopens_the_same_key_and_record(fixed):
    key = _key_with(fixed, "status", "evicted")
    view = KeyHistory(fixed, key)
    pos = int(fixed.records.index[(fixed.records["business_key"] == key) & (fixed.records["status"] == "evicted")][-1])
    snippet = view.snippet(pos)
    assert snippet.startswith("ai.inspect(ai.load(") and "rule='fixed'" in snippet
    reopened = eval(snippet, {"ai": ai})  # what a user pastes into a cell
    assert isinstance(reopened, KeyHistory) and reopened.key == key
    assert reopened.focus_record == pos
    line = reopened.focus_line
    assert pos in reopened.lines.at[line, "positions"]
    assert str(line) in reopened.details and line in [r["line"] for r in reopened.rows]
    assert reopened.record_json(pos) == view.record_json(pos)
    # the record is named by (partition, offset), so the position is found again
    row = fixed.records.loc[pos]
    assert f"record=({int(row['partition'])}, {int(row['offset'])})" in snippet
    assert ai.inspect(fixed, business_key=key, record=pos).focus_record == pos


def test_a_record_that_is_no_position_says_what_it_takes(fixed):
    key = _key_with(fixed, "status", "evicted")
    for record in ("x", (0,), (0, 1, 2), ("a", "b")):        # each was a ValueError out of int() or unpacking
        with pytest.raises(ai.InspectError, match=r"record takes a log position \(int\) or a \(partition, offset\) "
                                                  rf"pair, got {re.escape(repr(record))}"):
            ai.inspect(fixed, business_key=key, record=record)


def test_a_key_opens_on_its_history(fixed):
    key = _key_with(fixed, "status", "invalidated")
    inspector = ResultInspector(fixed, key=key)
    assert inspector.key_picker.value == key
    assert inspector.TABS[inspector.tabs.selected_index] == "History"
    assert isinstance(inspector.view("History"), KeyHistory)
    other = [k for k in inspector.key_picker.options if k != key][0]
    inspector.tabs.selected_index = 0
    inspector.key_picker.value = other
    assert inspector.TABS[inspector.tabs.selected_index] == "History"
    assert inspector.view("History").key == other
    history = ai.inspect(fixed.log, business_key=key, rule="fixed")
    assert isinstance(history, KeyHistory) and history.header["rule"] == "fixed"
    assert "ai-history" in history._dom_classes


def test_unknown_key_or_record_says_so(fixed):
    with pytest.raises(ai.InspectError, match="has no records"):
        KeyHistory(fixed, "no-such-key")
    view = KeyHistory(fixed, "user-0012")
    other = int(fixed.records.index[fixed.records["business_key"] != "user-0012"][0])
    with pytest.raises(ai.InspectError, match="not a record of key"):
        view.focus(other)
    view._on_msg(view, {"action": "expand", "line": 10_000}, [])
    assert view.notice  # a bad message from the page is shown, not raised into the kernel log


def test_search_finds_the_rules_words_kept_in_rule_note(log):
    """The lines' outcomes read in a reader's words; the rule's own ("miss at (k, s)") stay searchable."""
    original = ai.reconstruct(log, rule="original", markers=ai.samples.markers("production"))
    records = original.records
    missed = records[records["rule_note"].str.contains("miss at", na=False)]
    assert len(missed) and not records["reason"].str.contains("miss at", na=False).any()
    assert not missed["outcome_reason"].str.contains("miss at", na=False).any()
    key = missed["business_key"].iloc[0]
    view = KeyHistory(original, key)
    view.search("miss at (")
    mine = missed[missed["business_key"] == key]
    assert sorted(view._matches) == sorted(mine.index)


def test_removed_lines_read_in_a_readers_words_and_search_finds_the_rules(log):
    """An evicted line says which lookup removed its record and what that costs; the rule's own words
    ("… > 1 -> evicted …", kept in ``status_rule_note``) are no line's reason but a search still finds them."""
    original = ai.reconstruct(log, rule="original", markers=ai.samples.markers("production"))
    records = original.records
    evicted = records[records["status"] == "evicted"]
    key = evicted["business_key"].iloc[0]
    mine = records[records["business_key"] == key]
    view = KeyHistory(original, key, page_size=1000)
    gone = [r for r in view.rows if r["status"] == "evicted"]
    assert gone and not any("->" in (r["reason"] or "") for r in view.rows)
    for row in gone:
        assert row["reason"].startswith("the lookup of ")
        assert row["reason"].endswith("; its task runs again if the replay reaches it")
    detail = view.expand(gone[0]["line"])
    shown = [r for r in detail["records"] if r["status"] == "evicted"]
    assert shown and all(r["reason"] == records.at[r["pos"], "reason"] for r in shown)
    note = mine.loc[mine["status"] == "evicted", "status_rule_note"].iloc[0]
    assert "-> evicted" in note and not mine["reason"].str.contains(note, regex=False, na=False).any()
    view.search(note)
    assert set(mine.index[mine["status_rule_note"] == note]) <= view._matches
    assert {view._line_of[p] for p in view._matches} >= {r["line"] for r in gone}


def test_a_plain_log_s_history_reads_its_refresh_rows_as_its_reconstruction_does():
    # KeyHistory(log, key) annotated the key's records frame alone: no bytes, so no refresh rows (each a "run" of its
    # own, no attempts), where the reconstruction and log.for_key(key) showed 30 of this key's rows as refresh rows
    v4 = ai.load(ai.samples.path("production_v4"))
    key = v4.keys()[0]
    plain, reconstructed = KeyHistory(v4, key).lines, KeyHistory(ai.reconstruct(v4), key).lines
    by_key = compact_history(v4.for_key(key))
    refresh = (reconstructed["execution"] < 0).sum()
    assert refresh == (by_key["execution"] < 0).sum() == 30
    assert (plain["execution"] < 0).sum() == refresh
    assert plain["positions"].tolist() == reconstructed["positions"].tolist()
    assert plain["attempt"].astype("Float64").equals(reconstructed["attempt"].astype("Float64"))   # was all None
