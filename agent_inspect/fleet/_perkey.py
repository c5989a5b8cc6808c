"""A window's records grouped by business key as arrays: what ``key_frame``'s rule-free columns reduce."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from agent_inspect._bulk import distinct_counts

__all__ = ["PerKey", "key_rows"]


def key_rows(column: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Per record, the row of its business key (as text) in the sorted list of keys, -1 for none; and that list."""
    codes, uniques = pd.factorize(column)
    names = [str(u) for u in uniques]
    key_list = sorted(set(names))
    row = {k: i for i, k in enumerate(key_list)}
    to_row = np.array([row[k] for k in names] + [-1], dtype="int64")   # code -1 (no key) reads the last
    return to_row[codes], key_list


class PerKey:
    """The records of some business key grouped by key, as arrays: what the per-key columns reduce (a pandas
    group-by per column costs a millisecond or more, most of it overhead, and its keys must be joined back)."""

    def __init__(self, records: pd.DataFrame, row: np.ndarray, n: int) -> None:
        self.n = n
        self.rows = np.flatnonzero(row >= 0)              # the records of some key
        self.at = row[self.rows]                          # and the row of their key
        self._order = np.argsort(self.at, kind="stable")  # those records key by key
        self.counts = np.bincount(self.at, minlength=n)
        self._starts = np.cumsum(self.counts) - self.counts
        seq = records["seq"]
        self._has_seq = seq.notna().to_numpy()[self.rows]
        self._seq = seq.to_numpy(dtype="int64", na_value=0)[self.rows]
        # a round: one (key, seq), as a dense id per record with a seq (-1 without)
        at, seq_code = self.at[self._has_seq], pd.factorize(self._seq[self._has_seq])[0]
        self._round = np.full(len(self.rows), -1, dtype="int64")
        self._round[self._has_seq] = pd.factorize(at * (int(seq_code.max(initial=0)) + 1) + seq_code)[0]
        self._rounds = int(self._round.max(initial=-1)) + 1
        self.rounds = distinct_counts(at, seq_code, n)

    def reduce(self, ufunc: np.ufunc, values: np.ndarray) -> np.ndarray:
        """Per key, ``ufunc`` over its records' ``values`` (one per record of the log)."""
        if not self.n:
            return values[:0]
        return ufunc.reduceat(values[self.rows][self._order], self._starts)

    def exposed_1301(self, state_keys: pd.Series) -> np.ndarray:
        """Per key, whether a round of more than one state precedes a later round of the key (#1301: the upstream
        rule's first lookup of that round evicts the later rounds' saved completions). Rounds with a state key."""
        sk = pd.factorize(state_keys)[0][self.rows]
        keyed = np.flatnonzero(self._has_seq & (sk >= 0))
        rounds = self._round[keyed]
        crowded = distinct_counts(rounds, sk[keyed], self._rounds) > 1
        last = np.full(self.n, np.iinfo(np.int64).min, dtype="int64")
        np.maximum.at(last, self.at[keyed], self._seq[keyed])
        early = keyed[crowded[rounds] & (self._seq[keyed] < last[self.at[keyed]])]
        exposed = np.zeros(self.n, dtype=bool)
        exposed[self.at[early]] = True
        return exposed

    def conflicts(self, records: pd.DataFrame, key_list: Sequence[str]) -> dict[str, tuple[int, int]]:
        """Per key with conflicting roots (different event UUIDs at one round): the lowest such round's seq and the
        position of the latest root of any such round."""
        root = records["is_root"].fillna(False).to_numpy(dtype=bool)[self.rows] & self._has_seq
        event = pd.factorize(records["event_uuid"])[0][self.rows]
        roots = np.flatnonzero(root)
        known = roots[event[roots] >= 0]   # a root without an event UUID conflicts with none
        many = distinct_counts(self._round[known], event[known], self._rounds) > 1
        hit = roots[many[self._round[roots]]]
        conflict: dict[str, tuple[int, int]] = {}
        positions = records.index.to_numpy()[self.rows[hit]]
        for k, s, pos in zip(self.at[hit].tolist(), self._seq[hit].tolist(), positions.tolist()):
            lo, last = conflict.get(key_list[k], (s, -1))
            conflict[key_list[k]] = (min(lo, s), max(last, int(pos)))
        return conflict

    def format_pairs(self, key_formats: pd.Series, value_formats: pd.Series) -> list[str]:
        """Per key, its records' distinct "<key format>/<value format>" pairs ("?" for none), sorted, joined by
        commas."""
        kf, kf_names = pd.factorize(key_formats)
        vf, vf_names = pd.factorize(value_formats)
        kf_text = [*map(str, kf_names), "?"]   # code -1 (none) reads the last
        vf_text = [*map(str, vf_names), "?"]
        width = len(kf_text) * len(vf_text)
        pair = kf[self.rows] % len(kf_text) * len(vf_text) + vf[self.rows] % len(vf_text)
        evidence: list[set[str]] = [set() for _ in range(self.n)]
        for code in pd.unique(self.at * width + pair).tolist():
            k, p = divmod(code, width)
            evidence[k].add(f"{kf_text[p // len(vf_text)]}/{vf_text[p % len(vf_text)]}")
        return [",".join(sorted(pairs)) for pairs in evidence]
