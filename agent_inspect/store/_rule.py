"""The divergence-rule protocol users subclass to prototype their own rule."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from agent_inspect.store._model import Entry, LookupDecision, PruneResult, Task

if TYPE_CHECKING:
    from agent_inspect.store._session import RecoverySession

__all__ = ["DivergenceRule", "RuleState"]


@dataclass
class RuleState:
    """Per-replay mutable state of a rule. ``evidence`` is Evidence(k) of spec §10.3.

    Subclass it (and override :meth:`DivergenceRule.new_state`) to keep more; :meth:`copy` must
    return an independent copy (the executor's ``back()`` copies sessions).

    For example::

        state = ai.store.RuleState()
        state.evidence.setdefault("user-0001", set()).add("event-id-1")   # Evidence(k) of the fixed rule
        state.copy().evidence == state.evidence
    """

    evidence: dict[str, set[str]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def copy(self) -> RuleState:
        """An independent copy (deep for the containers, shared for immutable contents)."""
        new = copy.copy(self)
        new.evidence = {k: set(v) for k, v in self.evidence.items()}
        new.extra = copy.deepcopy(self.extra)
        return new


class DivergenceRule:
    """A store divergence rule: what rebuild keeps and what a lookup reuses, evicts or invalidates.

    A rule is driven by a :class:`~agent_inspect.store.RecoverySession` (``session``), which
    holds the :class:`~agent_inspect.store.Store` (``session.store``), the rule's
    :class:`RuleState` (``session.state``) and the record of cache events. Hooks:

    - ``rebuild(session, entry) -> Entry | None``: called for each record of the rebuild window in
      log order, *before* the write lands (tombstones never reach it). Return the entry to cache
      (possibly tagged with ``dataclasses.replace(entry, branch=...)``) or None to drop the write.
    - ``lookup(session, task) -> LookupDecision``: one upstream ``get`` (spec §8.2 / §10.3) for a
      :class:`~agent_inspect.store.Task` (key, seq, action and event identity, root flag,
      state key). Remove entries only via ``session.invalidate / evict / evict_all_keys / remove /
      remove_entries`` (each takes a divergence ``kind`` and a one-line ``explanation``) so every
      removal is recorded; finish with ``LookupDecision.found(session.store.get(task.state_key))``
      (REUSE / RESUME / RERUN) or ``LookupDecision.fail(reason)``.
    - ``on_reuse(session, task, entry)``: after a REUSE; by default adds the reused record's output
      event ids to Evidence(k).
    - ``on_write(session, entry) -> Entry``: before a replay write lands (default: unchanged).
    - ``on_refresh(session, entry) -> Entry``: before a checkpoint-time refresh row (0.4+) brings a
      state back whose first write lies before the window (default: unchanged; never a rule step).
    - ``prune(session, business_key, seq, key_text) -> PruneResult``: checkpoint-complete pruning
      (default: exact range, seq ≤ s).

    Worked example — the fixed rule without identity checks, in a dozen lines (the names come from
    :mod:`agent_inspect.rules`, which re-exports them from :mod:`agent_inspect.store`)::

        import agent_inspect as ai
        from agent_inspect.rules import DivergenceRule, LookupDecision

        class RootsOnly(DivergenceRule):
            name = "roots-only"

            def rebuild(self, session, entry):
                if entry.is_root and session.store.roots(entry.business_key, entry.seq) - {entry.fingerprint}:
                    session.invalidate(entry.business_key, entry.seq, kind="root-conflict",
                                       explanation="conflicting root while rebuilding",
                                       positions=[entry.pos])
                return entry

            def lookup(self, session, task):
                k, s = task.business_key, task.seq
                if task.is_root and session.store.roots(k, s) - {task.event_uuid}:
                    session.invalidate(k, s, kind="root-conflict", explanation="a different input at this seq")
                entry = session.store.get(task.state_key)
                if entry is None:
                    session.evict(k, s, kind="miss-eviction", explanation="miss: later rounds are stale")
                return LookupDecision.found(entry)

        result = ai.reconstruct(log, rule=RootsOnly())
        ai.cases.compare(ai.cases.builtin(), ["fixed", RootsOnly()])   # the bundled case matrix
        ai.checker.check(RootsOnly(), seed=1)                          # random histories, judged

    A hook that raises or returns the wrong type makes the rule *broken*: ``compare`` and ``check``
    report its first error in one line with ``file:line`` in your code.

    Class attributes ``name`` and ``summary`` label the rule in tables; ``protects`` says whether it
    claims protection against stale reuse (a label: ``compare`` and ``check`` count every rule's stale reuses
    alike).

    For example::

        class KeepEverything(ai.rules.NaiveRule):     # a what-if rule: a miss evicts nothing
            name = "keep-everything"

            def lookup(self, session, task):
                found = session.store.get(task.state_key)
                if found is None:
                    return ai.store.LookupDecision(ai.store.Outcome.RERUN, None, "miss, nothing evicted")
                outcome = ai.store.Outcome.REUSE if found.completed else ai.store.Outcome.RESUME
                return ai.store.LookupDecision(outcome, found, "cached")

        ai.predict(log, markers=markers, rule=KeepEverything()).tasks["outcome"].value_counts()
    """

    name: ClassVar[str] = "custom"
    summary: ClassVar[str] = ""
    protects: ClassVar[bool] = True
    #: K2 restore checks (spec §6.5): a malformed v2 key, a key group out of range or a serializer
    #: fingerprint mismatch in the rebuild window fails the restore. Set False to model a build
    #: that ignores them.
    restore_checks: ClassVar[bool] = True
    #: True when the ``lookup`` this class defines reads only the store and the task (no rule state): two gets
    #: with nothing written or removed in between decide alike, so the engine reports the first decision again for
    #: the second (§9.3's "get again"). It holds for that ``lookup`` only: a subclass overriding it is not marked.
    repeatable_lookup: ClassVar[bool] = False

    def new_state(self) -> RuleState:
        """A fresh per-replay state."""
        return RuleState()

    def rebuild(self, session: RecoverySession, entry: Entry) -> Entry | None:
        """Rebuild hook (before the write lands). Default: plain last write wins."""
        return entry

    def lookup(self, session: RecoverySession, task: Task) -> LookupDecision:
        """Lookup hook: decide REUSE / RESUME / RERUN / FAIL for ``task``."""
        raise NotImplementedError(f"{type(self).__name__} must implement lookup(session, task)")

    def on_reuse(self, session: RecoverySession, task: Task, entry: Entry) -> None:
        """After a REUSE: the reused outputs become evidence for their children (spec §10.3)."""
        if entry.output_event_ids:
            session.evidence(task.business_key).update(entry.output_event_ids)

    def on_write(self, session: RecoverySession, entry: Entry) -> Entry:
        """Before a replay write lands. Default: unchanged."""
        return entry

    def on_refresh(self, session: RecoverySession, entry: Entry) -> Entry:
        """Before a refresh row brings a retained state back (addendum §2.2). Default: unchanged."""
        return entry

    def prune(self, session: RecoverySession, business_key: str, seq: int, key_text: str | None) -> PruneResult:
        """Checkpoint-complete pruning of ``business_key``'s entries with seq ≤ ``seq`` (spec §6.6)."""
        removed = session.store.prune(business_key, seq)
        session.record("prune", removed, business_key=business_key, seq=seq, kind=None,
                       explanation=f"checkpoint complete: pruned rounds <= {seq}")
        return PruneResult(tuple(removed))

    def __repr__(self) -> str:
        return f"<rule {self.name}>"


def lookup_repeats(rule: DivergenceRule) -> bool:
    """Whether ``rule``'s ``lookup`` is marked :attr:`DivergenceRule.repeatable_lookup` by the class defining it."""
    wrapped = getattr(rule, "wrapped_rule", None)   # a guard around a rule decides as that rule does
    if isinstance(wrapped, DivergenceRule):
        return lookup_repeats(wrapped)
    kind = type(rule)
    found = _REPEATS.get(kind)
    if found is None:
        owner = next(c for c in kind.__mro__ if "lookup" in c.__dict__)
        found = _REPEATS[kind] = bool(owner.__dict__.get("repeatable_lookup", False))
    return found


_REPEATS: dict[type, bool] = {}
