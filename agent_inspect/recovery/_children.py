"""Which sub-agent child records a record-by-record replay dispatches, as the runtime runs sub-agents.

``reconstruct`` replays every cached record of a round in write order. A child task (its trigger an
``InternalSubagentCallEvent``) only runs when something sends that envelope again, and what does
depends on the runtime (addendum §1.1, :func:`agent_inspect.store.runtime_model`), exactly as
``predict`` and the executor decide it:

- the record that sent the envelope was not dispatched: nothing sends it;
- it was REUSED: a root caller re-emits its stored bootstrap, unless the runtime has
  ``no_rebootstrap`` (main); a child re-emits its forwarded envelopes, unless the runtime has
  ``subagent_results`` (main: a reused child answers with its result events only);
- the caller's record holds the call (``<sessionId>#<callId>``) and the caller RESUMEs: a terminal slot
  is replayed (no envelope); a PENDING slot is re-submitted with the same ids only under
  ``pending_slots`` (main), else replayed as a hit; a REUSED caller makes no call at all;
- otherwise the call is made again (a re-run caller), and the child is dispatched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agent_inspect.agents import SUBAGENT_EVENT
from agent_inspect.store import Outcome

if TYPE_CHECKING:
    import pandas as pd

    from agent_inspect.store import Entry, RuntimeModel

__all__ = ["ChildDispatch", "NOT_DISPATCHED"]

#: the outcome of a cached record no task looks up (as ``predict`` names it)
NOT_DISPATCHED = "NOT-DISPATCHED"


class ChildDispatch:
    """Per round: who sent which event and with what outcome; :meth:`skip` says why a child is not run."""

    def __init__(self, model: RuntimeModel, records: pd.DataFrame, value: Callable[[int], Any] | None) -> None:
        self.model = model
        self._value = value
        self._call_of: dict[int, str] = {}
        if "subagent_session_id" in records and "subagent_call_id" in records:
            for pos, session, call in zip(records.index.tolist(), records["subagent_session_id"].astype(object),
                                          records["subagent_call_id"].astype(object)):
                if isinstance(session, str) and isinstance(call, str):
                    self._call_of[int(pos)] = f"{session}#{call}"
        self._slots: dict[int, dict[str, str]] = {}
        self.start_round()

    def start_round(self) -> None:
        self._sent_by: dict[str, tuple[Entry, str | None]] = {}
        self._callers: list[tuple[Entry, str | None]] = []

    def done(self, entry: Entry, outcome: str | None) -> None:
        """``entry`` was replayed with ``outcome`` (None: not dispatched)."""
        for out in entry.output_event_ids:
            self._sent_by[out] = (entry, outcome)
        if entry.task_event_type != SUBAGENT_EVENT:
            self._callers.append((entry, outcome))

    def skip(self, entry: Entry) -> str | None:
        """Why the child task of ``entry`` is not dispatched, or None when it is (or ``entry`` is no child)."""
        if entry.task_event_type != SUBAGENT_EVENT:
            return None
        sender = self._sent_by.get(entry.task_event_id or "")
        if sender is not None:
            parent, outcome = sender
            if outcome is None:
                return "the record that sent its envelope was not dispatched"
            if outcome == Outcome.REUSE.value:
                if parent.task_event_type == SUBAGENT_EVENT:
                    return ("a reused child's forwarded envelopes are not sent again; it answers with its result "
                            "events (main, addendum §1.1)") if self.model.subagent_results else None
                return ("a reused root caller's stored bootstrap envelope is not sent again (main, addendum §1.1)"
                        if self.model.no_rebootstrap else None)
            if parent.task_event_type == SUBAGENT_EVENT:
                return None                           # a re-executed child forwards its envelopes again
        return self._by_caller(entry)

    def _by_caller(self, entry: Entry) -> str | None:
        fid = self._call_of.get(entry.pos) if entry.pos is not None else None
        if fid is None:
            return None
        for caller, outcome in reversed(self._callers):
            status = self._slot(caller, fid)
            if status is None:
                continue
            if outcome == Outcome.REUSE.value:
                return "its caller was reused: the call is not made again"
            if outcome != Outcome.RESUME.value:
                return None                           # the caller re-runs and makes the call again
            if status != "PENDING":
                return "the caller's recorded call result is replayed: no envelope is sent (addendum §1.1)"
            if not self.model.pending_slots:
                return "the caller's PENDING slot is replayed as a hit: the call is not made again"
            return None                               # main: re-submitted with the same ids
        return None

    def _slot(self, caller: Entry, fid: str) -> str | None:
        if caller.pos is None or self._value is None:
            return None
        slots = self._slots.get(caller.pos)
        if slots is None:
            slots = {}
            try:
                state = self._value(caller.pos)
            except Exception:  # noqa: BLE001 - an undecodable caller simply shows no call
                state = None
            for c in getattr(state, "call_results", ()) or ():
                slots[str(c.function_id)] = str(c.status or ("FAILED" if c.exception_payload else "SUCCEEDED"))
            self._slots[caller.pos] = slots
        return slots.get(fid)
