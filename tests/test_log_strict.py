"""ActionStateLog rows of values the codec refuses or flags: kept, positioned, with a reason (spec §5)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from agent_inspect import ValueFormatError
from agent_inspect.codec import (
    GENERIC_EVENT,
    event_uuid,
    format_state_key,
    name_action_uuid,
)
from agent_inspect.log import ActionStateLog
from agent_inspect.sources import RawBatch, SourceInfo

SOURCE = SourceInfo(kind="file", location="/tmp/strict.jsonl", topic="t", file_format="jsonl")
ATTRS = {"input": "a"}
TASK = {"@class": GENERIC_EVENT, "id": "00000000-0000-4000-8000-000000000001", "type": "_input_event",
        "attributes": ATTRS}
KEY = format_state_key("K1", seq=1, event_uuid=event_uuid(ATTRS), action_uuid=name_action_uuid("act"),
                       key_text="user-1").encode()


def load(values: list[bytes]) -> ActionStateLog:
    b = RawBatch()
    for i, v in enumerate(values):
        b.append(0, i, None, KEY, v)
    return ActionStateLog.from_raw(b, SOURCE)


def value(*, spaced: bool = False, **fields: object) -> bytes:
    return json.dumps({"taskEvent": TASK, **fields}, separators=None if spaced else (",", ":")).encode()


def test_unsupported_envelope_version_is_an_error_row_with_its_columns_filled():
    env = {"serde": "kryo", "version": 2, "payload": "AA=="}
    log = load([value(shortTermMemoryUpdates=[{"path": "a", "value": {"serde": "kryo", "version": 1,
                                                                         "payload": "AA=="}}], completed=True),
                value(sensoryMemoryUpdates=[{"path": "s", "value": None}],
                      shortTermMemoryUpdates=[{"path": "a", "value": 1}, {"path": "b", "value": env}],
                      completed=True),
                value(shortTermMemoryUpdates=[{"path": "a", "value": {"serde": "x"}}], completed=True),
                value(shortTermMemoryUpdates=[{"path": "a", "value": env}], completed=True, spaced=True),
                value(shortTermMemoryUpdates=[{"path": "a", "value": {"serde": "kryo", "version": 1}}],
                      completed=True)])
    r = log.records
    assert [pd.isna(e) for e in r["error"]] == [True, False, True, False, True]
    assert r["error"].iat[1] == ("value: shortTermMemoryUpdates[1].value is a Kryo envelope of version 2; "
                                 "readers accept only version 1")
    row = r.iloc[1]
    assert (row["completed"], row["task_event_type"], row["short_term_update_count"], row["sensory_update_count"]) \
        == (True, "_input_event", 2, 1)
    assert log.value(1).short_term_memory_updates[1].envelope.supported is False
    assert r["error"].iat[3] == ("value: shortTermMemoryUpdates[0].value is a Kryo envelope of version 2; "
                                 "readers accept only version 1")
    assert list(log.errors.index) == [1, 3]
    fmts = r["value_format"]
    assert [fmts.iat[i] for i in (0, 2, 3, 4)] == ["V3", "V2a", "V3", "V2a"]  # not whole envelopes: plain JSON


def test_values_that_are_not_action_states_are_error_rows_naming_the_field():
    log = load([b"{}", b'{"foo":1}', value(completed=True),
                json.dumps({"taskEvent": {**TASK, "attributes": 42}}).encode(),
                value(callResults=[{"functionId": "f", "status": "s"}]),
                value(outputEvents=[{"x": 1}], futureTop=1),
                value(callResults=[{"functionId": "f", "status": None}], futureTop=1)])
    r = log.records
    assert list(r["error"].iloc[[0, 1, 3, 4, 5]]) == [
        "value: not an ActionState (no known field)",
        "value: not an ActionState (no known field)",
        "value: taskEvent.attributes must be an object, got int",
        "value: callResults[0].status must be one of PENDING, SUCCEEDED, FAILED, got 's'",
        "value: outputEvents[0].id is missing",
    ]
    assert list(log.errors.index) == [0, 1, 3, 4, 5]
    assert list(r["offset"]) == list(range(7))  # nothing dropped, positions kept
    assert r["completed"].iat[2] and r["calls_succeeded"].iat[6] == 1
    with pytest.raises(ValueFormatError, match="no known field"):
        log.value(0)
    assert log.value(6).extra == {"futureTop": 1}


def test_log_and_codec_agree_on_what_is_a_whole_envelope():
    values = [{"serde": "kryo", "version": 1, "payload": "AA=="},
              {"serde": "kryo", "version": 1, "payload": "AA==", "x": 1},
              {"serde": "kryo", "version": 1, "payload": "AA==", "x": "y"},
              {"serde": "kryo", "version": 1, "payload": 1}]
    log = load([value(shortTermMemoryUpdates=[{"path": "a", "value": v}], completed=True) for v in values])
    assert list(log.records["value_format"]) == ["V3", "V2a", "V2a", "V2a"]
    assert [log.value(i).short_term_memory_updates[0].envelope is not None for i in range(4)] \
        == [True, False, False, False]
