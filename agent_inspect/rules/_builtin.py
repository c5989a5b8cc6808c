"""The built-in divergence rules: original (three flavours), naive, fixed and its variants."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from agent_inspect._errors import RecoveryError
from agent_inspect._glossary import count_words, plural
from agent_inspect.agents import BEGIN_EVENT  # its task is queued before the round's roots (spec §9.3)
from agent_inspect.log import store_flavour
from agent_inspect.store import (
    DivergenceRule,
    Entry,
    LookupDecision,
    PruneResult,
    RecoverySession,
    RuleState,
    Task,
    strict_k1_seq,
)

__all__ = [
    "OriginalRule", "NaiveRule", "FixedRule", "LookupOnlyRule", "FixedRoundRegressionRule",
    "BranchAwareRule", "RULES", "FLAVOURS",
]

FLAVOURS = ("kafka-k1", "fluss-k1", "segment")
"""Flavours of the original rule (spec §8.2): how "belongs to k and s" and "later entries" are chosen."""


def _positions(entries: list[Entry]) -> list[int]:
    return [e.pos for e in entries if e.pos is not None]


class OriginalRule(DivergenceRule):
    """The 0.4-era upstream rule (spec §8.2): on a miss, or when (k, s) has more than one cached
    record, evict the key's entries with seq > s.

    Flavours (``flavour=``; default: inferred per task from the key format and the source kind):

    - ``"kafka-k1"``: snapshot Kafka store. Matching by the prefix ``"<keyText>_<s>_"``; eviction
      removes *every* key's entries with seq > s (cross-key, #628 review), and the strict 4-part
      parser throws when any cached K1 key text contains ``_`` — the task FAILs (spec §8.3).
    - ``"fluss-k1"``: snapshot Fluss store. Prefix matching; eviction scans keys starting with
      ``"<keyText>_"`` and keeps entries the strict parser rejects (protection silently off).
    - ``"segment"``: K1.5 and later, exact key and seq segments.

    When it is wrong: count > 1 is the *normal* case (multi-root, cascades, fan-out, sub-agents), so
    the first lookup of a round evicts every later round and recovery re-executes them (#1301).

    For example::

        rule = ai.rules.OriginalRule(flavour="kafka-k1")    # default: the flavour inferred per task
        ai.predict(log, markers=markers, rule=rule).tasks["outcome"].value_counts()
    """

    name = "original"
    summary = "upstream 0.4 rule: evict seq > s on a miss or when (k, s) has more than one record"
    repeatable_lookup = True   # its lookup reads the store and the task alone

    def __init__(self, flavour: str | None = None) -> None:
        if flavour is not None and flavour not in FLAVOURS:
            raise RecoveryError(f"unknown original-rule flavour {flavour!r}; use one of {', '.join(FLAVOURS)}")
        self.flavour = flavour

    def flavour_for(self, session: RecoverySession, key_format: str) -> str:
        """The flavour applied to a record of ``key_format`` in this session."""
        if self.flavour is not None:
            return self.flavour
        return store_flavour(key_format, session.source_kind)   # the log's runtime's own: what labels compare with

    def lookup(self, session: RecoverySession, task: Task) -> LookupDecision:
        store, k, s, sk = session.store, task.business_key, task.seq, task.state_key
        flavour = self.flavour_for(session, task.key_format)
        segment = flavour == "segment"
        if segment:
            n = store.count(k, s)
        else:
            prefix = f"{task.key_text if task.key_text is not None else k}_{s}_"
            n = store.count_prefix(prefix)
        found = store.get(sk)
        if n <= 1 and found is not None:
            return LookupDecision.found(found, f"cached, {n} record at ({k}, {s}): no divergence")
        if segment:
            top = store.max_seq(k)
            quiet = top is None or top <= s   # nothing later is cached: an eviction would remove nothing
            matched = store.entries_at(k, s) if n > 1 and not quiet else []
        else:
            quiet = False
            matched = [e for x in store.keys_with_prefix(prefix) if (e := store.get(x)) is not None] if n > 1 else []
        kind = "count>1" if n > 1 else "miss-eviction"
        why = (f"{n} cached records at ({k}, {s}) > 1" if n > 1 else f"miss at ({k}, {s})")
        if quiet:
            return LookupDecision.found(found, f"original rule: {why}")
        positions = sorted(_positions([e for e in matched if e is not None]))
        if flavour == "segment":
            session.evict(k, s, kind=kind, explanation=f"original rule: {why} -> evicted {k}'s rounds > {s}",
                          positions=positions)
        elif flavour == "kafka-k1":
            bad = store.unparsable_k1()
            if bad:
                bad_entries = [e for e in (store.get(x) for x in sorted(bad)) if e is not None]
                reason = (f"snapshot Kafka: {why}; the strict 4-part key parser throws on "
                          f"{plural(len(bad), 'cached key')} whose text contains '_' (e.g. {sorted(bad)[0]!r}) -> task fails")
                session.record("evict", [], business_key=k, seq=s, kind="parser-crash", explanation=reason,
                               positions=_positions(bad_entries), force_divergence=True)
                return LookupDecision.fail(reason)
            removed = store.evict_all_keys(s)
            own = [e for e in removed if e.business_key == k]
            others = [e for e in removed if e.business_key != k]
            session.record("evict", own, business_key=k, seq=s, kind=kind, positions=positions,
                           explanation=f"original rule (snapshot Kafka): {why} -> evicted rounds > {s}")
            session.record("cross-key", others, business_key=k, seq=s, kind="cross-key", positions=positions,
                           explanation=f"snapshot Kafka eviction ignores the key: {why} at {k!r} evicted "
                                       f"{plural(len(others), 'record')} of other keys with seq > {s}")
        else:
            text = task.key_text if task.key_text is not None else k
            doomed = []
            for x in store.keys_with_prefix(f"{text}_"):
                q = strict_k1_seq(x)
                if q is not None and q > s:
                    doomed.append(store.get(x))
            session.remove_entries([e for e in doomed if e is not None], business_key=k, seq=s, kind=kind,
                                   positions=positions,
                                   explanation=f"original rule (snapshot Fluss): {why} -> evicted parsable "
                                               f"'{text}_' records with seq > {s}")
        return LookupDecision.found(store.get(sk), f"original rule: {why}")

    def prune(self, session: RecoverySession, business_key: str, seq: int, key_text: str | None) -> PruneResult:
        store = session.store
        entries = store.entries_at(business_key, seq) or store.entries_from(business_key, 0)
        # the key's own entries may all be gone (evicted, pruned); the backend still scans its way
        key_format = entries[0].key_format if entries else (session.key_format or "K1.5")
        flavour = self.flavour_for(session, key_format)
        if flavour == "segment":
            return super().prune(session, business_key, seq, key_text)
        text = key_text if key_text is not None else business_key
        keys = store.keys_with_prefix(f"{text}_")
        doomed = []
        for x in keys:
            q = strict_k1_seq(x)
            if q is None and flavour == "kafka-k1":
                reason = (f"snapshot Kafka pruneState: the strict 4-part parser throws on {x!r} "
                          f"(key text contains '_') -> checkpoint completion fails")
                session.record("prune", [], business_key=business_key, seq=seq, kind="parser-crash",
                               explanation=reason, force_divergence=True)
                return PruneResult((), reason)
            if q is not None and q <= seq:
                doomed.append(x)
        removed = [e for e in (store.remove(x) for x in doomed) if e is not None]
        session.record("prune", removed, business_key=business_key, seq=seq, kind=None,
                       explanation=f"checkpoint complete: pruned '{text}_' records with seq <= {seq}")
        return PruneResult(tuple(removed))

    def __repr__(self) -> str:
        return f"<rule original ({self.flavour or 'flavour inferred'})>"


class NaiveRule(DivergenceRule):
    """The original rule with the count check deleted: only a miss evicts seq > s (segment-exact).

    When it is wrong: a branch change at round s (a different input after a restore) reuses
    records computed on the old branch (G01, G02, G05 ✗stale). Shown as a negative control.

    For example::

        p = ai.predict(log, markers=markers, rule=ai.rules.NaiveRule())     # the negative control
        p.tasks["outcome"].value_counts()
    """

    name = "naive"
    summary = "miss evicts seq > s; no count check, no root comparison"
    protects = False

    def lookup(self, session: RecoverySession, task: Task) -> LookupDecision:
        k, s = task.business_key, task.seq
        entry = session.store.get(task.state_key)
        if entry is None:
            session.evict(k, s, kind="miss-eviction", explanation=f"naive rule: miss at ({k}, {s}) -> evicted rounds > {s}")
            return LookupDecision.found(None, f"miss at ({k}, {s})")
        return LookupDecision.found(entry)


class FixedRule(DivergenceRule):
    """The toolkit's reference fixed rule, exactly spec §10.3 (the #1301 prototype, conservative).

    Rebuild: a root whose input fingerprint differs from a cached root at (k, s) invalidates k's
    rounds ≥ s before it lands. Lookup: (1) the same root-conflict check; (2) a miss evicts k's
    rounds > s (RERUN); (3) an event id in Evidence(k) that differs from the cached record's task
    event id removes the record and evicts > s (RERUN, identity mismatch); (4) otherwise REUSE a
    completed record (its output ids become evidence) or RESUME an incomplete one.

    When it is wrong (spec §10.3 known limits): it reruns a returning branch's own round (G01),
    may report false identity mismatches, cannot see invisible branch returns, tombstoned
    conflicting roots (use ``fixed+round-regression``), tainted records, #1084 siblings, code
    changes under an unchanged name, or memory changes that leave the attributes unchanged.

    For example::

        p = ai.predict(log, markers=markers, rule=ai.rules.FixedRule())     # or rule="fixed"
        p.tasks["outcome"].value_counts()
    """

    name = "fixed"
    summary = "reference rule (spec §10.3): root-fingerprint conflicts invalidate >= s at rebuild and lookup"

    rebuild_invalidation: bool = True
    round_regression: bool = False

    def rebuild(self, session: RecoverySession, entry: Entry) -> Entry | None:
        store, k, s = session.store, entry.business_key, entry.seq
        if self.rebuild_invalidation and entry.is_root:
            roots = store.roots(k, s)
            if roots and (len(roots) > 1 or entry.event_uuid not in roots):
                conflicting = [e for e in store.root_entries(k, s) if e.event_uuid != entry.event_uuid]
                others = sorted(f[:8] for f in roots if f != entry.event_uuid)
                session.invalidate(
                    k, s, kind="root-conflict", positions=[*_positions(conflicting), entry.pos],
                    explanation=(f"rebuild: root input {entry.event_uuid[:8]} at ({k}, {s}) conflicts with cached "
                                 f"{count_words(len(others), 'root')} {', '.join(others)} "
                                 f"-> invalidated {k}'s rounds >= {s}"))
        if self.round_regression:
            top = store.max_seq(k)
            if top is not None and top > s:
                later = store.entries_from(k, s + 1)
                session.evict(k, s, kind="round-regression", positions=[*_positions(later[:1]), entry.pos],
                              explanation=(f"rebuild: a record of ({k}, {s}) follows records of round {top} "
                                           f"-> evicted {k}'s rounds > {s}"))
        return entry

    def lookup(self, session: RecoverySession, task: Task) -> LookupDecision:
        store, k, s, sk = session.store, task.business_key, task.seq, task.state_key
        if task.is_root:
            roots = store.roots(k, s)
            if roots and (len(roots) > 1 or task.event_uuid not in roots):
                conflicting = [e for e in store.root_entries(k, s) if e.event_uuid != task.event_uuid]
                if conflicting:
                    others = sorted({e.event_uuid[:8] for e in conflicting})
                    session.invalidate(
                        k, s, kind="root-conflict", positions=[*_positions(conflicting), session.trigger_pos],
                        explanation=(f"lookup: input {task.event_uuid[:8]} at ({k}, {s}) conflicts with cached "
                                     f"{count_words(len(others), 'root')} {', '.join(others)} "
                                     f"-> invalidated {k}'s rounds >= {s}"))
        entry = store.get(sk)
        if entry is None:
            top = store.max_seq(k)
            if top is not None and top > s:   # else the eviction would remove nothing (and record nothing)
                session.evict(k, s, kind="miss-eviction",
                              explanation=f"lookup: miss at ({k}, {s}) -> round {s} is recomputed, evicted rounds > {s}")
            return LookupDecision.found(None, f"miss at ({k}, {s})")
        evidence = session.state.evidence.get(k)
        if (task.event_id is not None and evidence and task.event_id in evidence
                and entry.task_event_id != task.event_id):
            why = (f"lookup: evidenced event id {task.event_id} differs from the cached record's "
                   f"{entry.task_event_id} -> removed it, evicted rounds > {s}")
            session.remove(sk, kind="identity-mismatch", explanation=why,
                           positions=[entry.pos] if entry.pos is not None else [])
            session.record("evict", store.evict(k, s), business_key=k, seq=s, kind=None, explanation=why,
                           divergence_id=len(session.divergences) - 1)
            return LookupDecision.found(None, "identity mismatch with a reused parent's output")
        return LookupDecision.found(entry)


class LookupOnlyRule(FixedRule):
    """The fixed rule without rebuild-time invalidation (conflicts are only seen at lookup).

    When it is wrong: never stale in the matrix, but wasteful — a returning branch whose record
    overwrote the old one still sees the stale conflicting root and reruns (G03).

    For example::

        p = ai.predict(log, markers=markers, rule=ai.rules.LookupOnlyRule())
        p.tasks["outcome"].value_counts()
    """

    name = "lookup-only"
    summary = "fixed rule without the rebuild-time invalidation"
    rebuild_invalidation = False


class FixedRoundRegressionRule(FixedRule):
    """The fixed rule plus the optional round-regression rebuild flag (spec §10.3, not in #1301):
    a record of (k, s) appearing after records of (k, s' > s) evicts k's rounds > s.

    Closes the tombstoned-conflicting-root hole; costs about 0.5–1.5% of the reference rule's reuses.

    For example::

        p = ai.predict(log, markers=markers, rule=ai.rules.FixedRoundRegressionRule())
        p.tasks["outcome"].value_counts()
    """

    name = "fixed+round-regression"
    summary = "fixed rule plus: a record of (k, s) after later rounds evicts > s at rebuild"
    round_regression = True


class _Node:
    """One step of a branch path: the root (seq, fingerprint) after ``parent``. Interned: compare by identity."""

    __slots__ = ("seq", "fp", "parent")

    def __init__(self, seq: int, fp: str, parent: _Node | None) -> None:
        self.seq, self.fp, self.parent = seq, fp, parent

    def __repr__(self) -> str:
        steps: list[str] = []
        node: _Node | None = self
        while node is not None:
            steps.append(f"{node.seq}:{node.fp[:8]}")
            node = node.parent
        return "branch(" + " > ".join(reversed(steps)) + ")"


def _upto(node: _Node | None, seq: int, inclusive: bool) -> _Node | None:
    while node is not None and (node.seq > seq or (not inclusive and node.seq == seq)):
        node = node.parent
    return node


@dataclass
class BranchState(RuleState):
    """Branch-aware state: interned branch paths, the rebuild's path and the replay's path per key."""

    nodes: dict[tuple[int, int, str], _Node] = field(default_factory=dict)
    log_path: dict[str, _Node | None] = field(default_factory=dict)
    replay_path: dict[str, _Node | None] = field(default_factory=dict)

    def node(self, parent: _Node | None, seq: int, fp: str) -> _Node:
        """The interned path ``parent`` → (seq, fp)."""
        key = (id(parent), seq, fp)
        found = self.nodes.get(key)
        if found is None:
            found = self.nodes[key] = _Node(seq, fp, parent)
        return found

    def copy(self) -> BranchState:
        new = BranchState(evidence={k: set(v) for k, v in self.evidence.items()}, extra=dict(self.extra))
        new.nodes = self.nodes  # append-only interning table, safe to share
        new.log_path = dict(self.log_path)
        new.replay_path = dict(self.replay_path)
        return new


def _begin_before_root(entry: Entry, s: int, current: _Node | None) -> bool:
    """A begin record of round ``s`` written before its round's root: on this branch when its tag is the
    path below ``s`` (its task is queued before the root, spec §9.3; issue #12 item 10)."""
    if entry.seq != s or entry.task_event_type != BEGIN_EVENT:
        return False
    tag = _upto(entry.branch, s, True)
    return (tag is None or tag.seq < s) and _upto(entry.branch, s, False) is _upto(current, s, False)


class BranchAwareRule(FixedRule):
    """The branch-aware variant of spec §10.3 "Known limits": rebuild tags each record with the
    branch (the path of roots seen before it for its key); a replay keeps only the records of the
    branch it is on. A returning branch reuses its own earlier round (G01: A REUSE, C RERUN).

    Miss eviction and the evidence identity check are kept from the fixed rule. When it is wrong:
    the same limits as the fixed rule except the returning-branch rerun and the tombstoned
    conflicting root; an invisible branch return (spec §10.3) defeats it — and its own reuse of a
    returning branch *creates* one (that reuse writes no root record, so the branch's later rounds
    are tagged with the last logged root). Safe on logs whose attempts ran the reference rule; if
    production ran this rule, a later replay can reuse stale records (found by randomized testing).

    For example::

        p = ai.predict(log, markers=markers, rule=ai.rules.BranchAwareRule())   # a labelled what-if
        p.rule_label, p.tasks["outcome"].value_counts()
    """

    name = "branch-aware"
    summary = "records tagged with their root path at rebuild; replay keeps only its own branch"
    rebuild_invalidation = False

    def new_state(self) -> BranchState:
        return BranchState()

    def rebuild(self, session: RecoverySession, entry: Entry) -> Entry | None:
        state: BranchState = session.state  # type: ignore[assignment]
        k, s = entry.business_key, entry.seq
        path = state.log_path.get(k)
        if entry.is_root:
            path = state.node(_upto(path, s, False), s, entry.event_uuid)
            state.log_path[k] = path
            return replace(entry, branch=path)
        return replace(entry, branch=_upto(path, s, True))

    def lookup(self, session: RecoverySession, task: Task) -> LookupDecision:
        state: BranchState = session.state  # type: ignore[assignment]
        store, k, s = session.store, task.business_key, task.seq
        current = state.replay_path.get(k)
        if task.is_root:
            current = state.node(_upto(current, s, False), s, task.event_uuid)
            state.replay_path[k] = current
            stale = [e for e in store.entries_from(k, s) if _upto(e.branch, s, True) is not current
                     and not _begin_before_root(e, s, current)]
            if stale:
                session.remove_entries(stale, business_key=k, seq=s, kind="branch-change",
                                       positions=_positions(stale),
                                       explanation=(f"lookup: input {task.event_uuid[:8]} at ({k}, {s}) -> dropped "
                                                    f"{plural(len(stale), 'record')} of rounds >= {s} from other branches"))
        else:
            entry = store.get(task.state_key)
            if entry is not None and not self._same_branch(state, entry, task, current):
                session.remove(task.state_key, kind="branch-change", positions=_positions([entry]),
                               explanation=f"lookup: the record at ({k}, {s}) belongs to another branch")
        return super().lookup(session, task)

    @staticmethod
    def _same_branch(state: BranchState, entry: Entry, task: Task, current: _Node | None) -> bool:
        s = task.seq
        if task.event_type == BEGIN_EVENT and task.round_input is not None:
            # A begin-event task is queued before its round's root (spec §9.3): compare it as if that
            # root had already joined the replay's path, else a begin record tagged with the root at its
            # own seq misses and the miss evicts every later round (issue #12 item 10).
            current = state.node(_upto(current, s, False), s, task.round_input)
            tag = _upto(entry.branch, s, True)
            if tag is None or tag.seq < s:
                return _upto(tag, s, False) is _upto(current, s, False)   # written before its round's root
        return _upto(entry.branch, s, True) is _upto(current, s, True)

    def on_write(self, session: RecoverySession, entry: Entry) -> Entry:
        state: BranchState = session.state  # type: ignore[assignment]
        return replace(entry, branch=_upto(state.replay_path.get(entry.business_key), entry.seq, True))

    def on_refresh(self, session: RecoverySession, entry: Entry) -> Entry:
        state: BranchState = session.state  # type: ignore[assignment]
        return replace(entry, branch=_upto(state.log_path.get(entry.business_key), entry.seq, True))


RULES: Mapping[str, Callable[..., DivergenceRule]] = MappingProxyType({
    "original": OriginalRule,
    "naive": NaiveRule,
    "fixed": FixedRule,
    "lookup-only": LookupOnlyRule,
    "branch-aware": BranchAwareRule,
    "fixed+round-regression": FixedRoundRegressionRule,
})
"""The built-in rules by name: what :func:`resolve_rule` accepts as a plain name."""
