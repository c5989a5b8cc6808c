"""The simulated action-state cache with the indexes that make eviction a range operation (#1301)."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator

from sortedcontainers import SortedDict, SortedList

from agent_inspect._glossary import plural
from agent_inspect.store._model import Entry

__all__ = ["Store", "strict_k1_seq"]


def strict_k1_seq(state_key: str) -> int | None:
    """The seq the snapshot's strict K1 parser reads, or None where it throws (spec §8.3).

    Upstream splits on every ``_`` and requires exactly four parts, so a key text containing ``_``
    makes it throw. A non-numeric seq is the NumberFormatException upstream catches.

    For example::

        ai.store.strict_k1_seq("user-1_3_e2f0_9b1c")       # 3
        ai.store.strict_k1_seq("user_1_3_e2f0_9b1c")       # None: upstream's strict parser throws here
    """
    parts = state_key.split("_")
    if len(parts) != 4:
        return None
    seq = parts[1]
    if not seq or not seq.lstrip("-").isdigit():
        return None
    return int(seq)


class _Seqs:
    """One business key's seq index: seq → state keys, with the seqs kept sorted. A key holds few rounds, so a
    plain dict and a bisected list beat a ``SortedDict`` (whose per-key setup and inserts cost more)."""

    __slots__ = ("buckets", "order")

    def __init__(self) -> None:
        self.buckets: dict[int, set[str]] = {}
        self.order: list[int] = []

    def add(self, seq: int, state_key: str) -> None:
        bucket = self.buckets.get(seq)
        if bucket is not None:
            bucket.add(state_key)
            return
        self.buckets[seq] = {state_key}
        order = self.order
        if not order or seq > order[-1]:
            order.append(seq)       # rounds mostly arrive in order
        else:
            bisect.insort(order, seq)

    def discard(self, seq: int, state_key: str) -> None:
        bucket = self.buckets.get(seq)
        if bucket is not None:
            bucket.discard(state_key)
            if not bucket:
                del self.buckets[seq]
                del self.order[bisect.bisect_left(self.order, seq)]

    def seqs_from(self, lo: int, inclusive: bool) -> list[int]:
        order = self.order
        return order[(bisect.bisect_left if inclusive else bisect.bisect_right)(order, lo):]

    def seqs_upto(self, hi: int, inclusive: bool) -> list[int]:
        order = self.order
        return order[:(bisect.bisect_right if inclusive else bisect.bisect_left)(order, hi)]

    def copy(self) -> _Seqs:
        new = _Seqs()
        new.buckets = {s: set(v) for s, v in self.buckets.items()}
        new.order = list(self.order)
        return new


class Store:
    """The cache: state key → :class:`Entry`, with per-key ordered seq indexes and per-round roots.

    Indexes kept on every write and removal:

    - per business key, seq → set of state keys with the seqs sorted, so ``invalidate(k, s)`` (seq ≥ s),
      ``evict(k, s)`` (seq > s) and ``prune(k, s)`` (seq ≤ s) touch only the removed range;
    - per (key, seq), root fingerprint → state keys, so ``roots(k, s)`` is O(1);
    - the set of cached keys the snapshot's strict K1 parser rejects (spec §8.3).

    Built lazily on first use, then kept: a sorted list of all cached state keys (K1 snapshot prefix
    matching with bisect) and a global seq index (snapshot Kafka cross-key eviction).

    Removal methods return the removed entries so callers can record cache events. The store
    knows nothing about rules; :class:`~agent_inspect.recovery.RecoverySession` drives it.

    For example::

        session = ai.recovery.rebuild(log, "original", markers)
        store = session.store.copy()                  # state key -> Entry, indexed per key and round
        len(store), store.seqs("user-0001")[:3], store.count("user-0001", 0)
        store.evict("user-0001", 0)                   # the key's rounds > 0, removed entries returned
    """

    __slots__ = ("_cache", "_index", "_roots", "_unparsable", "_sorted", "_by_seq")

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self._cache: dict[str, Entry] = {}
        self._index: dict[str, _Seqs] = {}
        # state keys as insertion-ordered dicts, not sets: divergence positions must not follow the hash seed
        self._roots: dict[tuple[str, int], dict[str, dict[str, None]]] = {}
        self._unparsable: set[str] = set()
        self._sorted: SortedList | None = None
        self._by_seq: SortedDict | None = None
        for entry in entries:
            self.put(entry)

    # -- reading -----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._cache)

    def __contains__(self, state_key: object) -> bool:
        return state_key in self._cache

    def __iter__(self) -> Iterator[str]:
        return iter(self._cache)

    def get(self, state_key: str) -> Entry | None:
        """The cached entry of ``state_key``, or None."""
        return self._cache.get(state_key)

    def entries(self) -> list[Entry]:
        """Every cached entry (insertion order of their state keys)."""
        return list(self._cache.values())

    def business_keys(self) -> list[str]:
        """Business keys with at least one cached entry."""
        return list(self._index)

    def seqs(self, business_key: str) -> list[int]:
        """The seqs of ``business_key`` with cached entries, ascending."""
        idx = self._index.get(business_key)
        return list(idx.order) if idx is not None else []

    def max_seq(self, business_key: str) -> int | None:
        """The highest cached seq of ``business_key`` (None when none is cached)."""
        idx = self._index.get(business_key)
        return idx.order[-1] if idx is not None else None

    def keys_at(self, business_key: str, seq: int) -> frozenset[str]:
        """State keys cached at (key, seq), by exact segment match."""
        idx = self._index.get(business_key)
        if idx is None:
            return frozenset()
        return frozenset(idx.buckets.get(seq, ()))

    def count(self, business_key: str, seq: int) -> int:
        """Number of cached state keys at (key, seq), by exact segment match."""
        idx = self._index.get(business_key)
        if idx is None:
            return 0
        return len(idx.buckets.get(seq, ()))

    def entries_at(self, business_key: str, seq: int) -> list[Entry]:
        """Cached entries at (key, seq)."""
        return [self._cache[sk] for sk in self.keys_at(business_key, seq)]

    def entries_from(self, business_key: str, seq: int) -> list[Entry]:
        """Cached entries of ``business_key`` with seq ≥ ``seq``, by ascending seq."""
        idx = self._index.get(business_key)
        if idx is None:
            return []
        return [self._cache[sk] for s in idx.seqs_from(seq, True) for sk in idx.buckets[s]]

    def roots(self, business_key: str, seq: int) -> frozenset[str]:
        """Fingerprints of the root entries cached at (key, seq) (spec §10.3 roots(k, s))."""
        by_fp = self._roots.get((business_key, seq))
        return frozenset(by_fp) if by_fp else frozenset()

    def root_entries(self, business_key: str, seq: int) -> list[Entry]:
        """The root entries cached at (key, seq)."""
        by_fp = self._roots.get((business_key, seq))
        if not by_fp:
            return []
        return [self._cache[sk] for sks in by_fp.values() for sk in sks]

    def unparsable_k1(self) -> frozenset[str]:
        """Cached state keys the snapshot's strict 4-part K1 parser throws on (spec §8.3)."""
        return frozenset(self._unparsable)

    def count_prefix(self, prefix: str) -> int:
        """Number of cached state keys starting with ``prefix`` (snapshot K1 matching, spec §8.2)."""
        srt = self._sorted_keys()
        count: int = srt.bisect_left(prefix + "\U0010ffff") - srt.bisect_left(prefix)
        return count

    def keys_with_prefix(self, prefix: str) -> list[str]:
        """Cached state keys starting with ``prefix``, sorted."""
        srt = self._sorted_keys()
        return list(srt.irange(prefix, prefix + "\U0010ffff", inclusive=(True, False)))

    # -- writing -----------------------------------------------------------------------------
    def put(self, entry: Entry) -> Entry | None:
        """Cache ``entry`` under its state key (last write wins); returns the entry it replaced."""
        sk = entry.state_key
        old = self._cache.get(sk)
        self._cache[sk] = entry
        if old is not None:
            if old.is_root == entry.is_root and old.seq == entry.seq and old.business_key == entry.business_key \
                    and old.event_uuid == entry.event_uuid:
                return old
            self._unindex(old, sorted_too=False)
            self._add_index(entry, sorted_too=False)
            return old
        self._add_index(entry)
        return None

    def remove(self, state_key: str) -> Entry | None:
        """Drop one state key; returns the removed entry (None when it was not cached)."""
        old = self._cache.pop(state_key, None)
        if old is not None:
            self._unindex(old)
        return old

    def invalidate(self, business_key: str, seq: int) -> list[Entry]:
        """Remove every entry of ``business_key`` with seq ≥ ``seq`` (spec §10.3 invalidate(k, ≥s))."""
        return self._remove_range(business_key, seq, None, True)

    def evict(self, business_key: str, seq: int) -> list[Entry]:
        """Remove entries of ``business_key`` with seq > ``seq`` (spec §8.2, §10.3 evict(k, >s))."""
        return self._remove_range(business_key, seq, None, False)

    def prune(self, business_key: str, seq: int) -> list[Entry]:
        """Remove entries of ``business_key`` with seq ≤ ``seq`` (spec §6.6 pruneState)."""
        return self._remove_range(business_key, None, seq, True)

    def evict_all_keys(self, seq: int) -> list[Entry]:
        """Remove the entries of *every* business key with seq > ``seq`` (snapshot Kafka, spec §8.2)."""
        by_seq = self._seq_index()
        doomed = [sk for s in list(by_seq.irange(minimum=seq, inclusive=(False, True))) for sk in by_seq[s]]
        removed = []
        for sk in doomed:
            old = self.remove(sk)
            if old is not None:
                removed.append(old)
        return removed

    def clear(self) -> list[Entry]:
        """Empty the cache (Fluss rebuild clears first, spec §7.4); returns what was cached."""
        removed = list(self._cache.values())
        self._cache.clear()
        self._index.clear()
        self._roots.clear()
        self._unparsable.clear()
        self._sorted = None
        self._by_seq = None
        return removed

    def copy(self) -> Store:
        """An independent copy. Cost: O(cached entries); entries themselves are shared (immutable)."""
        new = Store.__new__(Store)
        new._cache = dict(self._cache)
        new._index = {k: idx.copy() for k, idx in self._index.items()}
        new._roots = {rk: {fp: dict(v) for fp, v in m.items()} for rk, m in self._roots.items()}
        new._unparsable = set(self._unparsable)
        new._sorted = SortedList(self._sorted) if self._sorted is not None else None
        new._by_seq = (SortedDict({s: set(v) for s, v in self._by_seq.items()})
                       if self._by_seq is not None else None)
        return new

    snapshot = copy

    def __repr__(self) -> str:
        return f"Store({plural(len(self._cache), 'entry', 'entries')}, {plural(len(self._index), 'business key')})"

    # -- internals ---------------------------------------------------------------------------
    def _remove_range(self, business_key: str, lo: int | None, hi: int | None, inclusive: bool) -> list[Entry]:
        idx = self._index.get(business_key)
        if idx is None:
            return []
        seqs = idx.seqs_from(lo, inclusive) if lo is not None else idx.seqs_upto(hi, inclusive) if hi is not None \
            else list(idx.order)
        removed: list[Entry] = []
        for s in seqs:
            for sk in list(idx.buckets.get(s, ())):
                old = self.remove(sk)
                if old is not None:
                    removed.append(old)
        return removed

    def _add_index(self, entry: Entry, sorted_too: bool = True) -> None:
        sk, k, s = entry.state_key, entry.business_key, entry.seq
        idx = self._index.get(k)
        if idx is None:
            idx = self._index[k] = _Seqs()
        idx.add(s, sk)
        if entry.is_root:
            self._roots.setdefault((k, s), {}).setdefault(entry.event_uuid, {})[sk] = None
        if entry.key_format == "K1" and sk.count("_") != 3:
            self._unparsable.add(sk)
        if sorted_too and self._sorted is not None:
            self._sorted.add(sk)
        if self._by_seq is not None:
            self._by_seq.setdefault(s, set()).add(sk)

    def _unindex(self, entry: Entry, sorted_too: bool = True) -> None:
        sk, k, s = entry.state_key, entry.business_key, entry.seq
        idx = self._index.get(k)
        if idx is not None:
            idx.discard(s, sk)
            if not idx.order:
                del self._index[k]
        if entry.is_root:
            by_fp = self._roots.get((k, s))
            if by_fp is not None:
                sks = by_fp.get(entry.event_uuid)
                if sks is not None:
                    sks.pop(sk, None)
                    if not sks:
                        del by_fp[entry.event_uuid]
                if not by_fp:
                    del self._roots[(k, s)]
        self._unparsable.discard(sk)
        if sorted_too and self._sorted is not None:
            self._sorted.discard(sk)
        if self._by_seq is not None:
            bucket = self._by_seq.get(s)
            if bucket is not None:
                bucket.discard(sk)
                if not bucket:
                    del self._by_seq[s]

    def _sorted_keys(self) -> SortedList:
        if self._sorted is None:
            self._sorted = SortedList(self._cache)
        return self._sorted

    def _seq_index(self) -> SortedDict:
        if self._by_seq is None:
            by_seq: SortedDict = SortedDict()
            for sk, e in self._cache.items():
                by_seq.setdefault(e.seq, set()).add(sk)
            self._by_seq = by_seq
        return self._by_seq
