"""A production replay's journal partitions the topic as its base log does: the partition count and the base
ends (where each partition's journal offsets continue) come from one reading of the log."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pandas as pd

from agent_inspect.executor._production import Production, end_offsets
from agent_inspect.raw import RawBatch


def _production(log: Any, num_partitions: int | None = None) -> Production:
    engine: Any = SimpleNamespace(log=log, source_kind=None)
    return Production(engine, "V4", num_partitions, None, False, {})


def _log(end_offsets: dict[int, int] | None, partitions: list[int], offsets: list[int]) -> Any:
    return SimpleNamespace(source=SimpleNamespace(end_offsets=end_offsets),
                           records=pd.DataFrame({"partition": partitions, "offset": offsets}))


def test_the_partition_count_is_one_past_the_last_partition_the_log_knows() -> None:
    assert _production(None).partitions() == 1
    assert _production(_log(None, [], [])).partitions() == 1
    assert _production(_log(None, [0, 3], [4, 9])).partitions() == 4               # records alone
    assert _production(_log({0: 5, 1: 0, 2: 3}, [0], [4])).partitions() == 3      # the source's ends
    assert _production(_log({0: 5, 1: 0}, [0], [4]), num_partitions=6).partitions() == 6   # given


def test_a_checkpoint_marker_has_one_offset_per_partition_continuing_the_log() -> None:
    log = _log({0: 5, 1: 0, 2: 3}, [0, 2], [4, 7])
    n = _production(log).partitions()
    assert end_offsets(RawBatch(), log=log, num_partitions=n) == {0: 5, 1: 0, 2: 8}


def test_a_damaged_partition_number_asks_for_the_count_and_a_given_count_reads_the_log(tmp_path) -> None:
    # a record claiming partition 2^31 - 1 made every checkpoint and to_log() fill 2^31 partitions (MemoryError)
    import json
    from pathlib import Path

    import pytest

    import agent_inspect as ai

    records = [json.loads(line) for line in Path(ai.samples.path("N04")).read_text().splitlines()]
    records[-1]["partition"] = (1 << 31) - 1
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    log = ai.load(tmp_path / "p.jsonl")
    ex = ai.ReplayExecutor(log)
    ex.run()
    for call in (ex.checkpoint, ex.to_log):
        with pytest.raises(ai.ReplayError, match=r"names partition 2,147,483,647, more than a topic holds .*"
                                                 r"pass num_partitions="):
            call()
    ex = ai.ReplayExecutor(log, num_partitions=4)
    ex.run()
    assert set(ex.checkpoint()) == {0, 1, 2, 3, (1 << 31) - 1}
    combined = ex.to_log()
    assert len(combined.records) > len(log.records) and (1 << 31) - 1 in combined.source.end_offsets
