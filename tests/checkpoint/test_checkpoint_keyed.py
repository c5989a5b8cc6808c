"""The keyed restore of a checkpoint: bad state bytes, unknown serializers, snapshots not read, the replay plan."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import agent_inspect as ai
from agent_inspect.codec import parse_metadata
from tests.support.flink_metadata import synthetic_metadata

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
RUN = "flink2-p4-file"                                            # keyed state in one file per subtask


def expected(run: str) -> dict[str, Any]:
    return json.loads((FIXTURES / run / "expected.json").read_text())


def copied_checkpoint(tmp_path: Path) -> tuple[Path, list[Path]]:
    """The run's retained checkpoint, copied, and its keyed state files in subtask order."""
    chk = FIXTURES / RUN / expected(RUN)["checkpoint"]["path"]
    shutil.copytree(chk, tmp_path / "chk")
    meta = parse_metadata((chk / "_metadata").read_bytes())
    op = next(o for o in meta.operators if o.uid == "agent-operator")
    files = []
    for subtask in sorted(op.subtasks, key=lambda s: s.index):
        handle = subtask.managed_keyed
        assert handle is not None and handle.stream is not None and handle.stream.path is not None
        files.append(tmp_path / "chk" / handle.stream.path.rsplit("/", 1)[-1])
    return tmp_path / "chk", files


def test_truncated_key_group_data_is_named_and_the_markers_still_read(tmp_path: Path) -> None:
    chk, files = copied_checkpoint(tmp_path)
    whole = ai.checkpoint.read(chk)
    data = files[1].read_bytes()
    files[1].write_bytes(data[:len(data) - 40])                  # the last key group loses its tail
    cut = ai.checkpoint.read(chk)
    assert cut.markers == whole.markers
    named = [why for why in cut.not_read if why.startswith("subtask 1's keyed state")]
    assert len(named) == 1
    assert re.fullmatch(r"subtask 1's keyed state: keyed state of key group \d+ is truncated: needed \d+ bytes at "
                        r"byte \d+, \d+ in all", named[0])
    assert cut.keyed is not None and whole.keyed is not None
    # the other subtasks' keys are still read
    assert set(cut.keyed.message_seq) < set(whole.keyed.message_seq)
    assert {k: v for k, v in whole.keyed.message_seq.items() if k in cut.keyed.message_seq} == \
        dict(cut.keyed.message_seq)


def test_an_unknown_serializer_is_named_and_the_value_states_still_read(tmp_path: Path) -> None:
    chk, files = copied_checkpoint(tmp_path)
    whole = ai.checkpoint.read(chk)
    for f in files:
        f.write_bytes(f.read_bytes().replace(b"runtime.PojoSerializerSnapshot", b"runtime.XojoSerializerSnapshot"))
    odd = ai.checkpoint.read(chk)
    assert odd.markers == whole.markers
    assert any("serializer snapshot org.apache.flink.api.java.typeutils.runtime.XojoSerializerSnapshot" in why
               and "not one this reader knows" in why for why in odd.not_read)
    assert odd.keyed is not None and whole.keyed is not None
    assert odd.keyed.message_seq == whole.keyed.message_seq and odd.keyed.last_completed == whole.keyed.last_completed
    assert not any(v.decoded for per_key in odd.keyed.action_tasks.values() for v in per_key)
    assert "actionTasks" in odd.keyed.unread


def test_incremental_keyed_state_is_said_not_read_and_the_markers_are(tmp_path: Path) -> None:
    markers = [{0: 10, 1: 11}, {2: 20}]
    (tmp_path / "_metadata").write_bytes(synthetic_metadata(markers, incremental=True))
    ckpt = ai.checkpoint.read(tmp_path)
    assert [dict(m) for m in ckpt.markers] == markers
    assert ckpt.keyed is None and ckpt.keyed_snapshots == ("incremental", "incremental")
    assert len([why for why in ckpt.not_read if "RocksDB incremental" in why and "not read" in why]) == 2


def test_heap_and_savepoint_snapshots_are_named() -> None:
    wrote = expected(RUN)
    assert ai.checkpoint.read(FIXTURES / RUN / wrote["checkpoint"]["path"]).keyed_snapshots == ("full",) * 4
    assert ai.checkpoint.read(FIXTURES / RUN / "savepoint").keyed_snapshots == ("savepoint",) * 4


def production_plan_notes(ckpt: ai.checkpoint.Checkpoint, log: ai.ActionStateLog) -> list[str]:
    """The plan's notes on each key's pending tasks."""
    return [n for n in ckpt.replay_plan(log).notes if n.startswith("user-") and "pendingInputEvents" not in n]


@pytest.mark.parametrize("where", ["savepoint", "checkpoints"])
def test_the_plans_pending_tasks_are_the_checkpoints_and_say_so(where: str) -> None:
    log = ai.load(ai.samples.path("production"))
    ckpt = ai.checkpoint.read(FIXTURES / "production" / where)
    assert ckpt.keyed is not None
    task, = ckpt.keyed.tasks["user-0009"]
    assert (task.action, task.seq, task.event.type, task.event.id) == ("tool_call", 4, "ToolRequest",
                                                                      "adf9419b-6afa-49dc-a78c-016190cf05eb")
    plan = ckpt.replay_plan(log)
    assert plan.pending == ai.ReplayPlan.from_log(log, markers=ckpt).pending == (task.pending(),)
    assert production_plan_notes(ckpt, log) == [
        f"user-0009: 1 pending task from checkpoint {ckpt.checkpoint_id}'s actionTasks, as the log shows them in flight"]


def test_where_checkpoint_and_log_disagree_the_checkpoint_wins_and_the_notes_say_how() -> None:
    from agent_inspect.agents import AgentEvent

    log = ai.load(ai.samples.path("production"))
    ckpt = ai.checkpoint.read(FIXTURES / "production" / "savepoint")
    assert ckpt.keyed is not None
    task, = ckpt.keyed.tasks["user-0009"]
    other = replace(task, key="user-0001", seq=0, action="chat", event=AgentEvent("_input_event", {"input": "hi"},
                                                                                  id="not-in-the-log"))
    # user-0009 holds another task than the log shows; user-0001 one the log does not show at all
    moved = replace(ckpt, keyed=replace(ckpt.keyed, tasks={"user-0009": (replace(task, action="chat"),),
                                                           "user-0001": (other,)}))
    plan = moved.replay_plan(log)
    assert [(t.key, t.action, t.event.id) for t in plan.pending] == [
        ("user-0009", "chat", task.event.id), ("user-0001", "chat", "not-in-the-log")]
    n = ckpt.checkpoint_id
    assert production_plan_notes(moved, log) == [
        f"user-0009: 1 pending task from checkpoint {n}'s actionTasks (not as the log's view of the tasks in flight has them: "
        f"chat on ToolRequest {task.event.id} (an event the log holds); the log's view also has tool_call on "
        f"ToolRequest {task.event.id}, not re-submitted)",
        f"user-0001: 1 pending task from checkpoint {n}'s actionTasks (not as the log's view of the tasks in flight has them: "
        "chat on _input_event not-in-the-log (an event the log does not hold))"]
    # the same task at another seqNum is the checkpoint's, and said so
    later = replace(ckpt, keyed=replace(ckpt.keyed, tasks={"user-0009": (replace(task, seq=5),)}))
    assert [(t.seq, t.event) for t in later.replay_plan(log).pending] == [(5, task.event)]
    assert production_plan_notes(later, log) == [
        f"user-0009: 1 pending task from checkpoint {n}'s actionTasks (not as the log's view of the tasks in flight "
        f"has them: tool_call on ToolRequest {task.event.id} at seq 5, the log's at seq 4)"]
    # a key the checkpoint holds with no tasks has none, whatever the log infers
    empty = replace(ckpt, keyed=replace(ckpt.keyed, tasks={}, action_tasks={}, task_count={}))
    assert empty.replay_plan(log).pending == ()
    assert production_plan_notes(empty, log) == [
        f"user-0009: no pending tasks (checkpoint {n}'s actionTasks holds none; the log shows tool_call on "
        f"ToolRequest {task.event.id} in flight, not re-submitted)"]


def corrupted(tmp_path: Path, old: bytes, new: bytes) -> ai.checkpoint.Checkpoint:
    """The production heap checkpoint (its keyed state inline in ``_metadata``) with ``old`` replaced by ``new``."""
    chk = FIXTURES / "production" / expected("production")["checkpoint"]["path"]
    data = (chk / "_metadata").read_bytes()
    assert data.count(old) == 1 and len(old) == len(new)
    (tmp_path / "_metadata").write_bytes(data.replace(old, new))
    return ai.checkpoint.read(tmp_path)


@pytest.mark.parametrize(("old", "new", "why"), [
    (b"plan.actions.Actio", b"plan.actions.Xctio",
     "an object of class org.apache.flink.agents.plan.actions.Xction, which this reader does not decode"),
    (b"\x00\x09\x01cha\xf4", b"\x00\x7f\x01cha\xf4", "a reference to object 125, but only 18 were read"),
])
def test_a_corrupted_action_task_is_named_and_the_rest_still_read(tmp_path: Path, old: bytes, new: bytes,
                                                                 why: str) -> None:
    whole = ai.checkpoint.read(FIXTURES / "production" / "checkpoints")
    bad = corrupted(tmp_path, old, new)
    assert bad.markers == whole.markers
    assert bad.keyed is not None and whole.keyed is not None
    assert bad.keyed.message_seq == whole.keyed.message_seq and bad.keyed.short_term == whole.keyed.short_term
    value, = bad.keyed.action_tasks["user-0009"]
    assert not value.decoded and value.serializer == "Kryo org.apache.flink.agents.runtime.operator.ActionTask"
    assert re.fullmatch(r"Kryo org\.apache\.flink\.agents\.runtime\.operator\.ActionTask: Kryo 5 object at byte "
                        rf"\d+: {re.escape(why)}", value.why)
    assert value.size == whole.keyed.action_tasks["user-0009"][0].size    # the only value left in its key group
    assert "user-0009" not in bad.keyed.tasks and "actionTasks" in bad.keyed.unread
    assert [w for w in bad.not_read if w.startswith("subtask 0: actionTasks in key group")] == [
        f"subtask 0: actionTasks in key group 87 (key user-0009): {value.why}; {value.size} bytes without a length "
        "in a heap checkpoint skipped"]
    # the plan falls back to the log's view of the tasks in flight, and says why
    log = ai.load(ai.samples.path("production"))
    assert bad.replay_plan(log).pending == ai.ReplayPlan.from_log(log, markers=bad).pending
    assert production_plan_notes(bad, log) == [
        f"user-0009: 1 pending task from the log (checkpoint {bad.checkpoint_id}'s actionTasks not decoded: {value.why})"]


@pytest.mark.parametrize("run", ["flink2-p1-inline", "flink2-p4-file"])
def test_the_keyed_restore_is_json_ready(run: str) -> None:
    out = ai.checkpoint.read(FIXTURES / run / "savepoint").to_dict()
    text = json.dumps(out)
    assert out["keyed"]["action_tasks"] and "Kryo org.apache.flink.agents.runtime.operator.ActionTask" in text
    assert out["keyed"]["tasks"]["user-0"][0]["event"]["type"] == "_input_event"
    assert out["keyed_snapshots"] == ["savepoint"] * expected(run)["parallelism"]


def test_a_kryo_value_of_jdk_classes_is_decoded_and_an_application_class_is_named() -> None:
    from agent_inspect.codec._flink_metadata import ByteReader
    from agent_inspect.codec._flink_serializers import Serializer, Undecodable, read_value
    from tests.support.flink_metadata import kryo5_hashmap

    kryo = Serializer("kryo", "KryoSerializerSnapshot", type_name="java.lang.Object")
    data = kryo5_hashmap({3: 40}) + b"rest"
    r = ByteReader(data, 0, "keyed state value")
    assert read_value(r, kryo, 5) == {3: 40} and data[r.pos:] == b"rest"
    own = b"\x01\x00" + b"com.example.ActionTas" + bytes([ord("k") | 0x80]) + b"\x01\x05"
    with pytest.raises(Undecodable, match=r"Kryo java.lang.Object: .*com.example.ActionTask"):
        read_value(ByteReader(own, 0, "keyed state value"), kryo, 5)


def real_proxy() -> bytes:
    """The serialization proxy (state meta infos) of a real Flink 2.x heap checkpoint."""
    chk = FIXTURES / "flink2-p1-inline" / expected("flink2-p1-inline")["checkpoint"]["path"]
    meta = parse_metadata((chk / "_metadata").read_bytes())
    handle = next(s.managed_keyed for o in meta.operators for s in o.subtasks if s.managed_keyed is not None)
    assert handle is not None and handle.stream is not None
    data = handle.stream.data if handle.stream.data is not None else (chk / str(handle.stream.path)).read_bytes()
    return data[:min(o for o in handle.offsets if o > 0)]


def production_task() -> bytes:
    """The Kryo bytes of the production sample's one pending ActionTask, as its heap checkpoint holds them."""
    from tests.support.flink_metadata import real_task_element

    path = FIXTURES / "production" / expected("production")["checkpoint"]["path"]
    keyed = ai.checkpoint.read(path).keyed
    assert keyed is not None and keyed.action_tasks["user-0009"][0].size is not None
    return real_task_element((path / "_metadata").read_bytes(), keyed.action_tasks["user-0009"][0].size)


def test_a_large_heap_checkpoint_reads_every_key_around_undecodable_values() -> None:
    from agent_inspect.codec import read_keyed_state
    from agent_inspect.codec._flink_state import state_infos
    from tests.support.flink_metadata import synthetic_heap_keyed_state

    proxy = real_proxy()
    ids = {info.name: i for i, info in enumerate(state_infos(proxy, len(proxy))[1])}
    data, offsets, wrote = synthetic_heap_keyed_state(proxy, ids, 3000, production_task())
    state = read_keyed_state(data, "full", (0, 127), offsets, 128)
    assert state.values["messageSequenceNumber"] == wrote
    assert state.values["lastCompletedSequenceNumber"] == {k: v - 1 for k, v in wrote.items()}
    assert {k: [t.value.fields["action"].fields["name"] for t in v] for k, v in state.values["actionTasks"].items()} \
        == {k: ["tool_call"] for k in wrote}
    assert {k: list(v) for k, v in state.values["shortTermMemory"].items()} == {k: ["last_input"] for k in wrote}
    # each key group's event block stops at its first Kryo value; its other entries are named, not guessed
    events = state.values["pendingInputEvents"]
    assert all(len(v) == 1 and not v[0].decoded for v in events.values()) and len(events) == 128
    assert state.unread == {"pendingInputEvents"}
    assert len([w for w in state.not_read if w.startswith("pendingInputEvents in key group")]) == 128


def test_kryo_memory_values_are_named_and_the_states_after_them_still_read() -> None:
    from agent_inspect.codec import read_keyed_state
    from agent_inspect.codec._flink_state import state_infos
    from tests.support.flink_metadata import synthetic_heap_keyed_state

    proxy = real_proxy()
    # the memory maps' value serializer becomes the Kryo one the job's events have (upstream's MemoryItem may be)
    namespace = b"\x00\x14NAMESPACE_SERIALIZER"
    runtime = b"org.apache.flink.api.java.typeutils.runtime."
    pojo_at = proxy.find(b"\x00B" + runtime + b"PojoSerializerSnapshot\x00\x00\x00\x02\x00\x18CheckpointGen$MemoryItem")
    kryo_at = proxy.rfind(b"\x00G" + runtime + b"kryo.KryoSerializerSnapshot", 0,
                          proxy.find(b"\x00!org.apache.flink.agents.api.Event"))    # pendingInputEvents' snapshot
    assert pojo_at > 0 and kryo_at > 0
    pojo, kryo = proxy[pojo_at:proxy.find(namespace, pojo_at)], proxy[kryo_at:proxy.find(namespace, kryo_at)]
    proxy = proxy.replace(pojo, kryo)
    key, infos, _, why = state_infos(proxy, len(proxy))
    assert why is None
    assert {i.name: i.serializer.label for i in infos if i.serializer and "Memory" in i.name} == {
        "sensoryMemory": "Map<String, Kryo org.apache.flink.agents.api.Event>",
        "shortTermMemory": "Map<String, Kryo org.apache.flink.agents.api.Event>"}
    ids = {info.name: i for i, info in enumerate(infos)}
    data, offsets, wrote = synthetic_heap_keyed_state(proxy, ids, 1000, production_task(), kryo_memory=True)
    state = read_keyed_state(data, "full", (0, 127), offsets, 128)
    assert state.values["messageSequenceNumber"] == wrote
    assert {k: len(v) for k, v in state.values["actionTasks"].items()} == {k: 1 for k in wrote}
    for name in ("sensoryMemory", "shortTermMemory"):
        held = state.values[name]
        assert len(held) == 128                        # the first key of each key group, then its block is left
        assert all(list(v) == ["last_input"] and v["last_input"].size is None and not v["last_input"].decoded
                   and "com.example.InputEvent" in v["last_input"].why for v in held.values())
    assert state.unread == {"sensoryMemory", "shortTermMemory", "pendingInputEvents"}
