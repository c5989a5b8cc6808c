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


def test_the_plan_names_pending_tasks_the_checkpoint_and_the_log_disagree_on() -> None:
    log = ai.load(ai.samples.path("production"))
    restore = json.loads(ai.samples.path("production", "markers").read_text())["restore"]
    ckpt = ai.checkpoint.read(FIXTURES / "production" / "savepoint")
    assert ckpt.keyed is not None
    held = {k: n for k, n in ckpt.keyed.task_count.items() if n}
    assert held == {k: sum(1 for p in restore["pending"] if p[0] == k) for k in {p[0] for p in restore["pending"]}}
    plan = ckpt.replay_plan(log)
    planned = {t.key for t in plan.pending}
    # the log alone (no refresh rows in this sample) does not show the task in flight; the checkpoint does
    assert [n for n in plan.notes if "pending actionTasks" in n] == [
        f"{k}: checkpoint {ckpt.checkpoint_id} holds {n} pending actionTasks, the plan re-submits 0 (the log's view "
        "of the tasks in flight)" for k, n in sorted(held.items()) if k not in planned]
    agreeing = replace(ckpt.keyed, task_count={k: sum(t.key == k for t in plan.pending) for k in planned})
    assert not [n for n in replace(ckpt, keyed=agreeing).replay_plan(log).notes if "pending actionTasks" in n]


def test_keys_the_checkpoint_did_not_read_tasks_for_are_not_called_task_free() -> None:
    from agent_inspect.agents import AgentEvent
    from agent_inspect.recovery import PendingTask, ReplayPlan

    ckpt = ai.checkpoint.read(FIXTURES / "production" / "savepoint")
    assert ckpt.keyed is not None
    plan = ReplayPlan(pending=(PendingTask("user-0001", 3, "chat", AgentEvent("InputEvent")),))
    read = replace(ckpt, keyed=replace(ckpt.keyed, task_count={}))
    assert read._pending_differences(plan) == [
        f"user-0001: checkpoint {ckpt.checkpoint_id} holds 0 pending actionTasks, the plan re-submits 1 (the log's "
        "view of the tasks in flight)"]
    unread = replace(ckpt, keyed=replace(ckpt.keyed, task_count={}, unread=("actionTasks",)))
    assert unread._pending_differences(plan) == []


@pytest.mark.parametrize("run", ["flink2-p1-inline", "flink2-p4-file"])
def test_the_keyed_restore_is_json_ready(run: str) -> None:
    out = ai.checkpoint.read(FIXTURES / run / "savepoint").to_dict()
    text = json.dumps(out)
    assert out["keyed"]["action_tasks"] and "POJO CheckpointGen$ActionTask" in text
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
    assert handle is not None and handle.stream is not None and handle.stream.data is not None
    return handle.stream.data[:min(o for o in handle.offsets if o > 0)]


def test_a_large_heap_checkpoint_reads_every_key_around_undecodable_values() -> None:
    from agent_inspect.codec import read_keyed_state
    from agent_inspect.codec._flink_state import state_infos
    from tests.support.flink_metadata import synthetic_heap_keyed_state

    proxy = real_proxy()
    ids = {info.name: i for i, info in enumerate(state_infos(proxy, len(proxy))[1])}
    data, offsets, wrote = synthetic_heap_keyed_state(proxy, ids, 3000)
    state = read_keyed_state(data, "full", (0, 127), offsets, 128)
    assert state.values["messageSequenceNumber"] == wrote
    assert state.values["lastCompletedSequenceNumber"] == {k: v - 1 for k, v in wrote.items()}
    assert {k: [t.value["sequenceNumber"] for t in v] for k, v in state.values["actionTasks"].items()} == \
        {k: [v] for k, v in wrote.items()}
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
    kryo_at = proxy.find(b"\x00G" + runtime + b"kryo.KryoSerializerSnapshot")
    assert pojo_at > 0 and kryo_at > 0
    pojo, kryo = proxy[pojo_at:proxy.find(namespace, pojo_at)], proxy[kryo_at:proxy.find(namespace, kryo_at)]
    proxy = proxy.replace(pojo, kryo)
    key, infos, _, why = state_infos(proxy, len(proxy))
    assert why is None
    assert {i.name: i.serializer.label for i in infos if i.serializer and "Memory" in i.name} == {
        "sensoryMemory": "Map<String, Kryo CheckpointGen$Event>", "shortTermMemory": "Map<String, Kryo CheckpointGen$Event>"}
    ids = {info.name: i for i, info in enumerate(infos)}
    data, offsets, wrote = synthetic_heap_keyed_state(proxy, ids, 1000, kryo_memory=True)
    state = read_keyed_state(data, "full", (0, 127), offsets, 128)
    assert state.values["messageSequenceNumber"] == wrote
    assert {k: len(v) for k, v in state.values["actionTasks"].items()} == {k: 1 for k in wrote}
    for name in ("sensoryMemory", "shortTermMemory"):
        held = state.values[name]
        assert len(held) == 128                        # the first key of each key group, then its block is left
        assert all(list(v) == ["last_input"] and v["last_input"].size is None and not v["last_input"].decoded
                   and "com.example.InputEvent" in v["last_input"].why for v in held.values())
    assert state.unread == {"sensoryMemory", "shortTermMemory", "pendingInputEvents"}
