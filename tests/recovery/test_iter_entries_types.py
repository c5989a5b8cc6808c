"""``iter_entries`` gives each Entry field its type whatever the frame's column types (typed log columns as they are)."""

from __future__ import annotations

import numpy as np

import agent_inspect as ai


def test_an_untyped_frame_gives_the_same_entries_as_the_log() -> None:
    log = ai.load(ai.samples.path("G01"))
    frame = log.records.astype(object)            # no typed column: every cell converted as the Entry needs
    frame["seq"] = log.records["seq"].astype("float64")
    frame["is_root"] = log.records["is_root"].to_numpy(dtype=np.int8, na_value=0)
    frame["key_format"] = log.records["key_format"].astype(object)
    typed = list(ai.recovery.iter_entries(log))
    plain = list(ai.recovery.iter_entries(frame))
    assert plain == typed
    entries = [e for _, e, _ in plain if e is not None]
    assert entries and all(type(e.seq) is int and type(e.is_root) is bool and type(e.key_format) is str
                           and type(e.call_count) is int and type(e.pos) is int for e in entries)
