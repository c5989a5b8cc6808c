"""Which spec §10.3 known limit a counterexample falls in, read from its full (unminimized) history."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_inspect.checker._history import History
    from agent_inspect.checker._judge import _Eval

__all__ = ["KNOWN_LIMITS", "known_limit"]

KNOWN_LIMITS = (
    "older checkpoint restored mid-round",   # a savepoint of an older checkpoint with restored in-flight tasks
    "tombstoned conflicting root",           # pruning tombstones removed the root a returning branch would hit
    "tainted records",                       # production itself made a stale reuse; later records are tainted
    "#1084 identical siblings, no evidence",  # restored pending siblings: no reused parent's output ids tell them apart
)
"""The spec §10.3 known limits a counterexample can be attributed to (checked in this order)."""


def _latest_checkpoint(h: History) -> int:
    """The failed job's latest checkpoint: the last attempt's newest one, else the one it restored."""
    last = h.attempts[-1] if h.attempts else None
    if last is None:
        return 0
    own = [i for i, c in enumerate(h.checkpoints) if c.attempt == last.number]
    if own:
        return max(own)
    return last.restored or 0


def known_limit(h: History, ev: _Eval | None = None, kind: str = "stale-reuse") -> str | None:
    """The §10.3 known limit a ``kind`` failure of history ``h`` falls in (None: none, a rule defect).
    Only stale reuses are attributed (the limits are about unsafe reuse; reruns and errors get None).

    - *older checkpoint restored mid-round*: the recovery restores a checkpoint older than the failed
      job's latest (a savepoint, possibly of another attempt's lineage) that was taken while a round
      was in flight (it restores pending tasks);
    - *tombstoned conflicting root*: pruning tombstones are in the log;
    - *tainted records*: the judged reuses include records an attempt wrote after its own stale reuse;
    - *#1084 identical siblings, no evidence*: every stale reuse is a sibling's record reused by a task
      that no parent reused in this recovery emitted (restored pending tasks: their ids are never
      compared, spec §10.3). A sibling reuse under a *reused* parent is a rule defect: the parent's
      output ids tell the siblings apart (the fixed rule's identity check, G09).

    For example::

        h = ai.checker.generate_history(4)
        ai.checker.known_limit(h)                      # the §10.3 known limit its stale reuses fall in, or None
    """
    if kind != "stale-reuse":
        return None
    siblings = getattr(ev, "siblings", 0)
    if ev is not None and siblings and siblings == len(ev.stale):
        return KNOWN_LIMITS[3] if getattr(ev, "siblings_unevidenced", 0) == siblings else None
    pending = bool(getattr(h.plan, "pending", ()))
    if pending and h.restored < _latest_checkpoint(h):
        return KNOWN_LIMITS[0]
    if h.tombstones and any(e.status == "TOMB" for e in h.executions):
        return KNOWN_LIMITS[1]
    if ev is not None and getattr(ev, "tainted", None):
        return KNOWN_LIMITS[2]
    return None
