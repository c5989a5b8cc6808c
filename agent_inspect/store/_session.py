"""A store driven by one divergence rule: rebuild, lookup, write, prune, and the record of every removal."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from agent_inspect._glossary import plural
from agent_inspect.store._model import (
    CacheEvent,
    Divergence,
    Entry,
    LookupDecision,
    Outcome,
    PruneResult,
    Task,
)
from agent_inspect.store._rule import DivergenceRule, lookup_repeats
from agent_inspect.store._store import Store

if TYPE_CHECKING:
    from agent_inspect.store._rule import RuleState

__all__ = ["RecoverySession"]

#: the members as module constants: reading one off the enum class costs about 60 ns (a lookup or two per get)
_REUSE = Outcome.REUSE


class RecoverySession:
    """One simulated store under one rule, as the operator drives it (spec §6.5, §8, §9.3, §10.3).

    Contract for drivers (the reconstruction, the static predictor, the replay executor):

    - :meth:`rebuild_entry` once per record of the rebuild window, in log order (per partition);
      :meth:`delete` for a tombstone. The rule's rebuild hook runs before the write lands.
    - :meth:`lookup` for every ``get`` the operator makes (spec §9.3 makes up to three per task:
      before the body, again after writing the initial record, and at completion). On a REUSE the
      rule's ``on_reuse`` runs (the fixed rule records the evidence of the reused outputs).
    - :meth:`write` for every record the replay writes (initial, call records, completed); the
      rule may tag the entry (branch-aware) before it lands.
    - :meth:`prune` at checkpoint completion (spec §6.6, §8.4).

    Rules act on the cache only through :meth:`invalidate`, :meth:`evict`, :meth:`evict_all_keys`
    and :meth:`remove`, which record a :class:`CacheEvent` (and a :class:`Divergence` when anything
    was removed) with the rule's kind and explanation. ``events`` and ``divergences`` keep them all.
    :meth:`copy` is O(cached entries + recorded events) and gives an independent session.

    For example::

        g01 = ai.load(ai.samples.path("G01"))           # two inputs recorded for one round
        session = ai.store.RecoverySession(ai.rules.resolve_rule("fixed"))
        ai.recovery.rebuild(g01, "fixed", ai.samples.markers("G01"), session=session)   # drive it as a restore does
        len(session.store), session.events[:2], session.copy().divergences == session.divergences
    """

    def __init__(self, rule: DivergenceRule, *, store: Store | None = None, source_kind: str | None = None) -> None:
        self.rule: DivergenceRule = _checked_rule(rule)
        self.store: Store = store if store is not None else Store()
        self.state: RuleState = self.rule.new_state()
        #: the rule's lookup decides alike on an unchanged store (:attr:`DivergenceRule.repeatable_lookup`)
        self.repeatable_lookup = lookup_repeats(self.rule)
        self.source_kind = source_kind
        #: the key format of the records seen (rebuild or replay writes): a prune of a key with
        #: nothing cached still scans the way its backend does
        self.key_format: str | None = None
        #: why upstream fails this restore (K2 restore checks, spec §6.5); every lookup then FAILs
        self.restore_failure: str | None = None
        self._restore_positions: frozenset[int] = frozenset()
        self.events: list[CacheEvent] = []
        self.divergences: list[Divergence] = []
        self.step = "lookup"
        self.trigger_pos: int | None = None
        #: positions of refresh rows that brought a state back into the cache (not collapsed)
        self.refreshed: list[int] = []

    # -- what rules call ---------------------------------------------------------------------
    def evidence(self, business_key: str) -> set[str]:
        """Evidence(k): event ids the outputs of reused actions produced for ``business_key`` (§10.3)."""
        return self.state.evidence.setdefault(business_key, set())

    def invalidate(self, business_key: str, seq: int, *, kind: str, explanation: str,
                   positions: Iterable[int | None] = ()) -> list[Entry]:
        """Remove ``business_key``'s entries with seq ≥ ``seq`` and record why."""
        removed = self.store.invalidate(business_key, seq)
        self.record("invalidate", removed, business_key=business_key, seq=seq, kind=kind,
                    explanation=explanation, positions=positions)
        return removed

    def evict(self, business_key: str, seq: int, *, kind: str, explanation: str,
              positions: Iterable[int | None] = ()) -> list[Entry]:
        """Remove ``business_key``'s entries with seq > ``seq`` and record why."""
        removed = self.store.evict(business_key, seq)
        self.record("evict", removed, business_key=business_key, seq=seq, kind=kind,
                    explanation=explanation, positions=positions)
        return removed

    def evict_all_keys(self, seq: int, *, business_key: str, kind: str, explanation: str,
                       positions: Iterable[int | None] = ()) -> list[Entry]:
        """Remove every key's entries with seq > ``seq`` (snapshot Kafka) and record why."""
        removed = self.store.evict_all_keys(seq)
        self.record("cross-key", removed, business_key=business_key, seq=seq, kind=kind,
                    explanation=explanation, positions=positions)
        return removed

    def remove(self, state_key: str, *, kind: str, explanation: str, positions: Iterable[int | None] = ()) -> Entry | None:
        """Remove one entry and record why."""
        old = self.store.remove(state_key)
        if old is not None:
            self.record("remove", [old], business_key=old.business_key, seq=old.seq, kind=kind,
                        explanation=explanation, positions=positions)
        return old

    def remove_entries(self, entries: Iterable[Entry], *, business_key: str, seq: int, kind: str,
                       explanation: str, positions: Iterable[int | None] = ()) -> list[Entry]:
        """Remove the given entries (one cache event) and record why."""
        removed = [e for e in (self.store.remove(x.state_key) for x in entries) if e is not None]
        self.record("remove", removed, business_key=business_key, seq=seq, kind=kind,
                    explanation=explanation, positions=positions)
        return removed

    def record(self, op: str, removed: list[Entry], *, business_key: str | None, seq: int | None,
               kind: str | None, explanation: str, positions: Iterable[int | None] = (),
               force_divergence: bool = False, divergence_id: int | None = None) -> CacheEvent | None:
        """Record a cache event (skipped when nothing was removed) and the divergence behind it
        (a new one, unless ``divergence_id`` names one already recorded)."""
        if not removed and not force_divergence:
            return None
        div_id = divergence_id
        if kind is not None and div_id is None:
            pos = tuple(dict.fromkeys(p for p in positions if p is not None))
            div_id = len(self.divergences)
            # in field order (binding keywords costs a third of the construction; one per eviction)
            self.divergences.append(Divergence(div_id, business_key or "", -1 if seq is None else seq, kind,
                                               self.step, pos, explanation, self.trigger_pos))
        if not removed:
            return None
        removed = sorted(removed, key=lambda e: (e.pos is None, e.pos or 0, e.state_key))
        event = CacheEvent(len(self.events), op, self.step, business_key, seq, tuple(removed), explanation, div_id,
                           self.trigger_pos)
        self.events.append(event)
        return event

    # -- what drivers call -------------------------------------------------------------------
    def rebuild_entry(self, entry: Entry) -> Entry | None:
        """Apply one record of the rebuild window: the rule's hook, then last write wins."""
        self.step, self.trigger_pos = "rebuild", entry.pos
        self.key_format = entry.key_format
        landed = self.rule.rebuild(self, entry)
        if landed is not None:
            self.store.put(landed)
        return landed

    def refresh_entry(self, entry: Entry) -> Entry | None:
        """Apply a checkpoint-time refresh row (0.4+, addendum §2.2): the byte-identical re-append of a
        retained state. It collapses into the cached entry of its state key when there is one; otherwise
        (its first write lies before the window) it brings the state back. Never a rule step: it is no
        new evidence, so no conflict, regression or branch is read from it (the cached entry keeps
        whatever branch its rebuilt predecessor had; a state brought back takes the key's current path)."""
        self.step, self.trigger_pos = "rebuild", entry.pos
        if entry.state_key in self.store:
            return None
        landed = self.rule.on_refresh(self, entry)
        self.store.put(landed)
        if entry.pos is not None:
            self.refreshed.append(entry.pos)
        return landed

    def delete(self, state_key: str, *, pos: int | None = None) -> Entry | None:
        """Apply a tombstone: the state key leaves the cache (spec §6.5 step 4, §10.3 rebuild step 1)."""
        self.step, self.trigger_pos = "rebuild", pos
        old = self.store.remove(state_key)
        if old is not None:
            self.record("delete", [old], business_key=old.business_key, seq=old.seq, kind=None,
                        explanation="tombstone deleted the state key")
        return old

    def undecodable(self, state_key: str | None, error: str, *, pos: int | None = None,
                    business_key: str | None = None, seq: int | None = None, no_record: bool = False) -> None:
        """Record an undecodable record of the rebuild window: skipped (the cached entry stays),
        surfaced as an "undecodable" divergence (upstream cannot decode it either). ``no_record``: a line of a
        file that holds no record (a damaged dump), which says nothing of what the topic held there."""
        if pos is not None and pos in self._restore_positions:
            return      # already reported as the reason the restore fails
        self.step, self.trigger_pos = "rebuild", pos
        if no_record:
            explanation = (f"{error}: no record, skipped (the log's row {pos}). The dump is damaged there, so what "
                           "the topic holds in its place is unknown and the rebuilt cache may lack it: read the "
                           "topic, or a good copy of the dump")
        else:
            explanation = (f"record {pos} ({state_key or 'no key'}) did not decode: {error}; skipped, the cached "
                           "entry is kept, but upstream's rebuild would fail on this record")
        self.record("rebuild", [], business_key=business_key, seq=seq, kind="undecodable", positions=[pos],
                    force_divergence=True, explanation=explanation)

    def fail_restore(self, failures: list[tuple[int, str, str | None]]) -> None:
        """Upstream fails this restore (spec §6.5, §14.2): ``(pos, upstream message, business key)``
        per offending record. Recorded as one "restore-failure" divergence; every lookup then FAILs."""
        if not failures:
            return
        pos, message, business_key = failures[0]
        more = f" (and {plural(len(failures) - 1, 'more record')})" if len(failures) > 1 else ""
        self.step, self.trigger_pos = "rebuild", pos
        self.restore_failure = f"{message}{more}"
        self._restore_positions = frozenset(p for p, _, _ in failures)
        self.record("rebuild", [], business_key=business_key, seq=None, kind="restore-failure",
                    positions=[p for p, _, _ in failures], force_divergence=True,
                    explanation=f"upstream fails the restore: {self.restore_failure}")

    def lookup(self, task: Task, *, pos: int | None = None) -> LookupDecision:
        """The rule's decision for one ``get``; events and divergences it caused are attached.

        ``pos`` is the log position of the record this task re-dispatches, when there is one (it
        is reported as the trigger of any divergence the lookup finds).
        """
        self.step, self.trigger_pos = "lookup", pos
        if self.restore_failure is not None:
            return LookupDecision.fail(f"the restore failed: {self.restore_failure}")
        n_events, n_divs = len(self.events), len(self.divergences)
        decision = self.rule.lookup(self, task)
        if decision.outcome is _REUSE and decision.entry is not None:
            self.rule.on_reuse(self, task, decision.entry)
        if len(self.events) > n_events or len(self.divergences) > n_divs:
            decision = LookupDecision(decision.outcome, decision.entry, decision.reason,
                                      tuple(self.events[n_events:]), tuple(self.divergences[n_divs:]))
        return decision

    def write(self, entry: Entry) -> Entry:
        """A replay write: the rule may tag the entry, then it is cached (last write wins)."""
        self.key_format = entry.key_format
        landed = self.rule.on_write(self, entry)
        self.store.put(landed)
        return landed

    def prune(self, business_key: str, seq: int, *, key_text: str | None = None) -> PruneResult:
        """Prune ``business_key``'s entries with seq ≤ ``seq`` the way the rule's backend does."""
        self.step, self.trigger_pos = "prune", None
        n_events = len(self.events)
        result = self.rule.prune(self, business_key, seq, key_text)
        return PruneResult(result.removed, result.failed, tuple(self.events[n_events:]))

    def prune_completed(self, last_completed: Mapping[str, int], *,
                        key_texts: Mapping[str, str] | None = None) -> list[PruneResult]:
        """Checkpoint completion (spec §8.4): prune every key at its ``lastCompletedSequenceNumber``
        captured when the checkpoint was taken; one :class:`PruneResult` per key, in the map's order."""
        texts = key_texts or {}
        return [self.prune(k, s, key_text=texts.get(k)) for k, s in last_completed.items()]

    def copy(self) -> RecoverySession:
        """An independent copy (store, rule state, event record). Cost: O(entries + events)."""
        new = RecoverySession.__new__(RecoverySession)
        new.rule, new.repeatable_lookup = self.rule, self.repeatable_lookup
        new.store = self.store.copy()
        new.state = self.state.copy()
        new.source_kind = self.source_kind
        new.key_format = self.key_format
        new.restore_failure, new._restore_positions = self.restore_failure, self._restore_positions
        new.events = list(self.events)
        new.divergences = list(self.divergences)
        new.step, new.trigger_pos = self.step, self.trigger_pos
        new.refreshed = list(self.refreshed)
        return new

    def __repr__(self) -> str:
        return (f"RecoverySession(rule={self.rule.name!r}, {len(self.store):,} cached, "
                f"{plural(len(self.events), 'cache event')}, {plural(len(self.divergences), 'divergence')})")


def _checked_rule(rule: object) -> DivergenceRule:
    if isinstance(rule, DivergenceRule):
        return rule
    from agent_inspect._errors import RecoveryError

    raise RecoveryError(f"not a divergence rule: {rule!r}; pass a DivergenceRule instance "
                        "(agent_inspect.rules.resolve_rule turns a name into one)")
