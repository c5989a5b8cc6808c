"""``compact_history`` takes what the other history functions take (a log, a reconstruction or a records frame);
given a log it raised AttributeError ('ActionStateLog' object has no attribute 'empty')."""

from __future__ import annotations

import pandas as pd
import pytest

import agent_inspect as ai


def test_compact_history_of_a_log_is_that_of_its_records() -> None:
    log = ai.load(ai.samples.path("production")).for_key("user-0019")
    pd.testing.assert_frame_equal(ai.history.compact_history(log), ai.history.compact_history(log.records))


def test_compact_history_of_something_else_says_what_it_takes() -> None:
    with pytest.raises(TypeError, match="a log, a reconstruction or a records frame"):
        ai.history.compact_history(ai.samples.path("production"))
