"""Durable-call matching inside one action execution (spec §9.4, §13.1): the engine's one call journal.

A :class:`CallJournal` is upstream's per-execution durable context: calls are matched *by position* against
the recorded call results; a hit returns (or re-raises) the record, a mismatch truncates, a PENDING slot of a
reconcilable call runs the reconciler. Every decision is reported as a :class:`CallEvent`.
"""

from __future__ import annotations

import base64
import enum
import functools
import io
import json
import logging
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from agent_inspect._bulk import quick_init
from agent_inspect._controls import show_controls
from agent_inspect._errors import ReplayError
from agent_inspect.codec import CallResult, call_matcher, python_args_digest, python_function_id
from agent_inspect.recovery._events import first_field

__all__ = ["CallDecision", "CallSlot", "CallEvent", "CallJournal", "RecordedCallError", "RecordedValue",
           "python_function_id", "python_args_digest", "effective_status"]

_log = logging.getLogger("agent_inspect.executor")

Status = Literal["PENDING", "SUCCEEDED", "FAILED"]


class CallDecision(enum.StrEnum):
    """What one durable call did (:attr:`CallEvent.outcome`); a ``str`` enum, so comparisons with text hold.

    For example::

        ai.recovery.engine.CallDecision.HIT == "hit", [d.value for d in ai.recovery.engine.CallDecision][:4]
    """

    HIT = "hit"                          # recorded result returned
    HIT_FAILED = "hit-failed"            # recorded exception re-raised
    PENDING_HIT = "pending-hit"          # completion-only call on a PENDING slot: null payloads
    MISMATCH = "mismatch"                # identity differs: results cut at the index
    TRUNCATE = "truncate"                # the reconcile path persisted the cut list
    PENDING = "pending"                  # PENDING slot appended before the call runs
    EXECUTE = "execute"                  # ran for real (a symbolic journal: its status was decided)
    RECONCILE = "reconcile"              # the reconciler ran for a PENDING slot
    RESUBMIT = "resubmit"                # main: a PENDING sub-agent slot re-submitted the call
    STUB = "stub"                        # served by a stub (replay call policy)
    SERVED_RECORDED = "served-recorded"  # a rerun served the production record's result (policy)
    DENY = "deny"                        # refused by the replay call policy


class _Unset(enum.Enum):
    """No live value (an enum member: it stays itself through pickling and copying, unlike ``object()``)."""

    UNSET = "unset"

    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset.UNSET


def effective_status(status: str | None, exception_payload: Any) -> Status:
    """Status of a call result; legacy records without ``status`` infer it from the exception (§5.5).

    For example::

        ai.recovery.engine.effective_status(None, None), ai.recovery.engine.effective_status(None, "gASV...")
    """
    if status:
        return status  # type: ignore[return-value]
    return "SUCCEEDED" if exception_payload is None else "FAILED"


@quick_init
@dataclass(frozen=True, slots=True)
class CallSlot:
    """One durable-call result as recorded (raw payload bytes, never unpickled implicitly); ``value`` / ``error``
    hold the live result when the call ran inside this replay.

    For example::

        slot = ai.executor.CallSlot("llm.ask", "", "SUCCEEDED", result_payload=b'"it shipped"')
        slot.identity, slot.result_payload              # payload bytes stay inert unless trusted
    """

    function_id: str
    args_digest: str
    status: Status
    result_payload: bytes | None = None
    exception_payload: bytes | None = None
    value: Any = _UNSET
    error: BaseException | None = None

    @property
    def identity(self) -> tuple[str, str]:
        return (self.function_id, self.args_digest)

    @classmethod
    def from_record(cls, call: Any) -> CallSlot:
        """Build from a decoded codec ``CallResult`` (or any object/dict with the upstream field names)."""
        if type(call) is CallResult:   # a decoded record's (the common case): its fields are read directly
            result, failure = call.result_payload, call.exception_payload
            res = None if result is None else base64.b64decode(result)
            exc = None if failure is None else base64.b64decode(failure)
            return cls(call.function_id or "", call.args_digest or "", effective_status(call.status, exc), res, exc)
        fid = first_field(call, "function_id", "functionId") or ""
        digest = first_field(call, "args_digest", "argsDigest") or ""
        res = _payload_bytes(first_field(call, "result_payload", "resultPayload"))
        exc = _payload_bytes(first_field(call, "exception_payload", "exceptionPayload"))
        return cls(fid, digest, effective_status(first_field(call, "status"), exc), res, exc)


def _payload_bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return base64.b64decode(value)
    raise ReplayError(f"unsupported call payload type {type(value).__name__}; pass bytes or base64 text")


class RecordedCallError(Exception):
    """A recorded failure re-raised into a body when its payload is not (or cannot be) deserialized; ``payload`` is
    the raw exception payload (for Java records the message is "``<FQN>: <message>``")."""

    def __init__(self, message: str, *, function_id: str, payload: bytes | None) -> None:
        super().__init__(message)
        self.function_id = function_id
        self.payload = payload

    def __str__(self) -> str:
        # the message is the payload's text (a Java exception's): as text, e.g. in a traceback, its escapes are shown
        return show_controls(super().__str__())

    def __reduce__(self) -> tuple[Any, tuple[type[RecordedCallError], str, str, bytes | None]]:
        """Pickled by its fields (a Dask worker sends it back): the keyword-only ``__init__`` takes no args tuple."""
        return _recorded_call_error, (type(self), self.args[0] if self.args else "", self.function_id, self.payload)


def _recorded_call_error(cls: type[RecordedCallError], message: str, function_id: str,
                         payload: bytes | None) -> RecordedCallError:
    """A :class:`RecordedCallError` unpickled: its keyword-only arguments passed by name."""
    return cls(message, function_id=function_id, payload=payload)


@dataclass(frozen=True)
class RecordedValue:
    """An opaque recorded result handed to a body instead of unpickling an untrusted payload.

    For example::

        value = ai.executor.RecordedValue("llm.ask", b"<pickled bytes>")   # handed to a body instead of unpickling
        value.function_id
    """

    function_id: str
    payload: bytes | None

    def __repr__(self) -> str:
        size = 0 if self.payload is None else len(self.payload)
        return f"RecordedValue({self.function_id!r}, {size} bytes)"


@quick_init
@dataclass(frozen=True, slots=True)
class CallEvent:
    """What one durable call did: ``outcome`` is a :class:`CallDecision` (``hit``, ``mismatch``, ``execute`` …).

    For example::

        ex = ai.ReplayExecutor(log, markers=markers)
        ex.run(until=lambda step: step.call_index is not None)   # stop at the first durable call
        ex.current.outcome, ex.current.function_id              # its CallEvent's outcome, e.g. "hit"
    """

    index: int
    function_id: str
    args_digest: str
    outcome: str
    status: str | None = None
    recorded: tuple[str, str] | None = None
    results_before: int = 0
    results_after: int = 0


Executor = Callable[[str, str, Callable[[], Any], int], tuple[str, Any]]
"""What a :class:`CallService` runner is: ``(function_id, args_digest, call, index) -> (status, value)``."""


class CallJournal:
    """Position-matched durable calls of one action execution (upstream's DurableExecutionContext).

    ``recorded``: the cached record's call results. ``persist(results)`` runs whenever upstream would write the
    ActionState, ``report`` gets one :class:`CallEvent` per decision, ``run`` (an ``Executor``) serves a call
    that must run (execute / stub / deny; it may raise). ``call_matching``: "position" or "function-id" (#1016).
    ``deliver=False`` is ``predict``'s symbolic journal: the same decisions, and no values reach the body (payloads
    are never decoded or pickled); failures do, as upstream re-raises them (a recorded one as an inert
    :class:`RecordedCallError`), so a body takes the same path in ``predict`` as in a live replay.

    For example::

        journal = ai.recovery.engine.CallJournal()      # nothing recorded: every call executes
        journal.call("llm.ask", "", lambda: "it shipped")
    """

    def __init__(self, recorded: Sequence[CallSlot] = (), *,
                 persist: Callable[[tuple[CallSlot, ...]], None] = lambda results: None,
                 report: Callable[[CallEvent], None] = lambda event: None,
                 run: Executor | None = None,
                 decode: Callable[[CallSlot], Any] | None = None,
                 java: bool = False, call_matching: str = "position", deliver: bool = True) -> None:
        self.results: list[CallSlot] = list(recorded)
        self._same = call_matcher(call_matching)
        self.index = 0
        self._persist = persist
        self._report = report
        self._run = run or run_for_real
        self._decode = decode or decode_recorded
        self._java = java
        self._deliver = deliver
        #: the non-determinism warnings of this execution (upstream logs them)
        self.warnings: list[str] = []
        self._reserved: set[int] = set()     # slots this execution reserved (a fresh call, not a re-submit)

    def call(self, function_id: str, args_digest: str, call: Callable[[], Any], *,
             reconciler: Callable[[], Any] | None = None, internal: bool = False) -> Any:
        """Run one durable call at the current index; returns the (recorded or fresh) result. An ``internal``
        call (a sub-agent call: the operator dispatches the child round) runs as it is, whatever the replay call
        policy: the policy governs calls that leave the job, the child's own calls included."""
        fid, digest, i, before = function_id, args_digest, self.index, len(self.results)
        if i < before:
            slot = self.results[i]
            if self._same(slot.function_id, slot.args_digest, fid, digest):
                if reconciler is None or slot.status != "PENDING":
                    self.index += 1
                    return self._replay(i, slot, before)
                done = self._execute(fid, digest, reconciler, i, reconcile=True)
                return self._settle(i, fid, digest, done, before, recorded=slot.identity)
            # a mismatch cuts the results here; a reconcilable call (§9.4 second list) persists the cut list
            self._cut(i, slot, fid, digest, CallDecision.MISMATCH if reconciler is None else CallDecision.TRUNCATE,
                      before)
            if reconciler is not None:
                self._persist(tuple(self.results))
        if reconciler is None:   # completion-only (§9.4 first list): the result is recorded once the call ran
            return self._settle(i, fid, digest, self._execute(fid, digest, call, i, internal=internal), before)
        self._append_pending(i, fid, digest, before)     # reconcilable: a PENDING slot persisted before it runs
        self._persist(tuple(self.results))
        return self._settle(i, fid, digest, self._execute(fid, digest, call, i), len(self.results))

    def subagent(self, function_id: str, run: Callable[[], Any]) -> Any:
        """A sub-agent call as post-0.4 main makes it (addendum §1.1): a PENDING caller slot is reserved first;
        a terminal slot replays (the child is not dispatched); a PENDING slot this execution reserved runs the
        call (``execute``); one already recorded re-submits it with the same ids (``resubmit``)."""
        i = self.index
        self.reserve([function_id])
        slot = self.results[i]
        self.index += 1
        if slot.status != "PENDING":
            return self._replay(i, slot, len(self.results))
        outcome, value, error = self._execute(function_id, "", run, i, internal=True)
        if outcome == CallDecision.EXECUTE and i not in self._reserved:
            outcome = CallDecision.RESUBMIT
        return self._settle(i, function_id, "", (outcome, value, error), len(self.results), recorded=slot.identity)

    def reserve(self, function_ids: Sequence[str]) -> None:
        """Reserve PENDING caller slots for sub-agent calls about to be made from the current index on,
        in one write (``reservePendingBatch``, addendum §1.1); slots already there with the same identity
        stay, a mismatch cuts the journal there (§9.4)."""
        added = False
        for k, fid in enumerate(function_ids):
            j = self.index + k
            slot = self.results[j] if j < len(self.results) else None
            if slot is not None and slot.identity == (fid, ""):
                continue
            if slot is not None:
                self._warn_mismatch(j, slot, fid, "")
                del self.results[j:]
            self._reserved.add(j)
            self._append_pending(j, fid, "", len(self.results))
            added = True
        if added:
            self._persist(tuple(self.results))

    def _replay(self, i: int, slot: CallSlot, before: int) -> Any:
        status = slot.status
        outcome = {"PENDING": CallDecision.PENDING_HIT, "FAILED": CallDecision.HIT_FAILED}.get(status, CallDecision.HIT)
        self._report(CallEvent(i, slot.function_id, slot.args_digest, outcome, status, slot.identity, before, before))
        if status == "PENDING":
            if self._java:
                raise RecordedCallError(
                    "java.lang.NullPointerException: recorded PENDING slot replayed as a hit "
                    "(upstream Optional.of(null), spec §9.4)", function_id=slot.function_id, payload=None)
            return None
        if status == "FAILED":
            if slot.error is not None:
                raise slot.error
            if not self._deliver:   # re-raised as upstream does, its payload left as recorded (never decoded)
                raise RecordedCallError(f"recorded failure of {slot.function_id} re-raised (payload not decoded)",
                                        function_id=slot.function_id, payload=slot.exception_payload)
            raise self._decode(slot)
        if self._java and slot.result_payload is None and slot.value is _UNSET:
            raise RecordedCallError(
                "java.lang.NullPointerException: recorded null result (upstream Optional.of(null), "
                "spec §9.4)", function_id=slot.function_id, payload=None)
        if not self._deliver:
            return None
        if slot.value is not _UNSET:
            return slot.value
        return self._decode(slot)

    def _execute(self, fid: str, digest: str, call: Callable[[], Any], i: int, *,
                 reconcile: bool = False, internal: bool = False) -> tuple[str, Any, BaseException | None]:
        try:
            outcome, value = (run_for_real if internal else self._run)(fid, digest, call, i)
        except ReplayError:
            self._report(CallEvent(i, fid, digest, CallDecision.DENY, results_before=len(self.results),
                                   results_after=len(self.results)))
            raise
        except Exception as exc:  # noqa: BLE001 - a failing call is recorded as FAILED, like upstream
            return (CallDecision.RECONCILE if reconcile else CallDecision.EXECUTE), None, exc
        if reconcile and outcome == CallDecision.EXECUTE:
            outcome = CallDecision.RECONCILE
        return outcome, value, None

    def _settle(self, i: int, fid: str, digest: str, done: tuple[str, Any, BaseException | None], before: int,
                recorded: tuple[str, str] | None = None) -> Any:
        """Slot ``i`` holds the call's result: report and persist it, and hand it to the body."""
        outcome, value, error = done
        if not self._deliver:   # no payload; a success holds a value (None), so a replay of it is no null result
            slot = CallSlot(fid, digest, "FAILED", error=error) if error is not None else \
                CallSlot(fid, digest, "SUCCEEDED", value=None)
        elif error is not None:
            slot = CallSlot(fid, digest, "FAILED", None, _pickle(error), error=error)
        else:
            slot = CallSlot(fid, digest, "SUCCEEDED", _pickle(value), None, value=value)
        if i < len(self.results):
            self.results[i] = slot
        else:
            self.results.append(slot)
        self.index = i + 1
        self._report(CallEvent(i, fid, digest, outcome, slot.status, recorded, before, len(self.results)))
        self._persist(tuple(self.results))
        if error is not None:
            raise error
        return None if not self._deliver else value

    def _append_pending(self, i: int, fid: str, digest: str, before: int) -> None:
        self.results.append(CallSlot(fid, digest, "PENDING"))
        self._report(CallEvent(i, fid, digest, CallDecision.PENDING, status="PENDING",
                               results_before=before, results_after=len(self.results)))

    def _cut(self, i: int, slot: CallSlot, fid: str, digest: str, outcome: CallDecision, before: int) -> None:
        self._warn_mismatch(i, slot, fid, digest)
        del self.results[i:]
        self._report(CallEvent(i, fid, digest, outcome, recorded=slot.identity, results_before=before,
                               results_after=len(self.results)))

    def _warn_mismatch(self, i: int, slot: CallSlot, fid: str, digest: str) -> None:
        text = (f"Non-deterministic call detected at index {i}: expected functionId={slot.function_id}, "
                f"argsDigest={slot.args_digest}, but got functionId={fid}, argsDigest={digest}. "
                "Clearing subsequent results.")
        self.warnings.append(text)
        if self._deliver:
            _log.warning(text)


def run_for_real(fid: str, digest: str, call: Callable[[], Any], index: int) -> tuple[str, Any]:
    """The default runner of a call that must run: make it (an execution)."""
    return CallDecision.EXECUTE, call()


def _pickle(obj: Any) -> bytes:
    try:
        return _dumps(obj)
    except Exception:  # noqa: BLE001 - an unpicklable value still needs a payload in the journal
        return _dumps(repr(obj))


def _dumps(obj: Any) -> bytes:
    """cloudpickle's bytes of ``obj``, ignoring copyreg reducers of exceptions: dask.distributed's (tblib)
    pickle the traceback too, so a failed call would journal other bytes once distributed was imported."""
    buffer = io.BytesIO()
    _journal_pickler()(buffer).dump(obj)
    return buffer.getvalue()


@functools.cache
def _journal_pickler() -> Any:
    import copyreg
    from collections import ChainMap

    import cloudpickle

    class _Reducers(Mapping[Any, Any]):
        """copyreg's reducers as they are now, less those registered for exception types."""

        def __getitem__(self, cls: Any) -> Any:
            if isinstance(cls, type) and issubclass(cls, BaseException):
                raise KeyError(cls)
            return copyreg.dispatch_table[cls]

        def __iter__(self) -> Iterator[Any]:
            return iter(copyreg.dispatch_table)

        def __len__(self) -> int:
            return len(copyreg.dispatch_table)

    class JournalPickler(cloudpickle.Pickler):
        # the C pickler reads dispatch_table once, from the class: so a class attribute, not an instance one
        dispatch_table = ChainMap(cloudpickle.Pickler._dispatch_table, cast("MutableMapping[Any, Any]", _Reducers()))

        def __init__(self, file: Any) -> None:
            super().__init__(file, protocol=cloudpickle.DEFAULT_PROTOCOL)

    return JournalPickler


def decode_recorded(slot: CallSlot, *, trust_pickles: bool = False) -> Any:
    """The Python value of a recorded payload (for a FAILED slot, the exception to raise): JSON (Java) is
    decoded; pickles only when trusted.

    For example::

        slot = ai.executor.CallSlot("java.tool", "", "SUCCEEDED", result_payload=b'{"status": "shipped"}')
        ai.recovery.engine.decode_recorded(slot)        # JSON decoded; a pickle only with trust_pickles=True
    """
    payload = slot.exception_payload if slot.status == "FAILED" else slot.result_payload
    if payload is None:
        if slot.status == "FAILED":
            return RecordedCallError(f"recorded failure of {slot.function_id} without payload",
                                     function_id=slot.function_id, payload=None)
        return None
    if payload[:1] == b"\x80":
        if trust_pickles:
            import cloudpickle

            obj = cloudpickle.loads(payload)
            if slot.status == "FAILED" and not isinstance(obj, BaseException):
                return RecordedCallError(repr(obj), function_id=slot.function_id, payload=payload)
            return obj
        if slot.status == "FAILED":
            return RecordedCallError(f"recorded Python exception of {slot.function_id} (pickled payload not loaded; "
                                     "pass policies=ai.executor.Policies(trust_payloads=True) to the ReplayExecutor "
                                     "to load it)",
                                     function_id=slot.function_id, payload=payload)
        return RecordedValue(slot.function_id, payload)
    try:
        data = json.loads(payload)
    except ValueError:
        data = payload
    if slot.status == "FAILED":
        java = isinstance(data, dict) and "exceptionClass" in data
        msg = f"{data.get('exceptionClass')}: {data.get('message')}" if java else str(data)
        return RecordedCallError(msg, function_id=slot.function_id, payload=payload)
    return data
