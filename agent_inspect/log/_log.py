"""``ActionStateLog``: one decoded row per action-state record, with its exact bytes and source."""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from agent_inspect._bulk import gc_paused
from agent_inspect._errors import ValueFormatError
from agent_inspect._glossary import plural
from agent_inspect._html import Code, Facts, HtmlPart, HtmlRepr, Strong, Table, Term, Text
from agent_inspect.codec import ActionState, decode_action_state
from agent_inspect.codec.bulk import release_shared_strings
from agent_inspect.log._build import COLUMNS, build_records
from agent_inspect.log._facts import plain_text, summary_facts
from agent_inspect.log._identity import verify_identity
from agent_inspect.log._runtime import RuntimeInfo, infer_runtime
from agent_inspect.raw import RawBatch, SourceInfo
from agent_inspect.sources import write_parquet

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

__all__ = ["ActionStateLog", "COLUMNS", "plain_text", "logged_key"]


def logged_key(key: str, found: Collection[str]) -> str | None:
    """The business key by which a log whose business keys are ``found`` names ``key``: the key itself, else its
    digest (K1.6 and K2 logs name keys by digest); None when the log names it neither way. The one key-text match
    of :meth:`ActionStateLog.for_key`, the loaders' ``business_keys=`` check and a checkpoint's plan over a log.

    For example::

        v4 = ai.load(ai.samples.path("production_v4"))             # K2: business keys are digests
        ai.log.logged_key("user-0003", set(v4.keys()))              # that key's digest
    """
    from agent_inspect.codec import string_key_digest

    if key in found:
        return key
    digest = string_key_digest(key)
    return digest if digest in found else None


class ActionStateLog(HtmlRepr):
    """The action-state journal as data: ``records`` (one row per record, index = position), ``raw``, ``source``.

    Build it with :meth:`from_raw` (the sources do that for you: ``ai.load(...)``). Bad keys or values are
    rows with an ``error``; tombstones are rows with ``tombstone=True``. ``value(pos)`` decodes one record.

    For example::

        log = ai.load("sample_logs/production.jsonl")
        log.records.head()          # one decoded row per record
        len(log.errors), log.runtime()   # undecodable records (kept as rows), and which runtime wrote the log
    """

    def __init__(self, records: pd.DataFrame, raw: RawBatch, source: SourceInfo) -> None:
        self.records = records
        self.raw = raw
        self.source = source
        self._cache: dict[int, ActionState | None] = {}

    @classmethod
    def from_raw(cls, batches: RawBatch | Iterable[RawBatch], source: SourceInfo, *,
                 key_format: str | None = None, max_parallelism: int | None = None) -> ActionStateLog:
        """Decode raw records into a log; never drops a record. The log may keep the batches' lists: leave them be.

        ``key_format`` settles ambiguous key layouts (and is the only way to read "K1.5-draft" keys);
        ``max_parallelism`` bounds key groups.
        """
        try:
            with gc_paused():  # millions of short-lived objects: the cyclic GC would dominate the load
                raw, records = build_records(batches, key_format=key_format, max_parallelism=max_parallelism)
        finally:
            release_shared_strings()
        return cls(records, raw, source)

    def __len__(self) -> int:
        return len(self.records)

    @property
    def errors(self) -> pd.DataFrame:
        """The rows whose key or value did not decode, with the reason in ``error``."""
        return self.records[self.records["error"].notna()]

    def value(self, pos: int) -> ActionState | None:
        """The decoded value of the record at ``pos`` (None for a tombstone); cached.

        Raises :class:`ValueFormatError` when that record's value does not decode. A value that decodes but
        that upstream would refuse (a Kryo envelope of another version) is returned; its row has an ``error``.
        """
        cached = self._cache.get(pos, _UNREAD)
        if cached is not _UNREAD:
            return cast("ActionState | None", cached)
        pos = int(pos)
        if not 0 <= pos < len(self.raw):
            raise IndexError(f"position {pos} is outside this log (0..{len(self.raw) - 1})")
        data = self.raw.value[pos]
        state = None if data is None else decode_action_state(data)
        self._cache[pos] = state
        return state

    def values(self) -> list[ActionState | None]:
        """Every record's decoded value (None for tombstones and values that do not decode)."""
        out: list[ActionState | None] = []
        for pos in range(len(self.raw)):
            try:
                out.append(self.value(pos))
            except ValueFormatError:
                out.append(None)
        return out

    def keys(self) -> list[str]:
        """The business keys (key text, or digest for K1.6/K2), in order of first appearance."""
        return [k for k in self.records["business_key"].dropna().unique().tolist()]

    def for_key(self, key: str) -> ActionStateLog:
        """A log of one business key's records (positions renumbered from 0, order kept). A K1.6 or K2 log names
        keys by digest: its key's text finds them too, as ``business_keys=`` of the loaders does."""
        column = self.records["business_key"]
        named = logged_key(str(key), set(map(str, column.dropna().unique())))
        return self.select(column == (key if named is None else named))

    def select(self, rows: pd.Series | np.ndarray | Sequence[bool]) -> ActionStateLog:
        """A log of the records where ``rows`` (a boolean mask over :attr:`records`) holds, values included
        (positions renumbered from 0, order kept): e.g. one partition, ``log.select(log.records["partition"] == 0)``."""
        mask = np.asarray(pd.Series(rows).fillna(False), dtype=bool)
        if len(mask) != len(self.records):
            raise ValueError(f"select needs one flag per record ({len(self.records)}), got {len(mask)}")
        idx = np.flatnonzero(mask).tolist()
        records = self.records.iloc[idx].reset_index(drop=True)
        src = self.raw
        raw = RawBatch([src.partition[i] for i in idx], [src.offset[i] for i in idx],
                       [src.timestamp_ms[i] for i in idx], [src.key[i] for i in idx], [src.value[i] for i in idx],
                       agent_key=None if src.agent_key is None else [src.agent_key[i] for i in idx])
        sub = ActionStateLog(records, raw, self.source)
        sub._cache = {new: self._cache[old] for new, old in enumerate(idx) if old in self._cache}
        return sub

    def to_parquet(self, path: str | os.PathLike[str]) -> Path:
        """Write the exact records and source metadata to Parquet (reload with ``ai.load(path)``)."""
        return write_parquet(self, path)

    def verify_identity(self, *, num_partitions: int | None = None, max_parallelism: int = 128,
                        plan: Mapping[str, Any] | None = None) -> pd.DataFrame:
        """Recompute each record's identities and compare them with its key (spec §15 step 4).

        Returns a frame indexed by position with ``*_expected`` and ``*_ok`` columns (``<NA>`` where a
        check cannot be made): the event UUID from ``taskEvent.attributes`` (0.3+ recipe; legacy V0/V1
        records are not checked), the Kafka partition (``num_partitions``, by default the topic's
        partition count for Kafka sources), the key group of K1.5 keys (assuming a ``String`` business
        key), and with ``plan`` (the agent plan JSON, or its ``actions`` map) the action name and UUID.
        Hash-based action UUIDs of Java actions differ per JVM, so those are left unchecked.
        """
        return verify_identity(self, num_partitions=num_partitions, max_parallelism=max_parallelism, plan=plan)

    def summary(self) -> dict[str, Any]:
        """Counts for a first look: records, errors, keys, partitions, key/value formats, completed, tombstones.

        ``value_formats_by_lineage_rule`` counts the records the lineage rule took V3 away from (output
        events, none with lineage); ``flagged_keys`` counts the business keys (``flagged_records`` the records)
        whose state keys trip a parser hazard, ``key_flags`` the records per hazard; ``runtime`` is
        :meth:`runtime` as a dict (name, evidence, default rule). :func:`agent_inspect.log.summary_facts` labels
        each field in words.
        """
        r = self.records
        inferred = r["value_format_inferred"]
        flagged = (r["key_flags"].map(len) > 0).to_numpy(dtype=bool)
        return {
            "source": {"kind": self.source.kind, "location": self.source.location, "topic": self.source.topic},
            "records": int(len(r)),
            "errors": int(r["error"].notna().sum()),
            "business_keys": int(r["business_key"].nunique()),
            # -1 is the partition of a file's line that is not a record at all: counted in errors, not a partition
            "partitions": sorted(int(p) for p in pd.unique(r["partition"]) if p >= 0),
            "key_formats": _counts(r["key_format"]),
            "value_formats": _counts(r["value_format"]),
            "value_formats_inferred": int(inferred.fillna(False).sum()),
            "value_formats_by_lineage_rule": int(r["value_format_lineage_rule"].fillna(False).sum()),
            "completed": int(r["completed"].fillna(False).sum()),
            "tombstones": int(r["tombstone"].sum()),
            "executions": int(r.loc[~r["tombstone"], "state_key"].nunique()),
            "root_records": int(r["is_root"].fillna(False).sum()),
            "flagged_keys": int(r.loc[flagged, "business_key"].nunique()),
            "flagged_records": int(flagged.sum()),
            "key_flags": _counts(pd.Series([f for fl in r.loc[flagged, "key_flags"] for f in fl], dtype=object)),
            "runtime": self.runtime().as_dict(),
        }

    def runtime(self) -> RuntimeInfo:
        """Which upstream runtime wrote this log ("0.3", "0.4" or "main"), inferred from the records, with evidence."""
        return infer_runtime(self)

    def __repr__(self) -> str:
        if not len(self.records):
            return f"<ActionStateLog empty: no records from {self.source.kind} {self.source.location!r}>"
        s = self.summary()
        return (f"<ActionStateLog {plural(s['records'], 'record')}, {plural(s['business_keys'], 'business key')}, "
                f"{plural(s['errors'], 'error')} from {self.source.kind} {self.source.location!r}>")

    def _html_parts(self) -> Iterable[HtmlPart]:
        yield Text(Strong("ActionStateLog"), " from ", self.source.kind, " ", Code(self.source.location))
        yield Facts((Term(f.label, f.explanation) if f.explanation else f.label, f.text)
                    for f in summary_facts(self.summary()))
        cols = ["partition", "offset", "business_key", "seq", "key_format", "value_format", "completed",
                "task_event_type", "output_event_count", "call_count"]
        if self.records["error"].head(10).notna().any():    # an error column only where one of the rows shown has one
            cols.append("error")
        yield Table(self.records[cols], caption="records", max_rows=10)


_UNREAD: Any = object()   # a cache miss (None is a tombstone's cached value)


def _counts(col: pd.Series) -> dict[str, int]:
    return {str(k): int(v) for k, v in col.value_counts(dropna=True).items() if v}
