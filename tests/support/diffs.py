"""Comparable forms of a diff, for symmetry checks: diff(a, b) as is and diff(b, a) mirrored."""

from __future__ import annotations

from typing import Any

_SWAP = {"only in a": "only in b", "only in b": "only in a"}


def plain(d: Any) -> set[tuple[Any, ...]]:
    """Each pair as (key, seq, status, pos a, pos b, sorted (path, a, b) changes)."""
    return {(r.business_key, r.seq, str(r.status), r.pos_a, r.pos_b,
             tuple(sorted((c.path, c.a, c.b) for c in r.changes))) for r in d.pairs.itertuples(index=False)}


def mirrored(d: Any) -> set[tuple[Any, ...]]:
    """:func:`plain` of the diff with its sides exchanged."""
    return {(r.business_key, r.seq, _SWAP.get(str(r.status), str(r.status)), r.pos_b, r.pos_a,
             tuple(sorted((c.path, c.b, c.a) for c in r.changes))) for r in d.pairs.itertuples(index=False)}
