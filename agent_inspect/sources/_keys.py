"""Business-key pruning: which partitions a business key can live in, and a raw-record filter."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable

from agent_inspect._errors import InspectError
from agent_inspect.raw import RawBatch

__all__ = ["business_key_filter", "business_key_rows", "business_key_texts", "candidate_partitions", "take"]


def business_key_texts(keys: Iterable[str | int] | None) -> list[str] | None:
    """The ``business_keys`` a loader or a tail was given, as the texts records carry.

    A numeric key (any integer, numpy's too, but not a bool) is its text (Java's ``toString()``, spec §4.1), one
    string is one key (not its characters); anything else (None, bytes, a tuple) is an
    :class:`~agent_inspect.InspectError` before any I/O, not an AttributeError while hashing keys.

    For example::

        ai.sources.business_key_texts("user-42")       # ['user-42']
    """
    if keys is None:
        return None
    items = [keys] if isinstance(keys, str) else keys
    if isinstance(keys, (bytes, bytearray, memoryview)) or not isinstance(items, Iterable):
        raise InspectError(f"business_keys takes a list of business keys (['user-42']), got {keys!r}")
    texts = list(items)
    bad = [k for k in texts if isinstance(k, bool) or not isinstance(k, (str, numbers.Integral))]
    if bad:
        raise InspectError(f"business_keys takes key texts (str, or int for a numeric key), got {bad[0]!r}")
    return [k if isinstance(k, str) else str(int(k)) for k in texts]


def candidate_partitions(business_keys: Iterable[str], num_partitions: int) -> set[int]:
    """Every partition the upstream partitioner (spec §6.3) can send a business key's records to.

    The key format of a topic is not known before reading it, so each key contributes the partition
    of each format's partitioning basis: the text up to its first ``_`` (K1, K1.5-draft), the whole
    text (K1.5), and its digest (K1.6, K2) — or the key itself when it already is a digest.

    For example::

        ai.sources.candidate_partitions(["user-0011"], 4)   # the partitions a load of that key reads
    """
    from agent_inspect.codec import java_string_hash, murmur_hash, string_key_digest

    out: set[int] = set()
    for key in business_keys:
        bases = {key, key.split("_", 1)[0], string_key_digest(key)}
        out.update(murmur_hash(java_string_hash(b)) % num_partitions for b in bases)
    return out


def business_key_rows(business_keys: Iterable[str], *,
                      others: set[str] | None = None) -> Callable[[RawBatch], list[int]]:
    """A function giving the indexes of a batch's records whose state key belongs to ``business_keys``.

    Keys match by text or by digest. Records whose key does not parse are kept: they cannot be
    attributed, and the log reports them. ``others``, when given, collects the business keys (text, or digest
    for K1.6 and K2) of the records left out: the keys a loader suggests for one that has no record.

    For example::

        rows_of = ai.sources.business_key_rows(["user-0011"])
        rows_of(log.raw)[:5]                           # indexes of the batch's records of that key
    """
    from agent_inspect.codec import parse_state_key, string_key_digest

    wanted = set(business_keys)
    wanted |= {string_key_digest(k) for k in list(wanted)}

    def belongs(raw: bytes | None) -> bool:
        if raw is None:
            return True
        try:
            parsed = parse_state_key(raw.decode("utf-8"))
        except Exception:  # noqa: BLE001 - any unparseable key is kept for the log to report
            return True
        if parsed.key_text in wanted or parsed.key_digest in wanted:
            return True
        if others is not None:
            others.add(parsed.business_key)
        return False

    return lambda batch: [i for i, k in enumerate(batch.key) if belongs(k)]


def take(batch: RawBatch, idx: list[int]) -> RawBatch:
    """The records of ``batch`` at ``idx``, in that order.

    For example::

        ai.sources.take(log.raw, [0, 2, 4]).offset     # a batch of just those records
    """
    if len(idx) == len(batch):
        return batch
    return RawBatch(
        partition=[batch.partition[i] for i in idx], offset=[batch.offset[i] for i in idx],
        timestamp_ms=[batch.timestamp_ms[i] for i in idx], key=[batch.key[i] for i in idx],
        value=[batch.value[i] for i in idx],
        agent_key=None if batch.agent_key is None else [batch.agent_key[i] for i in idx])


def business_key_filter(business_keys: Iterable[str], *,
                        others: set[str] | None = None) -> Callable[[RawBatch], RawBatch]:
    """A filter keeping the records of ``business_keys`` (see :func:`business_key_rows`; ``others`` collects the
    business keys of the records it leaves out)."""
    rows = business_key_rows(business_keys, others=others)
    return lambda batch: take(batch, rows(batch))
