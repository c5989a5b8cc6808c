"""ai.checkpoint.read on real Flink 1.20 / 2.x checkpoints and savepoints (tests/fixtures/checkpoints/)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

import agent_inspect as ai
from agent_inspect import CheckpointFormatError, SourceError
from agent_inspect.codec import KRYO2, KRYO5, parse_metadata, read_kryo_object
from tests.support.flink_metadata import synthetic_metadata, tasks_and_memory_are_what_the_job_wrote

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
RUNS = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").is_file())
AGENT_RUNS = [r for r in RUNS if not json.loads((FIXTURES / r / "expected.json").read_text())["other_job"]]
HEAP_RUNS = [r for r in AGENT_RUNS if "rocksdb" not in r]   # the RocksDB runs' checkpoints hold SST files


def expected(run: str) -> dict[str, Any]:
    return json.loads((FIXTURES / run / "expected.json").read_text())


def int_keys(markers: list[dict[str, int]]) -> list[dict[int, int]]:
    return [{int(p): o for p, o in m.items()} for m in markers]


def test_the_fixtures_cover_both_flink_lines_both_placements_and_parallelisms() -> None:
    wrote = {r: expected(r) for r in AGENT_RUNS}
    versions = {ai.checkpoint.read(FIXTURES / r / "savepoint").flink_version for r in AGENT_RUNS}
    assert versions == {"1.x", "2.x"}
    assert {w["inline"] for w in wrote.values()} == {True, False}
    assert {w["parallelism"] for w in wrote.values()} >= {1, 4}


@pytest.mark.parametrize("run", AGENT_RUNS)
@pytest.mark.parametrize("kind", ["checkpoint", "savepoint"])
def test_markers_are_exactly_what_the_job_wrote(run: str, kind: str) -> None:
    wrote = expected(run)[kind]
    ckpt = ai.checkpoint.read(FIXTURES / run / wrote["path"])
    assert ckpt.checkpoint_id == wrote["checkpoint_id"]
    assert [dict(m) for m in ckpt.markers] == int_keys(wrote["markers"])
    assert ckpt.savepoint is (kind == "savepoint")
    assert ckpt.parallelism == expected(run)["parallelism"]
    assert ckpt.timestamp is not None


@pytest.mark.parametrize("run", AGENT_RUNS)
def test_the_savepoint_keyed_state_is_what_the_job_wrote(run: str) -> None:
    per_key = expected(run)["keyed"]
    ckpt = ai.checkpoint.read(FIXTURES / run / "savepoint")
    assert ckpt.keyed is not None
    tasks_and_memory_are_what_the_job_wrote(ckpt.keyed, per_key)
    # every Kryo element decodes, so a savepoint's list value splits into its elements and their count is known
    assert dict(ckpt.keyed.input_count) == {k: len(v["pendingInputEvents"]) for k, v in per_key.items()
                                            if v["pendingInputEvents"]}
    assert ckpt.not_read == ()


@pytest.mark.parametrize("run", HEAP_RUNS)
def test_a_heap_checkpoint_decodes_every_task_and_event_where_no_length_is_written(run: str) -> None:
    wrote = expected(run)
    per_key = wrote["keyed"]
    ckpt = ai.checkpoint.read(FIXTURES / run / wrote["checkpoint"]["path"])
    assert ckpt.keyed is not None
    tasks_and_memory_are_what_the_job_wrote(ckpt.keyed, per_key)
    assert dict(ckpt.keyed.input_count) == {k: len(v["pendingInputEvents"]) for k, v in per_key.items()
                                            if v["pendingInputEvents"]}
    assert ckpt.not_read == ()
    # each element's size, found by decoding it, is the size the savepoint's framing gives the same element
    savepoint = ai.checkpoint.read(FIXTURES / run / "savepoint").keyed
    assert savepoint is not None
    for name in ("action_tasks", "input_events"):
        sizes = {k: [e.size for e in v] for k, v in getattr(ckpt.keyed, name).items()}
        assert sizes == {k: [e.size for e in v] for k, v in getattr(savepoint, name).items()}
        assert sizes


def test_both_kryo_generations_decode_the_marker_map() -> None:
    for run, generation in (("flink120-p1-file", KRYO2), ("flink2-p1-inline", KRYO5)):
        ckpt = ai.checkpoint.read(FIXTURES / run / "savepoint")
        meta = parse_metadata((FIXTURES / run / "savepoint" / "_metadata").read_bytes())
        assert meta.version == (4 if generation == KRYO2 else 6)
        subtask = next(s for op in meta.operators for s in op.subtasks
                       if s.managed_operator and "recoveryMarker" in s.managed_operator.states)
        handle = subtask.managed_operator
        assert handle is not None and handle.stream is not None
        data = handle.stream.data
        if data is None:
            assert handle.stream.path is not None
            data = (FIXTURES / run / "savepoint" / handle.stream.path).read_bytes()
        offset = handle.states["recoveryMarker"][1][0]
        assert read_kryo_object(data, offset, generation)[0] == dict(ckpt.markers[0])


def test_a_checkpoint_directory_gives_the_latest_completed_or_the_named_checkpoint(tmp_path: Path) -> None:
    run = "flink2-p4-file"
    base = tmp_path / "checkpoints" / "0a82f79a1ad961ec0d7929439dc84fff"
    chk = FIXTURES / run / expected(run)["checkpoint"]["path"]
    shutil.copytree(chk, base / chk.name)
    (base / "chk-999").mkdir()                                    # in progress: no _metadata
    (base / "shared").mkdir()
    ckpt = ai.checkpoint.read(tmp_path / "checkpoints")
    assert ckpt.checkpoint_id == expected(run)["checkpoint"]["checkpoint_id"]
    assert ai.checkpoint.read(base, checkpoint=int(chk.name[4:])).checkpoint_id == ckpt.checkpoint_id
    with pytest.raises(SourceError, match="chk-999 .* did not complete"):
        ai.checkpoint.read(base, checkpoint=999)
    with pytest.raises(SourceError, match=r"no chk-5 under .*found: chk-999, chk-2"):
        ai.checkpoint.read(base, checkpoint=5)
    with pytest.raises(SourceError, match="does not exist"):
        ai.checkpoint.read(tmp_path / "nowhere")


def test_state_files_that_moved_with_the_checkpoint_are_found_beside_metadata(tmp_path: Path) -> None:
    run = "flink120-p1-file"                                      # Flink wrote absolute paths of another machine
    chk = FIXTURES / run / expected(run)["checkpoint"]["path"]
    shutil.copytree(chk, tmp_path / "moved")
    moved = ai.checkpoint.read(tmp_path / "moved")
    assert [dict(m) for m in moved.markers] == int_keys(expected(run)["checkpoint"]["markers"])
    assert moved.keyed is not None and moved.keyed.message_seq
    subtask = next(s for op in parse_metadata((chk / "_metadata").read_bytes()).operators for s in op.subtasks
                   if s.managed_operator and "recoveryMarker" in s.managed_operator.states)
    assert subtask.managed_keyed is not None and subtask.managed_keyed.stream is not None
    keyed_file = str(subtask.managed_keyed.stream.path).rsplit("/", 1)[-1]
    (tmp_path / "moved" / keyed_file).unlink()                    # the keyed state is gone: the markers still read
    without = ai.checkpoint.read(tmp_path / "moved")
    assert without.markers == moved.markers and without.keyed is None
    assert any("keyed state: state file" in why and "is missing" in why for why in without.not_read)
    assert subtask.managed_operator is not None and subtask.managed_operator.stream is not None
    (tmp_path / "moved" / str(subtask.managed_operator.stream.path).rsplit("/", 1)[-1]).unlink()
    with pytest.raises(SourceError, match="state file .* is missing"):
        ai.checkpoint.read(tmp_path / "moved")


def test_file_urls_and_fsspec_urls_read_the_same(tmp_path: Path) -> None:
    import fsspec

    run = "flink2-p4-file"
    sp = FIXTURES / run / "savepoint"
    local = ai.checkpoint.read(sp)
    assert ai.checkpoint.read(sp.as_uri()).markers == local.markers
    mem = fsspec.filesystem("memory")
    for f in sp.iterdir():
        mem.pipe_file(f"/ckpt-test/{run}/savepoint/{f.name}", f.read_bytes())
    try:
        remote = ai.checkpoint.read(f"memory://ckpt-test/{run}/savepoint")
        assert remote.markers == local.markers and remote.keyed == local.keyed
        assert remote.path.startswith("memory://")
    finally:
        mem.rm("/ckpt-test", recursive=True)
    with pytest.raises(SourceError, match="nosuchfs"):
        ai.checkpoint.read("nosuchfs://bucket/checkpoints")


@pytest.mark.parametrize("cut", [3, 12, 40, 200, 700, "properties"])
def test_a_truncated_metadata_says_so(tmp_path: Path, cut: int | str) -> None:
    data = (FIXTURES / "flink2-p1-inline" / "savepoint" / "_metadata").read_bytes()
    end = data.rfind(b"\xac\xed\x00\x05") if cut == "properties" else int(cut)
    (tmp_path / "_metadata").write_bytes(data[:end])
    with pytest.raises(CheckpointFormatError, match="truncated|corrupt") as raised:
        ai.checkpoint.read(tmp_path)
    said = str(raised.value)          # one line naming the checkpoint, that it is cut, and what to do
    assert "\n" not in said and said.startswith(f"{tmp_path}: _metadata is truncated")
    assert said.endswith("; copy it again, or read an earlier checkpoint (checkpoint=N, or its chk-N directory)")


@pytest.mark.parametrize("kind", ["checkpoints/chk-4", "savepoint"])
@pytest.mark.parametrize("inside", [4, 60, 300, -40, -1])
def test_a_metadata_cut_inside_its_trailing_properties_says_so(tmp_path: Path, kind: str, inside: int) -> None:
    # the properties still start with the Java stream magic, so only their end shows the cut (a savepoint cut
    # before "SavepointType" read as a checkpoint)
    data = (FIXTURES / "flink2-p1-inline" / kind / "_metadata").read_bytes()
    start = data.rfind(b"\xac\xed\x00\x05")
    end = start + inside if inside > 0 else len(data) + inside
    (tmp_path / "_metadata").write_bytes(data[:end])
    with pytest.raises(CheckpointFormatError) as raised:
        ai.checkpoint.read(tmp_path)
    said = str(raised.value)
    assert said == (f"{tmp_path}: _metadata is truncated: it ends inside the checkpoint properties that start at "
                    f"byte {start}, {end} bytes in all; copy it again, or read an earlier checkpoint (checkpoint=N, "
                    "or its chk-N directory)")


@pytest.mark.parametrize("kind", ["checkpoints/chk-4", "savepoint"])
@pytest.mark.parametrize("inside", [4, 60, 300, -40, -1])
def test_parse_metadata_itself_refuses_a_cut_inside_the_trailing_properties(kind: str, inside: int) -> None:
    # the codec accepted the cut (only ai.checkpoint.read checked the properties' end): a savepoint cut before
    # "SavepointType" parsed as a checkpoint
    data = (FIXTURES / "flink2-p1-inline" / kind / "_metadata").read_bytes()
    start = data.rfind(b"\xac\xed\x00\x05")
    end = start + inside if inside > 0 else len(data) + inside
    with pytest.raises(CheckpointFormatError) as raised:
        parse_metadata(data[:end])
    assert str(raised.value) == (f"_metadata is truncated: it ends inside the checkpoint properties that start at "
                                 f"byte {start}, {end} bytes in all")


@pytest.mark.parametrize("run", AGENT_RUNS)
def test_every_fixtures_metadata_ends_where_its_properties_do(run: str) -> None:
    for metadata in sorted((FIXTURES / run).glob("**/_metadata")):
        data = metadata.read_bytes()
        assert parse_metadata(data).savepoint == (metadata.parent.name == "savepoint")
        ai.checkpoint.read(metadata, keyed=False)          # no false "truncated"


def test_corrupt_metadata_names_what_was_found(tmp_path: Path) -> None:
    data = bytearray((FIXTURES / "flink2-p1-inline" / "savepoint" / "_metadata").read_bytes())
    (tmp_path / "_metadata").write_bytes(b"PK\x03\x04 not a checkpoint at all")
    with pytest.raises(CheckpointFormatError, match="magic number 0x504b0304"):
        ai.checkpoint.read(tmp_path)
    damaged = bytearray(data)
    damaged[20:24] = b"\x7f\xff\xff\xff"                          # the operator count
    (tmp_path / "_metadata").write_bytes(bytes(damaged))
    with pytest.raises(CheckpointFormatError, match="corrupt|truncated"):
        ai.checkpoint.read(tmp_path)
    marker_at = data.find(b"java.util.HashMa")                    # the Kryo class name of the marker
    damaged = bytearray(data)
    damaged[marker_at - 2] = 0x7F                                 # a class id Kryo never registered
    (tmp_path / "_metadata").write_bytes(bytes(damaged))
    with pytest.raises(CheckpointFormatError, match="recoveryMarker' element does not decode"):
        ai.checkpoint.read(tmp_path)


def test_an_unknown_metadata_version_is_named(tmp_path: Path) -> None:
    data = bytearray((FIXTURES / "flink2-p1-inline" / "savepoint" / "_metadata").read_bytes())
    data[4:8] = (99).to_bytes(4, "big")
    (tmp_path / "_metadata").write_bytes(bytes(data))
    with pytest.raises(CheckpointFormatError, match="unknown checkpoint metadata version 99"):
        ai.checkpoint.read(tmp_path)


def test_another_jobs_checkpoint_says_it_has_no_recovery_marker() -> None:
    other = FIXTURES / "flink2-other-job"
    with pytest.raises(CheckpointFormatError, match=r"no 'recoveryMarker' operator state.*\['SourceReaderState', "
                                                    r"'offsets'\]"):
        ai.checkpoint.read(other / "savepoint")


def test_many_subtasks_read_in_order() -> None:
    markers = [{i * 2: 1000 + i, i * 2 + 1: 2000 + i} for i in range(1000)]
    meta = synthetic_metadata(markers)
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "_metadata").write_bytes(meta)
        ckpt = ai.checkpoint.read(d)
    assert [dict(m) for m in ckpt.markers] == markers
    assert ckpt.parallelism == 1000 and ckpt.keyed is None and ckpt.checkpoint_id == 7


def test_a_full_snapshot_in_the_canonical_layout_is_recognised() -> None:
    # RocksDB full checkpoints write key groups in the canonical (savepoint) layout under a plain key-groups handle
    from agent_inspect.codec import read_keyed_state

    meta = parse_metadata((FIXTURES / "flink2-p4-file" / "savepoint" / "_metadata").read_bytes())
    op = next(o for o in meta.operators if o.uid == "agent-operator")
    for subtask in op.subtasks:
        handle = subtask.managed_keyed
        assert handle is not None and handle.stream is not None and handle.stream.path is not None
        data = (FIXTURES / "flink2-p4-file" / "savepoint" / handle.stream.path).read_bytes()
        as_full = read_keyed_state(data, "full", handle.key_groups, handle.offsets, op.max_parallelism)
        as_savepoint = read_keyed_state(data, "savepoint", handle.key_groups, handle.offsets, op.max_parallelism)
        assert as_full.values == as_savepoint.values and as_full.unread == as_savepoint.unread == set()


@pytest.mark.parametrize("run", ["flink2-rocksdb-incremental", "flink2-rocksdb-full", "flink120-rocksdb-full"])
def test_a_rocksdb_checkpoint_gives_its_markers_and_names_its_keyed_state_not_read(run: str) -> None:
    """Flink's RocksDB backend (1.20 and 2.3) writes its own SST files at every checkpoint, incremental or not (a
    non-incremental one uploads them all): the markers are read, the keyed state is named, and the plan falls back
    to the log."""
    wrote = expected(run)
    ckpt = ai.checkpoint.read(FIXTURES / run / wrote["checkpoint"]["path"])
    assert [dict(m) for m in ckpt.markers] == int_keys(wrote["checkpoint"]["markers"])
    assert ckpt.keyed is None and ckpt.keyed_snapshots == ("incremental",) and not ckpt.holds_plan()
    assert ckpt.not_read == ("subtask 0's keyed state is a RocksDB incremental snapshot (its SST files in RocksDB's "
                             "own format): not read; restored seqNums, pending tasks, buffered inputs and memory "
                             "come from the log",)
    assert ckpt.plan_words() == f"checkpoint {ckpt.checkpoint_id} gives markers only ({ckpt.not_read[0]})"
    # its savepoint is canonical: the keyed state is read as the job wrote it
    savepoint = ai.checkpoint.read(FIXTURES / run / "savepoint")
    assert savepoint.keyed_snapshots == ("savepoint",) and savepoint.keyed is not None
    tasks_and_memory_are_what_the_job_wrote(savepoint.keyed, wrote["keyed"])


def test_a_file_that_is_no_checkpoint_is_named_itself(capsys) -> None:
    """`--checkpoint sample_logs/production.jsonl` said "sample_logs: not a Flink checkpoint _metadata file": the
    folder, not the file given."""
    from pathlib import Path

    from agent_inspect.cli import main

    dump = Path(__file__).resolve().parents[2] / "sample_logs" / "production.jsonl"
    with pytest.raises(ai.CheckpointFormatError, match=rf"^{re.escape(str(dump))}: not a Flink checkpoint"):
        ai.checkpoint.read(dump)
    assert main(["reconstruct", str(dump), "--checkpoint", str(dump)]) == 2
    assert f"agent-inspect: {dump}: not a Flink checkpoint _metadata file" in capsys.readouterr().err
