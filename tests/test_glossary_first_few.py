"""One helper lists the first few of many names ("a, b, c and 2 more" / "a, b, c, …"): every message and repr that
shortens a list uses it, and each keeps the words it printed before the helper."""

from __future__ import annotations

from pathlib import Path

from agent_inspect._glossary import first_few
from agent_inspect.agents import AgentEvent
from agent_inspect.checkpoint import KeyedRestore
from agent_inspect.recovery import PendingTask, ReplayPlan
from agent_inspect.recovery._plan import ReplayInput, _in_flight_note
from agent_inspect.recovery._refresh import _listed
from agent_inspect.sources._files import _directory_message

KEYS = ("a", "b", "c", "d", "e")


def test_first_few_counts_or_elides_what_it_leaves_out() -> None:
    assert first_few(KEYS, 3) == "a, b, c and 2 more"
    assert first_few(KEYS, 3, counted=False) == "a, b, c, …"
    assert first_few(KEYS[:3], 3) == first_few(KEYS[:3], 3, counted=False) == "a, b, c"
    assert first_few([], 3) == ""
    assert first_few(range(1_205), 2) == "0, 1 and 1,203 more"      # the count as every count prints: 1,203


def test_a_keyed_restore_and_a_replay_plan_repr_elide_the_keys_after_three() -> None:
    restore = KeyedRestore(message_seq={k: 1 for k in KEYS}, pending_tasks=KEYS[:4], pending_inputs=KEYS[:1])
    assert repr(restore) == ("KeyedRestore(5 keys, 4 keys with pending tasks (a, b, c, …), "
                             "1 key with buffered inputs (a), all read)")
    event = AgentEvent("_input_event", {"input": "x"}, id="evt")
    plan = ReplayPlan(restored_seq={"a": 1}, pending=tuple(PendingTask(k, 2, "chat", event) for k in KEYS[:4]))
    assert repr(plan) == ("ReplayPlan(0 inputs of 0 keys, 4 pending tasks (a, b, c, …), "
                          "restored seqNums of 1 key)")


def test_the_plan_notes_name_three_keys_and_count_the_rest() -> None:
    event = AgentEvent("_input_event", {"input": "x"}, id="evt")
    plan = ReplayPlan(inputs=tuple(ReplayInput(k, event) for k in KEYS), restored_seq=dict.fromkeys(KEYS, 0))
    (note,) = plan.restored_at(dict.fromkeys(KEYS, 1)).notes
    assert note == ("5 inputs of 5 keys (a ≤ seq 1, b ≤ seq 1, c ≤ seq 1 and 2 more) not replayed: the markers "
                    "reach back before the checkpoint, which had consumed those rounds")
    (flight,) = _in_flight_note(tuple(PendingTask(k, 3, "chat", event) for k in KEYS[:4]))
    assert flight.startswith("4 tasks of 4 rounds (a@3, b@3, c@3 and 1 more) were in flight at the checkpoint")


def test_refreshed_rounds_and_a_directory_s_dump_files_count_the_rest() -> None:
    assert _listed([("k", s) for s in range(5)]) == "rounds (k, 0), (k, 1), (k, 2) and 2 more"
    assert _listed([("k", 1)]) == "round (k, 1)"


def test_a_directory_names_five_dump_files_and_counts_the_rest(tmp_path: Path) -> None:
    for n in range(7):
        (tmp_path / f"d{n}.jsonl").write_text("")
    assert _directory_message(tmp_path) == (f"{str(tmp_path)!r} is a directory; pass one of its dump files "
                                            "(d0.jsonl, d1.jsonl, d2.jsonl, d3.jsonl, d4.jsonl and 2 more)")


def test_names_from_a_log_are_listed_with_their_control_characters_written_out() -> None:
    # a restore's or a plan's keys come from a checkpoint or a log: the REPL printed their escapes raw
    evil = "k\x1b]0;pwned\x07\x1b[2J\r\x9b2J\u202e\x00"
    shown = "k\\x1b]0;pwned\\x07\\x1b[2J\\x0d\\u009b2J\\u202e\\x00"
    assert first_few([evil, "b"], 3) == f"{shown}, b"
    restore = KeyedRestore(message_seq={evil: 1}, pending_tasks=(evil,), pending_inputs=())
    assert repr(restore) == f"KeyedRestore(1 key, 1 key with pending tasks ({shown}), 0 keys with buffered inputs, all read)"
    task = PendingTask(evil, 3, "chat", AgentEvent("_input_event", {"input": "x"}, id="evt-1"))
    assert f"1 pending task ({shown})" in repr(ReplayPlan(inputs=(), restored_seq={evil: 2}, pending=(task,)))


def test_first_few_counts_the_total_when_given_only_the_first_few() -> None:
    assert first_few(KEYS[:3], 3, total=5) == "a, b, c and 2 more"
    assert first_few(KEYS[:3], 3, total=3) == first_few(KEYS[:3], 3) and first_few(KEYS[:2], 3, total=2) == "a, b"
    assert first_few(KEYS[:3], 3, total=1_205) == "a, b, c and 1,202 more"
    assert first_few(KEYS[:3], 3, total=5, counted=False) == "a, b, c, …"


def test_the_missing_rounds_note_writes_out_a_keys_control_characters() -> None:
    from agent_inspect.recovery._plan import _missing_rounds_note

    (note,) = _missing_rounds_note({"k\x1b[2J": (5, [1, 2, 3]), "m": (1, [4])})
    assert note.startswith("6 rounds (k\\x1b[2J@1, k\\x1b[2J@2, k\\x1b[2J@3 and 3 more) of the window have no root")
