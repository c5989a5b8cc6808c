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
