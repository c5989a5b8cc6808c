"""Durable-call shapes of the 0.4 line (issue #12 item 6, addendum §4): routing ids, `::` ids, call matching."""

from __future__ import annotations

import pandas as pd
import pytest

from agent_inspect._errors import ReplayError
from agent_inspect.agents._python import PythonAgent
from agent_inspect.codec import (
    CALL_MATCHING,
    ActionState,
    CallResult,
    Event,
    call_matcher,
    call_router,
    decode_action_state,
    encode_action_state,
)
from agent_inspect.executor import CallSlot, ReplayExecutor, as_plan
from agent_inspect.recovery import predict
from agent_inspect.recovery.engine import CallJournal

FID = "shop_agent.tools.lookup::0123456789abcdef"  # the #1016 Python id: <module>.<qualname>::<16-hex digest>


@pytest.mark.parametrize(("function_id", "router"), [
    ("route:support", "support"), ("chat:support:gpt-4o", "support"), ("chat:support:claude", "support"),
    ("judge:support", "support"), ("chat", None), ("tool-call", None), (FID, None), ("chat:support", None),
    ("route:", None), ("s#c", None),
])
def test_routing_ids_name_their_router(function_id: str, router: str | None) -> None:
    assert call_router(function_id) == router


def test_double_colon_ids_and_empty_or_absent_digests_decode() -> None:
    task = Event.new("_input_event", {"input": 1}, id="00000000-0000-4000-8000-000000000001")
    wire = encode_action_state(ActionState(task_event=task, call_results=(CallResult(FID, "", "eyJ9", None, "SUCCEEDED"),)))
    (call,) = decode_action_state(wire).call_results
    assert (call.function_id, call.args_digest) == (FID, "")
    absent = wire.replace(b',"argsDigest":""', b"")
    assert b"argsDigest" not in absent
    (call,) = decode_action_state(absent).call_results
    assert (call.function_id, call.args_digest, call.effective_status) == (FID, "", "SUCCEEDED")


def test_call_matching_modes() -> None:
    assert CALL_MATCHING == ("position", "function-id")
    position, by_id = call_matcher("position"), call_matcher("function-id")
    assert position(FID, "", FID, "") and position(FID, None, FID, "") and not position(FID, "a", FID, "b")
    assert by_id(FID, "a", FID, "b") and not by_id(FID, "a", "other", "a")
    with pytest.raises(ReplayError, match="call_matching"):
        call_matcher("fuzzy")


def test_the_symbolic_journal_matches_by_function_id_when_asked() -> None:
    recorded = [CallSlot.from_record(CallResult(FID, "aaaa", "eyJ9", None, "SUCCEEDED"))]
    for matching, outcome in (("position", "execute"), ("function-id", "hit")):   # the digest differs
        events: list[str] = []
        CallJournal(recorded, report=lambda e: events.append(e.outcome), call_matching=matching,
                    deliver=False).call(FID, "bbbb", lambda: 1)
        assert events[-1] == outcome


def test_the_live_journal_matches_by_function_id_when_asked() -> None:
    recorded = [CallSlot(FID, "aaaa", "SUCCEEDED", b"1")]
    ran: list[int] = []
    events: list[str] = []
    CallJournal(recorded, report=lambda e: events.append(e.outcome)).call(FID, "bbbb", lambda: ran.append(1))
    assert ran == [1] and events[0] == "mismatch"
    events.clear()
    journal = CallJournal(recorded, report=lambda e: events.append(e.outcome), call_matching="function-id",
                              decode=lambda slot: slot.result_payload)
    assert journal.call(FID, "bbbb", lambda: ran.append(2)) == b"1"
    assert ran == [1] and events == ["hit"]


def _routing_agent() -> PythonAgent:
    agent = PythonAgent()

    @agent.action("answer", listens=["_input_event"])
    def answer(event, ctx):  # type: ignore[no-untyped-def]
        ctx.durable_execute("route:support", "", lambda: {"candidates": ["gpt", "claude"]})
        ctx.durable_execute("chat:support:gpt", "", lambda: {"error": "timeout"})
        ctx.durable_execute("chat:support:claude", "", lambda: {"text": "hi"})
        ctx.durable_execute("judge:support", "", lambda: {"ok": True})
        ctx.durable_execute("chat", "", lambda: {"text": "tool round"})
        ctx.send_event("_output_event", {"output": "hi"})

    return agent


def test_the_ledger_groups_routing_calls_under_their_router() -> None:
    agent = _routing_agent()
    ex = ReplayExecutor(agent=agent, plan={"inputs": [("k", "a")]}, key_format="K1.5", seed=1)
    ex.run()
    log = ex.to_log()
    pred = predict(log, plan=as_plan({"inputs": [("k", "a")]}), agent=agent, markers=[], rule="fixed")
    calls = pred.ledger[pred.ledger["kind"] == "call"]
    assert {n: (None if pd.isna(r) else r) for n, r in zip(calls["name"], calls["router"])} == {
        "route:support": "support", "chat:support:gpt": "support", "chat:support:claude": "support",
        "judge:support": "support", "chat": None}
    grouped = pred.by_router()
    assert grouped["router"].tolist() == ["support"] * 4 and grouped["count"].sum() == 4
    totals = pred.ledger_totals()
    assert "router" in totals and totals.loc[totals["name"] == "judge:support", "router"].item() == "support"
