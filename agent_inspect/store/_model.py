"""Plain data of the recovery model: cached entries, lookup tasks, cache events, decisions."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from agent_inspect._bulk import quick_init

__all__ = [
    "Entry", "Task", "Outcome", "RecordStatus", "CacheEvent", "Divergence", "LookupDecision", "PruneResult",
    "DIVERGENCE_KINDS",
]

DIVERGENCE_KINDS = (
    "root-conflict",      # roots with different input fingerprints at one (key, seq) (spec §10.3)
    "count>1",            # the original rule's count check (spec §8.2)
    "miss-eviction",      # a lookup missed and evicted the key's later rounds (spec §8.2 step 2, §10.3 step 2)
    "identity-mismatch",  # an evidenced event id differs from the cached record's (spec §10.3 step 3)
    "round-regression",   # a record of (k, s) after records of (k, s' > s) (spec §10.3, optional flag)
    "branch-change",      # the branch-aware variant dropped records of another branch (spec §10.3 known limits)
    "cross-key",          # snapshot Kafka eviction of every key's entries with seq > s (spec §8.2)
    "parser-crash",       # snapshot K1 strict 4-part parser threw on key text with '_' (spec §8.3)
    "undecodable",        # a record of the rebuild window did not decode; skipped, upstream's rebuild fails
    "restore-failure",    # K2 restore checks: malformed key, key group out of range, fingerprint (§6.5)
)
"""Kinds a :class:`Divergence` (and the cache event it caused) can have."""


class Outcome(enum.StrEnum):
    """What recovery does with one action task (spec §0.2, §9.3), in the spec's notation.

    For example::

        p = ai.predict(log, markers=markers)
        (p.tasks["outcome"] == ai.store.Outcome.RERUN.value).sum(), [o.value for o in ai.store.Outcome]
    """

    REUSE = "REUSE"
    RESUME = "RESUME"
    RERUN = "RERUN"
    FAIL = "FAIL"
    #: a cached record of a replayed round that no task looked up (spec §11.4.5)
    NOT_DISPATCHED = "NOT-DISPATCHED"


#: the members as module constants: reading one off the enum class costs about 60 ns (a lookup or two per get)
_REUSE, _RESUME, _RERUN, _FAIL = Outcome.REUSE, Outcome.RESUME, Outcome.RERUN, Outcome.FAIL


class RecordStatus(enum.StrEnum):
    """What a restore did with one record (``Reconstruction.records["status"]``).

    For example::

        result = ai.reconstruct(log, markers=markers)
        result.records["status"].value_counts()          # LIVE, EVICTED, SUPERSEDED, OUTSIDE ...
        (result.records["status"] == ai.store.RecordStatus.EVICTED.value).sum()
    """

    LIVE = "live"                # cached when the recovery has run: a lookup of its task finds it
    EVICTED = "evicted"          # removed by an eviction (miss, count > 1, identity mismatch, round regression, cross-key)
    INVALIDATED = "invalidated"  # removed by a root conflict (or dropped as another branch's record)
    SUPERSEDED = "superseded"    # a later write to the same state key replaced it (last write wins)
    PRUNED = "pruned"            # deleted by a tombstone (or a prune)
    OUTSIDE = "outside"          # not read by the rebuild: before the markers, or a partition no marker names
    TOMBSTONE = "tombstone"      # the tombstone record itself
    ERROR = "error"              # the key or value did not decode; upstream could not use it either
    REFRESH = "refresh"          # a checkpoint-time re-append of a retained state, byte-identical (0.4+, addendum §2)


@quick_init
@dataclass(frozen=True, slots=True)
class Entry:
    """The cached view of one record (what the upstream cache holds for one state key).

    ``pos`` is the record's position in the log (``log.records`` index), or None for a write made
    during a simulated replay; such writes may carry their decoded ``value`` (an ``ActionState``).
    ``branch`` is an opaque tag a rule may attach (the branch-aware rule does); ``attempt`` is the
    attempt number of the record within its business key, when known.

    For example::

        session = ai.recovery.rebuild(log, "original", markers)
        entry = next(iter(session.store.entries()))      # what the cache holds for one state key
        entry.business_key, entry.seq, entry.completed, entry.pos
    """

    state_key: str
    business_key: str
    seq: int
    event_uuid: str
    action_uuid: str
    key_format: str = "K1.5"
    key_text: str | None = None
    is_root: bool = False
    completed: bool = False
    task_event_id: str | None = None
    task_event_type: str | None = None
    output_event_ids: tuple[str, ...] = ()
    call_count: int = 0
    calls_pending: int = 0
    calls_succeeded: int = 0
    calls_failed: int = 0
    pos: int | None = None
    attempt: int | None = None
    branch: Any = field(default=None, compare=False)
    value: Any = field(default=None, compare=False, repr=False)

    @property
    def fingerprint(self) -> str:
        """The input-attribute fingerprint (the event UUID segment of the state key, spec §10.3)."""
        return self.event_uuid


@quick_init
@dataclass(frozen=True, slots=True)
class Task:
    """One action task looked up in the store: action ``action_uuid`` on event ``event_id`` at (key, seq).

    ``event_uuid`` is the fingerprint of the event's attributes; ``state_key`` the key the operator
    computes for it. ``key_text`` is needed by the K1 snapshot flavours (prefix matching).
    ``action`` is the action name when known (display only). ``round_input`` is the fingerprint of
    the input that started the task's round, when the driver knows it (the branch-aware rule compares a
    begin-event task, queued before the round's root, as if that root had already joined its path).

    For example::

        session = ai.recovery.rebuild(log, "original", markers)
        task = ai.store.Task.for_entry(next(iter(session.store.entries())))   # the task that wrote an entry
        task.business_key, task.seq, task.state_key
    """

    business_key: str
    seq: int
    state_key: str
    event_uuid: str
    action_uuid: str
    event_id: str | None = None
    event_type: str | None = None
    is_root: bool = False
    key_format: str = "K1.5"
    key_text: str | None = None
    action: str | None = None
    round_input: str | None = None

    @classmethod
    def for_entry(cls, entry: Entry, *, event_id: str | None = None, action: str | None = None) -> Task:
        """The task that would look ``entry`` up again (same key, seq, action and fingerprint)."""
        return cls(
            business_key=entry.business_key, seq=entry.seq, state_key=entry.state_key,
            event_uuid=entry.event_uuid, action_uuid=entry.action_uuid,
            event_id=entry.task_event_id if event_id is None else event_id,
            event_type=entry.task_event_type, is_root=entry.is_root, key_format=entry.key_format,
            key_text=entry.key_text, action=action,
        )


@quick_init
@dataclass(frozen=True, slots=True)
class Divergence:
    """A divergence a rule detected at (key, seq): what it was, which records, and a one-line reason.

    For example::

        session = ai.reconstruct(log, markers=markers).session
        d = session.divergences[0]                # what the rule saw at (key, seq), and which records
        d.kind, d.business_key, d.seq, d.positions[:5], d.explanation
    """

    id: int
    business_key: str
    seq: int
    kind: str
    step: str                     # "rebuild" | "lookup" | "prune"
    positions: tuple[int, ...]    # log positions of the conflicting / triggering records
    explanation: str
    trigger_pos: int | None = None


@quick_init
@dataclass(frozen=True, slots=True)
class CacheEvent:
    """One removal from the cache: which entries went, by which rule step, and why.

    ``op`` is "evict" (seq > s), "invalidate" (seq >= s), "remove" (one entry), "cross-key"
    (every key, seq > s), "prune" (seq <= s), "delete" (a tombstone) or "supersede" (a later write to
    the same state key replaced it).

    For example::

        session = ai.reconstruct(log, markers=markers).session
        event = session.events[0]                 # one removal from the cache
        event.op, event.step, event.business_key, event.seq, event.positions, event.reason
    """

    index: int
    op: str
    step: str
    business_key: str | None
    seq: int | None
    removed: tuple[Entry, ...]
    reason: str
    divergence_id: int | None = None
    trigger_pos: int | None = None

    @property
    def positions(self) -> tuple[int, ...]:
        """Log positions of the removed entries (replay writes have none)."""
        return tuple(e.pos for e in self.removed if e.pos is not None)


@quick_init
@dataclass(frozen=True, slots=True)
class LookupDecision:
    """The rule's answer to one lookup: outcome, the entry found (if any), reason, cache events caused.

    For example::

        session = ai.recovery.rebuild(log, "original", markers)
        entry = next(iter(session.store.entries()))
        decision = session.lookup(ai.store.Task.for_entry(entry))
        decision.outcome, decision.found, decision.reason, decision.events
    """

    outcome: Outcome
    entry: Entry | None
    reason: str
    events: tuple[CacheEvent, ...] = ()
    divergences: tuple[Divergence, ...] = ()

    @classmethod
    def found(cls, entry: Entry | None, reason: str = "") -> LookupDecision:
        """REUSE a completed entry, RESUME an incomplete one, RERUN when there is none."""
        if entry is None:
            return _NOTHING_CACHED if not reason else cls(_RERUN, None, reason)
        if entry.completed:
            return cls(_REUSE, entry, reason or "completed record cached")
        return cls(_RESUME, entry, reason or "incomplete record cached")

    @classmethod
    def fail(cls, reason: str) -> LookupDecision:
        """The lookup throws upstream: the task fails (and the job restarts)."""
        return cls(_FAIL, None, reason)


_NOTHING_CACHED = LookupDecision(Outcome.RERUN, None, "no cached record")   # immutable: one for every such miss


@dataclass(frozen=True, slots=True)
class PruneResult:
    """What a prune removed; ``failed`` holds the reason when the upstream prune throws.

    For example::

        session = ai.recovery.rebuild(log, "original", markers)
        pruned = session.prune("user-0001", 1)          # what completing a checkpoint removes for a key
        len(pruned.removed), pruned.events
    """

    removed: tuple[Entry, ...]
    failed: str | None = None
    events: tuple[CacheEvent, ...] = ()
