"""A big Parquet file with more row groups than partitions: one task per row group, the same keys as per file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

import agent_inspect as ai
from agent_inspect.fleet import key_frame
from agent_inspect.log import plan_windows


def _files(tmp_path: Path) -> tuple[Path, Path]:
    whole = ai.samples.write_fleet(tmp_path / "fleet.parquet", 120, partitions=2, rounds=3, seed=3)
    split = tmp_path / "fleet-rg.parquet"
    pq.write_table(pq.read_table(whole), split, row_group_size=257, compression="zstd")  # keeps the metadata
    return whole, split


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values("business_key").reset_index(drop=True)


def test_row_group_windows_equal_per_file(tmp_path: Path, dask_client: Any) -> None:
    whole, split = _files(tmp_path)
    groups = pq.ParquetFile(split).metadata.num_row_groups
    assert pq.ParquetFile(whole).metadata.num_row_groups == 1
    _, windows = plan_windows(split)
    assert [w.row_group for w in windows] == list(range(groups)) and groups > 2
    _, per_partition = plan_windows(whole)
    assert [w.partition for w in per_partition] == [0, 1] and all(w.row_group is None for w in per_partition)
    # keys straddle row-group boundaries here, so the scan must rejoin them
    first_group = pq.ParquetFile(split).read_row_group(0).column("key").to_pylist()
    second_group = pq.ParquetFile(split).read_row_group(1).column("key").to_pylist()
    assert {k.split(b"_")[-1] for k in first_group} & {k.split(b"_")[-1] for k in second_group}

    out = tmp_path / "out"
    by_groups = ai.scan(split, client=dask_client, output=out)
    by_file = ai.scan(whole, client=dask_client)
    assert by_groups.complete and len(by_groups.partitions) == groups and len(by_file.partitions) == 2
    assert by_groups.keys["business_key"].is_unique
    pd.testing.assert_frame_equal(_sorted(by_groups.keys), _sorted(by_file.keys))
    pd.testing.assert_frame_equal(_sorted(by_groups.keys), _sorted(key_frame(ai.load(whole))), check_dtype=False)
    # the output holds each record once; a straddling key reopens whole
    log = ai.load(whole)
    again = ai.load(out)
    assert sorted(zip(again.raw.partition, again.raw.offset)) == sorted(zip(log.raw.partition, log.raw.offset))
    key = str(log.records["business_key"].iloc[256])
    assert ai.load(out, business_keys=[key]).raw.value == log.for_key(key).raw.value


def test_a_row_group_read_names_bad_rows_by_their_row_in_the_file(tmp_path: Path) -> None:
    import pyarrow as pa

    from agent_inspect.sources import read_file, read_parquet_partition

    whole, _ = _files(tmp_path)
    table = pq.read_table(whole)
    offsets = table.column("offset").to_pylist()
    offsets[300] = -1  # a position no log has: reported as "row 301"
    bad = table.set_column(table.schema.get_field_index("offset"), "offset", pa.array(offsets, pa.int64()))
    path = tmp_path / "bad.parquet"
    pq.write_table(bad, path, row_group_size=257)
    whole_read = read_file(path)
    group = read_parquet_partition(path, row_group=1)
    assert len(group.batch) == 257 and whole_read.line_errors[300].startswith("row 301:")
    assert group.line_errors == {300 - 257: whole_read.line_errors[300]}
    assert group.batch.offset[300 - 257] == whole_read.batch.offset[300] == 301


def test_a_rejoined_key_is_read_as_its_file_is_read(tmp_path: Path, dask_client: Any) -> None:
    # row group 0: a post-0.4 key's V4 records (main) and the first third of a 0.4 key; row groups 1 and 2: the
    # rest of that key (alone 0.4). The rejoin reads the split key alone (0.4 too): it must read it as the file, main
    import pyarrow as pa

    sample = ai.samples.path("production", "parquet")
    log = ai.load(sample)
    key = "vip_0042"   # the one key whose fixed-rule restore differs between 0.4 and main
    rows = pq.read_table(sample).filter(pa.array(log.records["business_key"].astype(str) == key))
    v4 = pq.read_table(ai.samples.path("subagents_v4", "parquet"))
    v4 = v4.set_column(0, "partition", pa.array([9] * len(v4), v4.schema.field("partition").type))
    third = len(rows) // 3
    path = tmp_path / "mixed.parquet"
    with pq.ParquetWriter(path, rows.schema) as writer:   # more row groups than partitions: a window each
        writer.write_table(pa.concat_tables([v4.cast(rows.schema), rows.slice(0, third)]))
        writer.write_table(rows.slice(third, third))
        writer.write_table(rows.slice(2 * third))
    assert pq.ParquetFile(path).metadata.num_row_groups == 3
    assert ai.log.infer_runtime(ai.load(path)).name == "main"

    result = ai.scan(path, client=dask_client)
    read_as = dict(zip(result.partitions["row_group"], result.partitions["runtime"]))
    # row groups 1 and 2 alone infer 0.4: read again as the file, main (the whole input is read under one runtime)
    assert read_as == {0: "main", 1: "main", 2: "main"} and result.runtime == "main"
    assert dict(zip(result.partitions["row_group"], result.partitions["reread"])) == {0: False, 1: True, 2: True}
    got = result.keys.set_index("business_key").loc[key]
    as_main = key_frame(log.for_key(key), runtime="main").set_index("business_key").loc[key]
    as_04 = key_frame(log.for_key(key), runtime="0.4").set_index("business_key").loc[key]
    assert as_main["fixed_reused"] != as_04["fixed_reused"]   # else this test could not fail
    assert got["fixed_reused"] == as_main["fixed_reused"] and got["records"] == len(rows)
