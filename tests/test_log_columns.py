"""Per-record columns of ActionStateLog that the bulk load computes without decoding twice (spec §5.5)."""

from __future__ import annotations

from agent_inspect.codec import ActionState, CallResult, Event, decode_action_state, encode_action_state
from agent_inspect.log import ActionStateLog
from agent_inspect.sources import RawBatch, SourceInfo

SOURCE = SourceInfo(kind="file", location="/tmp/columns.jsonl", file_format="jsonl")
KEY = b"user_0_7e1a8e43-6a9c-3b7c-8d0c-1a2b3c4d5e6f_0c6f2a1e-5b3d-3e4f-9a8b-7c6d5e4f3a2b"


def test_legacy_call_status_follows_the_exception_payload() -> None:
    calls = (CallResult("f", "a", "gAWV", None, None), CallResult("g", "b", None, "ZXJy", None),
             CallResult("h", "c", None, None, None), CallResult("i", "d", None, None, "PENDING"))
    value = encode_action_state(ActionState(task_event=Event.new("_input_event", {}), call_results=calls),
                                value_format="V2a")
    value_v1 = encode_action_state(ActionState(task_event=Event.new("_input_event", {}), call_results=calls[:3]),
                                   value_format="V1")
    batch = RawBatch([0, 0], [0, 1], [None, None], [KEY, KEY], [value, value_v1])
    r = ActionStateLog.from_raw(batch, SOURCE).records
    want = [[c.effective_status for c in decode_action_state(v).call_results] for v in (value, value_v1)]
    assert want == [["SUCCEEDED", "FAILED", "SUCCEEDED", "PENDING"], ["SUCCEEDED", "FAILED", "SUCCEEDED"]]
    for row, statuses in zip(r.itertuples(), want):
        assert (row.calls_succeeded, row.calls_failed, row.calls_pending) == (
            statuses.count("SUCCEEDED"), statuses.count("FAILED"), statuses.count("PENDING"))
