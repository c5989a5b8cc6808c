"""One join of store flavours: a log whose records mix key formats and a scan whose windows differ both say
"kafka-k1+segment" (sorted, each flavour once), through ``agent_inspect.log.joined_flavour``."""

from __future__ import annotations

import pandas as pd

import agent_inspect as ai
from agent_inspect.log import joined_flavour


def test_flavours_join_sorted_once_each_and_none_when_there_is_none() -> None:
    assert joined_flavour(["segment", "kafka-k1+segment", "kafka-k1"]) == "kafka-k1+segment"
    assert joined_flavour(["segment"]) == "segment"
    assert joined_flavour([]) is None


def test_a_log_mixing_key_formats_joins_their_flavours() -> None:
    records = pd.DataFrame({"key_format": ["K1.5", "K1", None, "K1"]})
    assert ai.log.resolve_runtime("0.4", records).store_flavour == "kafka-k1+segment"
    assert ai.log.resolve_runtime("0.4", records.iloc[:1]).store_flavour == "segment"
