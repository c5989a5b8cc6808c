"""The predictor's durable-call journal (spec §9.4): which calls are served, executed or reconciled."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_inspect.codec import call_matcher

if TYPE_CHECKING:
    pass


__all__ = ["SymbolicCallJournal", "CallOutcome"]


class _Crash(Exception):
    """A lookup FAILed: upstream the task throws and the job restarts in a loop."""


# -- durable calls (§9.4) ---------------------------------------------------------------------------

@dataclass(frozen=True)
class CallOutcome:
    """What one durable call did on replay: ``hit`` / ``reraise`` (served from the journal),
    ``execute`` (ran for real) or ``reconcile`` (a PENDING slot's reconciler ran)."""

    function_id: str
    args_digest: str
    outcome: str
    index: int
    truncated_to: int | None = None
    status: str | None = None


@dataclass
class _Slot:
    function_id: str
    args_digest: str
    status: str
    result_payload: str | None = None
    exception_payload: str | None = None


class SymbolicCallJournal:
    """Position-matched durable-call replay of one action execution (spec §9.4), modelled symbolically.

    It decides only *which* calls are served, executed or reconciled and tracks statuses: bodies get
    no values and recorded failures are not raised. It is the predictor's, independent of the
    executor's live journal (:class:`~agent_inspect.executor.LiveCallJournal`) so the two cross-check.

    ``call_matching`` (``codec.CALL_MATCHING``) compares a call with the slot at its position by
    functionId and argsDigest ("position", the default) or by functionId only ("function-id", #1016).

    ``recorded`` is the record's call results (any objects with ``function_id``, ``args_digest``,
    ``effective_status`` or ``status``, and the payloads). :meth:`call` returns a
    :class:`CallOutcome`; ``results`` is the journal as the next write would persist it.
    """

    def __init__(self, recorded: Sequence[Any] = (), *, call_matching: str = "position") -> None:
        self._same = call_matcher(call_matching)
        self.results: list[_Slot] = [
            _Slot(r.function_id, getattr(r, "args_digest", None) or "", _status(r), getattr(r, "result_payload", None),
                  getattr(r, "exception_payload", None)) for r in recorded]
        self.index = 0
        self.warnings: list[str] = []
        self.writes = 0
        self._reserved: set[int] = set()     # slots this execution reserved (a fresh call, not a re-submit)

    def call(self, function_id: str, args_digest: str, run: Callable[[], Any] | None = None, *,
             reconciler: Callable[[], Any] | None = None) -> CallOutcome:
        """Make one call; ``run``/``reconciler`` are invoked only when the spec says they run."""
        i = self.index
        self.index += 1
        slot = self.results[i] if i < len(self.results) else None
        same = slot is not None and self._same(slot.function_id, slot.args_digest, function_id, args_digest)
        if reconciler is None:
            if same and slot is not None:
                return CallOutcome(function_id, args_digest, "reraise" if slot.status == "FAILED" else "hit", i,
                                   status=slot.status)
            cut = self._truncate(i, slot, function_id, args_digest)
            status = _invoke(run)
            self.results.append(_Slot(function_id, args_digest, status))
            self.writes += 1
            return CallOutcome(function_id, args_digest, "execute", i, cut, status)
        if same and slot is not None and slot.status == "PENDING":
            slot.status = _invoke(reconciler)
            self.writes += 1
            return CallOutcome(function_id, args_digest, "reconcile", i, status=slot.status)
        if same and slot is not None:
            return CallOutcome(function_id, args_digest, "reraise" if slot.status == "FAILED" else "hit", i,
                               status=slot.status)
        cut = self._truncate(i, slot, function_id, args_digest)
        if cut is not None:
            self.writes += 1          # the reconcile path persists the truncated list at once
        new = _Slot(function_id, args_digest, "PENDING")
        self.results.append(new)
        self.writes += 1
        new.status = _invoke(run)
        self.writes += 1
        return CallOutcome(function_id, args_digest, "execute", i, cut, new.status)

    def subagent(self, function_id: str, run: Callable[[], Any] | None) -> CallOutcome:
        """An internal sub-agent call as post-0.4 main makes it (addendum §1.1): it reserves a PENDING
        caller slot first; a terminal slot replays (the child is not dispatched); a PENDING slot re-submits
        the call with the same ids (outcome ``resubmit``: the child is dispatched again and reconciles
        against its own record); no slot reserves one, runs and finalizes."""
        i = self.index
        cut = self.reserve([function_id])
        self.index += 1
        slot = self.results[i]
        if slot.status != "PENDING":
            return CallOutcome(function_id, "", "reraise" if slot.status == "FAILED" else "hit", i,
                               status=slot.status)
        slot.status = _invoke(run)
        self.writes += 1
        if i in self._reserved:
            return CallOutcome(function_id, "", "execute", i, cut, slot.status)
        return CallOutcome(function_id, "", "resubmit", i, status=slot.status)

    def reserve(self, function_ids: Sequence[str]) -> int | None:
        """Reserve PENDING caller slots for sub-agent calls about to be made from the current index on, in
        one write (``reservePendingBatch``): slots already there with the same identity stay; a mismatch
        cuts the journal there (§9.4). Returns the index cut at, if any."""
        cut = None
        added = False
        for k, fid in enumerate(function_ids):
            j = self.index + k
            slot = self.results[j] if j < len(self.results) else None
            if slot is not None and slot.function_id == fid and slot.args_digest == "":
                continue
            if slot is not None:
                cut = self._truncate(j, slot, fid, "") if cut is None else cut
                del self.results[j:]
            self.results.append(_Slot(fid, "", "PENDING"))
            self._reserved.add(j)
            added = True
        if added:
            self.writes += 1
        return cut

    def _truncate(self, i: int, slot: _Slot | None, function_id: str, args_digest: str) -> int | None:
        if slot is None:
            return None
        self.warnings.append(
            f"Non-deterministic call detected at index {i}: expected functionId={slot.function_id}, "
            f"argsDigest={slot.args_digest}, but got functionId={function_id}, argsDigest={args_digest}. "
            "Clearing subsequent results.")
        del self.results[i:]
        return i


def _status(r: Any) -> str:
    eff = getattr(r, "effective_status", None)
    if eff is not None:
        return str(eff)
    status = getattr(r, "status", None)
    if status is not None:
        return str(status)
    return "SUCCEEDED" if getattr(r, "exception_payload", None) is None else "FAILED"


def _invoke(fn: Callable[[], Any] | None) -> str:
    if fn is None:
        return "SUCCEEDED"
    try:
        fn()
    except _Crash:
        raise    # a lookup inside a sub-agent call failed: the job fails, not the call
    except Exception:  # noqa: BLE001 - a failed call is journaled as FAILED, which is what the body sees
        return "FAILED"
    return "SUCCEEDED"


