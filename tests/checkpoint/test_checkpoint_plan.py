"""A checkpoint restores what it holds: every verb takes its plan by default, a markers-only one falls back to the
log's plan and says why, and its buffered inputs are each key's next inputs."""

from __future__ import annotations

import functools
import re
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

import agent_inspect as ai
from agent_inspect.agents import AgentEvent
from agent_inspect.store import Outcome
from tests.support.flink_metadata import synthetic_metadata
from tests.support.outcomes import by_state_key

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
PRODUCTION = FIXTURES / "production"
BUFFERED = "83d1e6e1-ebb0-434a-bf79-cb1705d9383a"   # user-0009's seq-5 input, buffered while its round 4 ran


@functools.cache
def log() -> ai.ActionStateLog:
    return ai.load(ai.samples.path("production"))


@functools.cache
def checkpoint(where: str = "checkpoints", keyed: bool = True) -> ai.checkpoint.Checkpoint:
    return ai.checkpoint.read(PRODUCTION / where, keyed=keyed)


@pytest.mark.parametrize("where", ["checkpoints", "savepoint"])
def test_every_verb_restores_the_checkpoints_plan_with_the_markers_files_by_state_key(where: str) -> None:
    source, ckpt = log(), checkpoint(where)
    by_ckpt = ai.Recovery.for_log(source, markers=ckpt)
    by_file = ai.Recovery.for_log(source, markers=ai.samples.markers("production"))
    assert by_ckpt.plan_source is ckpt and by_file.plan_source is None
    plan = by_ckpt.replay_plan(source)
    assert plan == ckpt.replay_plan(source) and any(i.event.id == BUFFERED for i in plan.inputs)

    predicted = ai.predict(source, recovery=by_ckpt).tasks
    reference = by_state_key(predicted)
    assert reference == by_state_key(ai.predict(source, recovery=by_file).tasks)
    assert set(predicted.loc[predicted["event_id"] == BUFFERED, "business_key"]) == {"user-0009"}

    replayed = [ai.reconstruct(source, recovery=r).records for r in (by_ckpt, by_file)]
    a, b = (by_state_key(r[r["outcome"].notna()]) for r in replayed)
    assert a == b and a.keys() <= reference.keys() and all(reference[k] == v for k, v in a.items())

    steps = []
    for recovery in (by_ckpt, by_file):
        executor = ai.ReplayExecutor(source, recovery=recovery)   # production mode: run as the job's operator
        executor.run()
        assert executor.done
        steps.append(by_state_key(executor.steps[executor.steps["kind"] == "lookup"]))
    assert steps[0] == steps[1] == reference

    if where == "checkpoints":   # the trace join takes seconds: once
        trace = ai.load_trace(ai.samples.path("production", "trace"))
        verified = [ai.verify(source, trace, recovery=r, candidates=()) for r in (by_ckpt, by_file)]
        assert [v.verdict for v in verified] == ["agree", "agree"]
        assert by_state_key(verified[0].prediction.tasks) == by_state_key(verified[1].prediction.tasks)

    # explain: the buffered input's first task, the pending task and the first task that is not reused
    labels = list(zip(predicted["key"].astype(str), predicted["seq"], predicted["action"].astype(str),
                      predicted["outcome"].astype(str), predicted["event_id"].astype(str)))
    picks = {next(i for i, row in enumerate(labels) if row[4] == BUFFERED),
             next(i for i, row in enumerate(labels) if row[:3] == ("user-0009", 4, "tool_call")),
             next(i for i, row in enumerate(labels) if row[3] not in (Outcome.REUSE, Outcome.NOT_DISPATCHED))}
    for i in sorted(picks):
        key, seq, action, outcome, _ = labels[i]
        occurrence = sum(1 for row in labels[:i] if row[:3] == (key, seq, action) and row[3] != Outcome.NOT_DISPATCHED)
        whys = [ai.explain(source, key, int(seq), action, occurrence=occurrence, recovery=r) for r in (by_ckpt, by_file)]
        assert [w.outcome for w in whys] == [outcome, outcome], (key, seq, action)


def test_the_provenance_says_the_plan_is_the_checkpoints() -> None:
    recovery = ai.Recovery.for_log(log(), markers=checkpoint())
    assert recovery.provenance["plan"] == ("from checkpoint 4's keyed state: 29 keys' restored seqNums; 1 key's "
                                           "pending tasks decoded; 1 key's buffered inputs decoded")
    assert recovery.as_dict()["plan"] == f"from {checkpoint().path}"
    # a given plan wins, and says so
    given = ai.ReplayPlan.from_log(log(), markers=checkpoint())
    assert recovery.replace(log(), plan=given).replay_plan(log()) is given
    assert recovery.replace(log(), plan=given).provenance["plan"] == "given"
    # settings copied with other overrides keep the checkpoint's plan
    assert recovery.replace(log(), rule="fixed").plan_source is checkpoint()


def test_undecoded_tasks_are_counted_from_the_log_in_the_provenance() -> None:
    ckpt = checkpoint("savepoint")
    assert ckpt.keyed is not None
    odd = replace(ckpt, keyed=replace(ckpt.keyed, tasks={}, action_tasks={"user-0009": tuple(
        replace(v, decoded=False, value=None, why="Kryo class com.example.Odd is not one this reader knows")
        for v in ckpt.keyed.action_tasks["user-0009"])}))
    assert ai.Recovery.for_log(log(), markers=odd).provenance["plan"] == (
        "from savepoint 3's keyed state: 29 keys' restored seqNums; 0 keys' pending tasks decoded, 1 from the log "
        "(user-0009: Kryo class com.example.Odd is not one this reader knows); 1 key's buffered inputs decoded")
    # the log's in-flight inference stands in for them
    assert odd.replay_plan(log()).pending == ai.ReplayPlan.from_log(log(), markers=odd).pending


def test_a_checkpoint_with_markers_only_falls_back_to_the_logs_plan_and_says_why(tmp_path: Path) -> None:
    markers_only = checkpoint(keyed=False)
    recovery = ai.Recovery.for_log(log(), markers=markers_only)
    assert recovery.plan_source is None and recovery.as_dict()["plan"] == "from the log"
    assert recovery.provenance["plan"] == ("from the log's own later attempt: checkpoint 4 gives markers only "
                                           "(its keyed state was not read)")
    assert recovery.replay_plan(log()) == ai.ReplayPlan.from_log(log(), markers=ai.samples.markers("production"))
    # a RocksDB incremental checkpoint: its keyed state is not read, and the provenance names it
    (tmp_path / "_metadata").write_bytes(synthetic_metadata([{0: 248, 1: 245, 2: 215, 3: 444}], incremental=True))
    incremental = ai.Recovery.for_log(log(), markers=ai.checkpoint.read(tmp_path))
    assert incremental.plan_source is None
    assert re.fullmatch(r"from the log's own later attempt: checkpoint \d+ gives markers only \(subtask 0's keyed "
                        r"state is a RocksDB incremental snapshot \(its SST files in RocksDB's own format\): not read; "
                        r"restored seqNums, pending tasks, buffered inputs and memory come from the log\)",
                        incremental.provenance["plan"])


def test_the_copy_link_snippet_reads_the_checkpoint_again() -> None:
    from agent_inspect.widgets import KeyHistory

    result = ai.reconstruct(log(), markers=checkpoint())
    view = KeyHistory(result, "user-0009")
    pos = int(result.records.index[result.records["business_key"] == "user-0009"][-1])
    snippet = view.snippet(pos)
    assert f"markers=ai.checkpoint.read({checkpoint().path!r})" in snippet
    reopened = eval(snippet, {"ai": ai})   # what a user pastes into a cell
    assert reopened.result.recovery.plan_source == checkpoint()


def with_buffered(buffered: dict[str, tuple[AgentEvent, ...]]) -> ai.checkpoint.Checkpoint:
    ckpt = checkpoint("savepoint")
    assert ckpt.keyed is not None
    return replace(ckpt, keyed=replace(ckpt.keyed, buffered=buffered))


def key_inputs(plan: ai.ReplayPlan, key: str) -> list[tuple[str | None, str | None]]:
    return [(i.event.id, i.event.attributes.get("input")) for i in plan.inputs if i.key == key]


def test_buffered_inputs_come_first_in_the_buffers_order_and_the_notes_say_where_the_log_differs() -> None:
    from_log = ai.ReplayPlan.from_log(log(), markers=ai.samples.markers("production"))
    first, second = [i.event for i in from_log.inputs if i.key == "user-0001"][:2]
    new = AgentEvent("_input_event", {"input": "a question the log never saw"}, id="buffered-new")
    ckpt = with_buffered({"user-0001": (second.with_id("buffered-2"), first.with_id("buffered-1")),
                          "user-0009": (new,)})
    plan = ckpt.replay_plan(log())
    # user-0001: the buffer's order wins over the log's; the rest of its inputs follow as the log has them
    expected = [("buffered-2", second.attributes["input"]), ("buffered-1", first.attributes["input"])]
    assert key_inputs(plan, "user-0001")[:2] == expected
    assert key_inputs(plan, "user-0001")[2:] == key_inputs(from_log, "user-0001")[2:]
    # user-0009: its new buffered input first, then its log input; the plan keeps every other key's inputs
    assert key_inputs(plan, "user-0009") == [("buffered-new", "a question the log never saw"),
                                             (None, "is the keyboard in stock")]
    assert len(plan.inputs) == len(from_log.inputs) + 1
    others = [i for i in plan.inputs if i.key not in ("user-0001", "user-0009")]
    assert others == [i for i in from_log.inputs if i.key not in ("user-0001", "user-0009")]
    assert [n for n in plan.notes if "pendingInputEvents" in n] == [
        "user-0001: 2 buffered inputs from checkpoint 3's pendingInputEvents, next after its pending tasks (the log "
        "has them after other inputs of the key; the buffer's order is taken)",
        "user-0009: 1 buffered input from checkpoint 3's pendingInputEvents, next after its pending tasks (not in "
        "the log's inputs: _input_event buffered-new {'input': 'a question the log never saw'})"]
    # a key's inputs are numbered from its restored seqNum on, pending tasks first
    assert plan.seq_of("user-0009") == 4 and [t.key for t in plan.pending] == ["user-0009"]


def test_undecoded_buffered_inputs_leave_the_logs_inputs_and_say_why() -> None:
    ckpt = checkpoint("savepoint")
    assert ckpt.keyed is not None
    odd = replace(ckpt, keyed=replace(ckpt.keyed, buffered={}, input_events={"user-0009": tuple(
        replace(v, decoded=False, value=None, why="a POJO subclass") for v in ckpt.keyed.input_events["user-0009"])}))
    plan = odd.replay_plan(log())
    assert key_inputs(plan, "user-0009") == [(None, "is the keyboard in stock")]
    assert [n for n in plan.notes if "pendingInputEvents" in n] == [
        "user-0009: its buffered inputs from the log (checkpoint 3's pendingInputEvents not decoded: a POJO subclass)"]


def test_a_log_of_some_keys_takes_only_their_restore() -> None:
    some = ai.load(ai.samples.path("production"), business_keys=["user-0001"])
    plan = checkpoint().replay_plan(some)
    assert set(plan.restored_seq) == {"user-0001"} and plan.pending == ()
    assert {i.key for i in plan.inputs} <= {"user-0001"}


def test_a_scan_window_restores_the_checkpoints_plan_for_its_keys() -> None:
    """No Dask: the per-window task, as ``ai.scan(markers=checkpoint)`` runs it on every worker."""
    scan = ai.fleet.plan_scan(ai.samples.path("production", "parquet"), markers=checkpoint())

    def keys(source: ai.checkpoint.Checkpoint | None) -> pd.DataFrame:
        options = ai.fleet.ScanOptions(markers=scan.markers, plan_source=source)
        frames = [ai.fleet.scan_window(scan.spec, w, options).keys for w in scan.windows]
        return ai.fleet.concat_keys(frames).set_index("business_key").sort_index()

    by_file, by_ckpt = keys(None), keys(checkpoint())
    pd.testing.assert_frame_equal(by_ckpt, by_file)   # the sample's checkpoint holds the restore its markers file does
    ckpt = checkpoint()
    assert ckpt.keyed is not None
    # a checkpoint that holds no task for user-0009 changes user-0009's row, and only it
    idle = keys(replace(ckpt, keyed=replace(ckpt.keyed, tasks={}, action_tasks={}, task_count={})))
    changed = {k for k in by_file.index if not by_file.loc[k].equals(idle.loc[k])}
    assert changed == {"user-0009"}


def test_the_production_sample_ships_its_checkpoint() -> None:
    shipped = ai.samples.checkpoint("production")
    assert [p.relative_to(shipped).as_posix() for p in sorted(shipped.rglob("*")) if p.is_file()] == ["chk-4/_metadata"]
    # the same bytes the generator wrote into the fixtures (scripts/gen_checkpoints.sh copies them)
    assert (shipped / "chk-4" / "_metadata").read_bytes() == (PRODUCTION / "checkpoints" / "chk-4" / "_metadata").read_bytes()
    ckpt = ai.checkpoint.read(shipped)
    assert ckpt.recovery_markers() == ai.samples.markers("production") and ckpt.holds_plan()
    with pytest.raises(ai.SourceError, match="sample 'G01' ships no checkpoint; these do: production"):
        ai.samples.checkpoint("G01")


def rounds(plan: ai.ReplayPlan) -> dict[str, list[tuple[int, str | None, object]]]:
    """Per key, each input with the seqNum the plan gives it, its event id and its input."""
    out: dict[str, list[tuple[int, str | None, object]]] = {}
    for item in plan.inputs:
        mine = out.setdefault(item.key, [])
        mine.append((plan.seq_of(item.key) + len(mine) + 1, item.event.id, item.event.attributes.get("input")))
    return out


@pytest.mark.parametrize("kafka_pending", [None, "marker"])
def test_markers_reaching_back_before_the_checkpoint_replay_only_the_rounds_it_had_not_consumed(
        kafka_pending: str | None) -> None:
    # the plan kept the log's inputs of every round in the window under the checkpoint's seqNums: a marker moved
    # back (a 0.4+ Kafka writer's oldest retained state, or an older checkpoint's) replayed rounds the checkpoint
    # had consumed, each one seqNum late (user-0009's in-flight round 4 both re-submitted and replayed as seq 5)
    ckpt = checkpoint()
    own = ckpt.replay_plan(log(), kafka_pending=kafka_pending)
    back = replace(ckpt, markers=tuple({p: o - 150 for p, o in m.items()} for m in ckpt.markers))
    plan = back.replay_plan(log(), kafka_pending=kafka_pending)
    assert ai.ReplayPlan.from_log(log(), markers=back).inputs != own.inputs   # the window does reach back
    # the source rewinds to the checkpoint's own offsets whatever the markers: the same inputs, seqNums and tasks
    assert rounds(plan) == rounds(own) and plan.restored_seq == own.restored_seq and plan.pending == own.pending
    assert rounds(plan)["user-0009"] == [(5, BUFFERED, "is the keyboard in stock")]
    assert any(n.endswith("not replayed: the markers reach back before checkpoint 4, which had consumed those "
                          "rounds") for n in plan.notes)
    assert not any("not replayed" in n for n in own.notes)
    # the log-only plan's note that it cannot tell consumed rounds apart does not stand in the checkpoint's
    said = [n for n in ai.ReplayPlan.from_log(log(), markers=back, kafka_pending=kafka_pending).notes
            if n.startswith("kafka_pending='marker'")]
    assert len(said) == (kafka_pending == "marker") and not any(n in plan.notes for n in said)
    predicted = ai.predict(log(), markers=back, kafka_pending=kafka_pending).tasks
    replayed = {(str(k), int(s)) for k, s in zip(predicted["key"], predicted["seq"])}
    expected = ai.predict(log(), markers=ckpt, kafka_pending=kafka_pending).tasks
    assert replayed == {(str(k), int(s)) for k, s in zip(expected["key"], expected["seq"])}
