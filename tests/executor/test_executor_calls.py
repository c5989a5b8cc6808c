"""Durable-call matching at call level: divergence-cases.md D01–D06 and spec §9.4."""

from __future__ import annotations

import base64
import logging

import cloudpickle
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_inspect.executor import (
    CallSlot,
    RecordedCallError,
    RecordedValue,
    python_args_digest,
    python_function_id,
)
from agent_inspect.recovery.engine import CallJournal, decode_recorded


def ask_llm(question: str) -> str:   # module-level so its function id is stable
    raise AssertionError("the model must not be called on a hit")


ASK = python_function_id(ask_llm)


class Spy:
    def __init__(self, value=None, exc=None):
        self.calls = 0
        self.value, self.exc = value, exc

    def __call__(self):
        self.calls += 1
        if self.exc is not None:
            raise self.exc
        return self.value


def ok(fid, digest, value):
    return CallSlot(fid, digest, "SUCCEEDED", cloudpickle.dumps(value), None)


def failed(fid, digest, exc):
    return CallSlot(fid, digest, "FAILED", None, cloudpickle.dumps(exc))


def journal(recorded, **kw):
    writes, events = [], []
    j = CallJournal(recorded, persist=writes.append, report=events.append,
                    decode=lambda s: decode_recorded(s, trust_pickles=True), **kw)
    return j, writes, events


def test_python_identity_matches_spec_vector():
    assert python_args_digest(("What is Flink?",), {}) == "2a7286cdad649b6b"
    assert ASK == f"{ask_llm.__module__}.ask_llm"
    assert python_function_id(lambda: 1).endswith(".<lambda>")


def test_d01_completion_only_replay():
    d = python_args_digest(("q",), {})
    rec = [ok(ASK, d, "answer"), failed("my_agent.fetch", "f1", ValueError("boom"))]
    j, writes, events = journal(rec)
    assert j.call(ASK, d, Spy()) == "answer"
    with pytest.raises(ValueError, match="boom"):
        j.call("my_agent.fetch", "f1", Spy())
    notify = Spy("sent")
    assert j.call("my_agent.notify", "n1", notify) == "sent"
    assert notify.calls == 1
    assert [e.outcome for e in events] == ["hit", "hit-failed", "execute"]
    assert len(writes) == 1 and len(writes[0]) == 3          # one new record with 3 results
    assert writes[0][2].status == "SUCCEEDED"


def test_d02_mismatch_truncates_and_later_calls_run(caplog):
    rec = [ok(ASK, "aaaa", "old"), ok("my_agent.fetch", "f1", 1)]
    j, writes, events = journal(rec)
    first, second = Spy("new"), Spy(2)
    with caplog.at_level(logging.WARNING, logger="agent_inspect.executor"):
        assert j.call(ASK, "bbbb", first) == "new"
    assert "Non-deterministic call detected at index 0" in caplog.text
    assert j.call("my_agent.fetch", "f1", second) == 2        # past the cut: runs for real
    assert (first.calls, second.calls) == (1, 1)
    assert [e.outcome for e in events] == ["mismatch", "execute", "execute"]
    assert [len(w) for w in writes] == [1, 2]                  # the next record holds exactly the new result
    assert writes[0][0].identity == (ASK, "bbbb")


def test_d03_reconcile_pending_slot():
    rec = [CallSlot("my_agent.post_to_crm", "3ab26fa0936b6293", "PENDING")]
    j, writes, events = journal(rec)
    original, reconciler = Spy("posted"), Spy("reconciled")
    assert j.call("my_agent.post_to_crm", "3ab26fa0936b6293", original, reconciler=reconciler) == "reconciled"
    assert (original.calls, reconciler.calls) == (0, 1)
    assert [e.outcome for e in events] == ["reconcile"]
    assert writes[-1][0].status == "SUCCEEDED"


def test_d03_reconciler_failure_becomes_failed_result():
    rec = [CallSlot("my_agent.post_to_crm", "d", "PENDING")]
    j, writes, _ = journal(rec)
    with pytest.raises(RuntimeError):
        j.call("my_agent.post_to_crm", "d", Spy(), reconciler=Spy(exc=RuntimeError("crm down")))
    assert writes[-1][0].status == "FAILED"


def test_d03_variant_without_reconciler_is_a_null_hit():
    rec = [CallSlot("my_agent.post_to_crm", "d", "PENDING")]
    j, writes, events = journal(rec)
    original = Spy("posted")
    assert j.call("my_agent.post_to_crm", "d", original) is None      # Python returns None
    assert original.calls == 0 and writes == []
    assert events[0].outcome == "pending-hit"
    jj, _, _ = journal(rec, java=True)
    with pytest.raises(RecordedCallError, match="NullPointerException"):
        jj.call("my_agent.post_to_crm", "d", Spy())                     # Java: Optional.of(null)


def test_reconcilable_paths_no_slot_and_different_slot():
    j, writes, events = journal([])
    assert j.call("f", "d", Spy(1), reconciler=Spy(2)) == 1
    assert [e.outcome for e in events] == ["pending", "execute"]
    assert [w[-1].status for w in writes] == ["PENDING", "SUCCEEDED"]
    j, writes, events = journal([ok("g", "x", 0), ok("h", "y", 0)])
    assert j.call("f", "d", Spy(1), reconciler=Spy(2)) == 1
    assert [e.outcome for e in events] == ["truncate", "pending", "execute"]
    assert [len(w) for w in writes] == [0, 1, 1]                        # the cut list is written at once


def test_reconcilable_terminal_slot_replays():
    j, writes, events = journal([ok("f", "d", "done")])
    assert j.call("f", "d", Spy(), reconciler=Spy()) == "done"
    assert writes == [] and events[0].outcome == "hit"


def test_d04_legacy_null_status():
    res = base64.b64encode(cloudpickle.dumps("v")).decode()
    exc = base64.b64encode(cloudpickle.dumps(ValueError("x"))).decode()
    a = CallSlot.from_record({"functionId": "f1", "argsDigest": "d1", "resultPayload": res, "exceptionPayload": None})
    b = CallSlot.from_record({"functionId": "f2", "argsDigest": "d2", "resultPayload": None, "exceptionPayload": exc})
    assert (a.status, b.status) == ("SUCCEEDED", "FAILED")


def test_d05_retries_served_in_order():
    fid = "flink_agents.plan.actions.chat_model_action.ChatModel.chat"
    rec = [failed(fid, "d", TimeoutError("t1")), failed(fid, "d", TimeoutError("t2")), ok(fid, "d", "resp")]
    j, writes, events = journal(rec)
    model = Spy("fresh")
    errors = []
    for _ in range(3):
        try:
            result = j.call(fid, "d", model)
            break
        except TimeoutError as exc:
            errors.append(str(exc))
    assert errors == ["t1", "t2"] and result == "resp" and model.calls == 0
    assert writes == []


def test_d06_java_identity_without_args():
    rec = [CallSlot("chat", "", "SUCCEEDED", b'"Paris"', None)]
    j, _, events = journal(rec, java=True)
    assert j.call("chat", "", Spy("other prompt's answer")) == "Paris"   # hit although the prompt changed
    assert events[0].outcome == "hit"


def test_java_failure_payload_is_rethrown_as_text():
    payload = b'{"exceptionClass":"java.net.SocketTimeoutException","message":"Read timed out"}'
    j, _, _ = journal([CallSlot("chat", "", "FAILED", None, payload)], java=True)
    with pytest.raises(RecordedCallError, match="java.net.SocketTimeoutException: Read timed out"):
        j.call("chat", "", Spy())


def test_a_java_failure_message_is_inert_as_text():
    # the recorded exception's message is the payload's text: a traceback showing it sent its escapes to the terminal
    payload = b'{"exceptionClass":"x.Boom","message":"read \\u001b]0;pwned\\u0007\\u001b[2J\\r\\u202e"}'
    err = decode_recorded(CallSlot("chat", "", "FAILED", None, payload))
    assert isinstance(err, RecordedCallError)
    assert str(err) == "x.Boom: read \\x1b]0;pwned\\x07\\x1b[2J\\x0d\\u202e"
    assert err.args == ("x.Boom: read \x1b]0;pwned\x07\x1b[2J\r\u202e",)   # the exact text stays in args


def test_untrusted_pickles_stay_opaque():
    slot = ok("f", "d", {"secret": 1})
    value = decode_recorded(slot)
    assert isinstance(value, RecordedValue) and value.payload == slot.result_payload
    err = decode_recorded(failed("f", "d", ValueError("x")))
    assert isinstance(err, RecordedCallError) and "trust_payloads" in str(err)


@settings(deadline=None, max_examples=60)
@given(recorded=st.lists(st.sampled_from(["a", "b", "c"]), max_size=5),
       body=st.lists(st.sampled_from(["a", "b", "c"]), max_size=6))
def test_position_matching_invariants(recorded, body):
    """Hits are exactly the longest common prefix; afterwards every call runs, and the final list is the body."""
    j, writes, events = journal([ok(f, "d", f.upper()) for f in recorded])
    for f in body:
        assert j.call(f, "d", Spy(f.upper())) == f.upper()
    prefix = 0
    while prefix < min(len(recorded), len(body)) and recorded[prefix] == body[prefix]:
        prefix += 1
    outcomes = [e.outcome for e in events if e.outcome != "mismatch"]
    assert outcomes == ["hit"] * prefix + ["execute"] * (len(body) - prefix)
    final = writes[-1] if writes else tuple(j.results)
    if len(body) > prefix:
        assert [s.function_id for s in final] == body


def test_an_untrusted_pickled_failure_names_the_executor_argument_that_loads_it():
    """``trust_payloads`` is a field of Policies, not an executor keyword (``ReplayExecutor(log, trust_payloads=True)``
    is a TypeError): the message names the argument a user passes."""
    import agent_inspect as ai

    slot = CallSlot("m.f", "", "FAILED", exception_payload=b"\x80\x05not-loaded")
    err = decode_recorded(slot)
    assert isinstance(err, RecordedCallError)
    assert "policies=ai.executor.Policies(trust_payloads=True)" in str(err)
    assert "trust_payloads" in ai.executor.Policies.__dataclass_fields__


def test_a_recorded_call_error_survives_pickling() -> None:
    """A Dask worker sends it back pickled: its keyword-only ``__init__`` made unpickling a TypeError."""
    import pickle

    err = RecordedCallError("java.io.IOException: gone\u202e", function_id="llm.ask", payload=b"\x00raw")
    for dumps, loads in ((pickle.dumps, pickle.loads), (cloudpickle.dumps, pickle.loads)):
        back = loads(dumps(err))
        assert type(back) is RecordedCallError and str(back) == str(err)
        assert (back.function_id, back.payload, back.args) == ("llm.ask", b"\x00raw", err.args)
