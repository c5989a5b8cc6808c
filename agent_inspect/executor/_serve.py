"""How a durable call that must run is served in a replay: executed (once), stubbed, served, or denied (§12)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agent_inspect._errors import ReplayError
from agent_inspect.executor._policy import CallPolicy, Policies
from agent_inspect.executor._steps import StepOutcome
from agent_inspect.recovery.engine import CallEvent, CallSlot, Executor, decode_recorded

__all__ = ["CallServer", "call_reason"]

_Memo = tuple[tuple[str, str], str, Any, BaseException | None]


class CallServer:
    """Applies the replay call policy; executed calls are memoised by ordinal across restarts, so ``back()``
    (a re-run from the start) does not call an external function twice."""

    def __init__(self, policies: Policies) -> None:
        self.policies = policies
        self._memo: dict[int, _Memo] = {}
        self._ordinal = 0

    def restart(self) -> None:
        """A new pass from the start: ordinals count again, the memo stays."""
        self._ordinal = 0

    def decoder(self) -> Callable[[CallSlot], Any]:
        trust = self.policies.trust_payloads
        return lambda slot: decode_recorded(slot, trust_pickles=trust)

    def runner(self, prod_calls: Sequence[CallSlot]) -> Executor:
        """The ``run`` hook of a call journal; ``prod_calls`` are the production record's results."""
        policies = self.policies
        decode = self.decoder()

        def run(fid: str, digest: str, call: Callable[[], Any], index: int) -> tuple[str, Any]:
            mode = policies.call_policy
            if mode is CallPolicy.EXECUTE:
                return self._memoised(fid, digest, call)
            if mode is CallPolicy.RECORDED and index < len(prod_calls):
                slot = prod_calls[index]
                if slot.identity == (fid, digest) and slot.status != "PENDING":
                    if slot.status == "FAILED":
                        raise decode(slot)
                    return StepOutcome.SERVED_RECORDED, decode(slot)
            has_stub, value = policies.stub_for(fid, digest)
            if has_stub and mode in (CallPolicy.STUB, CallPolicy.RECORDED):
                return StepOutcome.STUB, value
            raise ReplayError(f"durable call {fid} (args digest {digest!r}) at index {index} was denied by "
                              f"the replay call policy {mode.value!r}; add a stub for it or use calls='execute'")

        return run

    def _memoised(self, fid: str, digest: str, call: Callable[[], Any]) -> tuple[str, Any]:
        n = self._ordinal
        self._ordinal += 1
        hit = self._memo.get(n)
        if hit is not None and hit[0] == (fid, digest):
            _, outcome, value, error = hit
            if error is not None:
                raise error
            return outcome, value
        try:
            value = call()
        except Exception as exc:
            self._memo[n] = ((fid, digest), StepOutcome.EXECUTE, None, exc)
            raise
        self._memo[n] = ((fid, digest), StepOutcome.EXECUTE, value, None)
        return StepOutcome.EXECUTE, value


_REASONS: dict[str, str] = {
    StepOutcome.HIT: "recorded result replayed (identity matches at this index)",
    StepOutcome.HIT_FAILED: "recorded failure re-raised (identity matches at this index)",
    StepOutcome.PENDING_HIT: "completion-only call on a PENDING slot: hit with null payloads (§9.4)",
    StepOutcome.PENDING: "PENDING slot appended before running the call",
    StepOutcome.EXECUTE: "no recorded result: the call runs",
    StepOutcome.RECONCILE: "PENDING slot with the same identity: the reconciler runs instead of the call",
    StepOutcome.RESUBMIT: "PENDING sub-agent caller slot: the call is re-submitted with the same ids (main)",
    StepOutcome.STUB: "served by a stub (replay call policy)",
    StepOutcome.SERVED_RECORDED: "served the production record's result (replay call policy)",
    StepOutcome.DENY: "denied by the replay call policy: the body gets a ReplayError and the job stops",
}


def call_reason(ce: CallEvent) -> str:
    if ce.outcome == StepOutcome.MISMATCH:
        return f"non-deterministic call: recorded {ce.recorded} at this index; results cut here"
    if ce.outcome == StepOutcome.TRUNCATE:
        return f"reconcilable call on a different slot {ce.recorded}: results cut and persisted"
    return _REASONS.get(ce.outcome, ce.outcome)
