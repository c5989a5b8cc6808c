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
