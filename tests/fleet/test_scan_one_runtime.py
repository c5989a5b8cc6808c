"""A scan reads its input under one runtime, the one ``ai.load`` of the whole input infers: its windows inferred
their own (a partition holding only 0.4 records was predicted as 0.4 while the topic as a whole reads as 0.3), so
the scan's per-key outcomes were not ``predict``'s on the loaded input. Windows that inferred another runtime are
read again under the input's; a single-runtime input reads no window twice."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pandas as pd
from _scan_reference import compared, reference

import agent_inspect as ai
from agent_inspect.codec import ActionState, Event, encode_action_state

sys.path.insert(0, str(Path(__file__).parents[1] / "recovery"))
from recovery_logs import INPUT_CLASS, LogBuilder, inp, work

_MARKERS = [{0: 8, 1: 2}]


def _upgraded_topic(path: Path) -> Path:
    """Partition 0: two keys written by 0.4 (outputs with lineage, each completion re-appended by a checkpoint: a
    refresh row under 0.4, a write of its own under 0.3); partition 1: a key whose outputs carry no lineage (0.3).
    Loaded whole it reads as 0.3; partition 0 alone reads as 0.4, and key "j" has other outcomes under it."""
    b = LogBuilder(fmt="K1.5")
    u1 = "0d6d1c4e-7e39-3b7b-9d8e-1a2b3c4d5e6f"
    for key in ("j", "k"):
        b.partitions[key] = 0
        for seq in range(3):
            b.run(key, seq, "IA", inp(f"{key}{seq}"), action_uuid=u1, outs=[work("a")])
            last = len(b.batch) - 1
            part, off = b.batch.partition[last], b.offsets[b.batch.partition[last]]
            b.offsets[part] = off + 1
            b.batch.append(part, off, 1_700_000_000_000 + off, b.batch.key[last], b.batch.value[last])
    b.partitions["old"] = 1
    for seq in range(2):
        e = inp(f"old{seq}")
        sk = b.state_key("old", seq, "IA", e, action_uuid=u1)
        task = Event.new(e.type, e.attrs, id=e.id, event_class=INPUT_CLASS)
        b._write("old", sk, encode_action_state(ActionState(task_event=task)))
        out = Event.new("WorkEvent", {"x": "a"}, id=work("a").id)   # no upstream event: no lineage
        b._write("old", sk, encode_action_state(ActionState(task_event=task, output_events=(out,), completed=True)))
    return ai.sources.write_parquet(b.log(), path)


def test_windows_that_infer_another_runtime_are_read_under_the_inputs(dask_client: Any, tmp_path: Path) -> None:
    path = _upgraded_topic(tmp_path / "upgraded.parquet")
    log = ai.load(path)
    assert log.runtime().name == "0.3"
    plan = ai.fleet.plan_scan(path)
    own = [ai.log.read_window(plan.spec, w).runtime() for w in plan.windows]
    assert [i.name for i in own] == ["0.4", "0.3"]            # what each window alone infers
    assert ai.log.joined_runtime(own) == log.runtime()        # the windows together: the whole's answer
    result = ai.scan(path, markers=_MARKERS, client=dask_client)
    got = compared(result)
    pd.testing.assert_frame_equal(got, reference(log, _MARKERS)[got.columns].astype("int64"))
    assert result.runtime == "0.3" and list(result.partitions["runtime"]) == ["0.3", "0.3"]
    assert list(result.partitions["reread"]) == [True, False]
    assert result.runtime_provenance.startswith("0.3: inferred from the whole input")
    assert "1 window read again" in result.runtime_provenance


def test_a_single_runtime_input_reads_no_window_twice(dask_client: Any) -> None:
    result = ai.scan(ai.samples.path("production", "parquet"), client=dask_client)
    assert len(result.partitions) == 4 and not result.partitions["reread"].any()
    assert result.runtime == "0.4" and result.runtime_provenance.startswith("0.4: inferred from the whole input")
    given = ai.scan(ai.samples.path("production", "parquet"), runtime="0.3", client=dask_client)
    assert not given.partitions["reread"].any() and given.runtime_provenance.startswith("0.3: given")


def test_joined_runtime_is_the_whole_logs_inference() -> None:
    for name in ("production", "production_v4", "subagents"):
        path = ai.samples.path(name, "parquet")
        plan = ai.fleet.plan_scan(path)
        parts = [ai.log.read_window(plan.spec, w).runtime() for w in plan.windows]
        whole = ai.load(path).runtime()
        assert ai.log.joined_runtime(parts) == whole, name
    assert ai.log.joined_runtime([]).name == "unknown"


def test_windows_read_the_inputs_store_kind(dask_client: Any, tmp_path: Path) -> None:
    """A Parquet dump whose partition 0 carries Fluss agent keys reads, loaded whole, as a Fluss store (its K1 keys
    "fluss-k1"); partitions 1-3 alone read as Kafka ("kafka-k1": the snapshot store), so the scan said its store ran
    "fluss-k1+kafka-k1" and sent the original rule to a fleet-wide pass the input does not need."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = ai.samples.path("production_k1", "parquet")
    table = pq.read_table(src)
    keys = ai.load(src).records["business_key"].astype(str)
    agent = [k if p == 0 else None for k, p in zip(keys, table.column("partition").to_pylist())]
    table = table.set_column(table.schema.get_field_index("agent_key"), "agent_key", pa.array(agent, pa.string()))
    path = tmp_path / "fluss-k1.parquet"
    pq.write_table(table, path)
    log, markers = ai.load(path), ai.samples.markers("production_k1")
    assert log.runtime().store_flavour == "fluss-k1"
    result = ai.scan(path, markers=markers, client=dask_client)
    got = compared(result)
    pd.testing.assert_frame_equal(got, reference(log, markers)[got.columns].astype("int64"))
    assert result.store_flavour == "fluss-k1" and set(result.partitions["source_kind"]) == {"fluss"}
    assert sorted(result.partitions["reread"]) == [False, True, True, True] and result.fleet_wide == ()
