"""Lints: format and identity hazards a log shows before any rule runs (spec §4.3, §4.4, §8.3, #1099)."""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from agent_inspect._bulk import distinct_counts
from agent_inspect.codec import event_uuid
from agent_inspect.history import annotate, refresh_rows
from agent_inspect.recovery._events import fingerprint_of_raw

if TYPE_CHECKING:
    from agent_inspect._types import LogLike

__all__ = ["lint", "LINTS"]

LINTS = (
    "separator-in-key-text",   # K1 key text with '_': upstream Kafka lookups crash, Fluss protection is off (§8.3)
    "prefix-collision",        # K1 "<a>_<s>_" / "<a>_" prefixes also match another key's records (§8.3)
    "action-uuid-unstable",    # one (key, seq, event) under disjoint action UUIDs in different attempts (§4.4)
    "typed-key-collision",     # one key text, several typed keys (different key groups) sharing state keys (#1099)
    "fingerprint-mismatch",    # the event UUID is not the canonical fingerprint of taskEvent.attributes (§4.3.1)
)
"""Lint ids, in the order they are reported."""

_COLUMNS = ["lint", "severity", "business_key", "seq", "positions", "message"]


def lint(log: LogLike | pd.DataFrame, *, fingerprints: bool = True, max_positions: int = 20,
         attempts: pd.Series | None = None, refresh: Collection[int] | None = None) -> pd.DataFrame:
    """One row per hazard: ``lint`` (:data:`LINTS`), ``severity``, ``business_key``, ``seq``, example
    ``positions`` and a one-line ``message``. ``fingerprints=True`` recomputes each state key's latest event UUID
    (V0/V1 skipped, §4.3.3); ``attempts``: the records' ``attempt`` column, when the caller already has it.
    Checkpoint-time refresh rows are no attempt's writes (addendum §2.2): every lint reads the log without the
    ``refresh`` positions (default: those of the log's own runtime, :func:`agent_inspect.history.refresh_rows`).

    For example::

        hazards = ai.recovery.lint(ai.load(ai.samples.path("P01")))   # one row per hazard (LINTS)
        hazards[["lint", "severity", "business_key", "message"]]       # P01's key text holds a '_'
    """
    records = log if isinstance(log, pd.DataFrame) else log.records
    if len(records) == 0 or "business_key" not in records:
        return pd.DataFrame(columns=_COLUMNS)
    skip = refresh_rows(log) if refresh is None else refresh
    if skip:
        records = records.drop(index=sorted(skip))
    recs = records.loc[records["seq"].notna() & records["business_key"].notna()]
    rows = [*_separator(recs, max_positions), *_prefix(recs, max_positions),
            *_action_uuid(records, max_positions, attempts), *_typed_keys(recs, max_positions)]
    if fingerprints and hasattr(log, "value"):
        rows += _fingerprints(log, recs, max_positions)
    frame = pd.DataFrame(rows, columns=_COLUMNS)
    frame["seq"] = frame["seq"].astype("Int64")
    return frame


def _k1(recs: pd.DataFrame) -> pd.Series:
    """The key texts of the K1 records, as objects (the one column the K1 lints read: masking a frame copies every
    column)."""
    return recs["key_text"][(recs["key_format"] == "K1").to_numpy(dtype=bool)].astype(object)


def _separator(recs: pd.DataFrame, cap: int) -> list[dict[str, Any]]:
    texts = _k1(recs)
    bad = texts[texts.str.contains("_", regex=False, na=False)]
    return [{"lint": "separator-in-key-text", "severity": "error", "business_key": key, "seq": None,
             "positions": tuple(grp.index[:cap].tolist()),
             "message": (f"K1 key text {key!r} contains '_': the snapshot Kafka store's strict parser throws "
                         f"on the first miss (task failure loop); snapshot Fluss silently never evicts it")}
            for key, grp in bad.groupby(bad, sort=True)]


def _prefix(recs: pd.DataFrame, cap: int) -> list[dict[str, Any]]:
    k1 = _k1(recs)
    if k1.empty:
        return []
    by_text = {t: grp for t, grp in k1.groupby(k1, sort=True)}
    texts = sorted(by_text)
    rows = []
    for a in texts:
        lo = bisect.bisect_left(texts, a + "_")
        hi = bisect.bisect_left(texts, a + "_\U0010ffff")
        for b in texts[lo:hi]:
            rest = b[len(a) + 1:]
            head = rest.split("_", 1)[0]
            seq_level = head.isdigit()
            positions = tuple(by_text[a].index[:cap // 2].tolist() + by_text[b].index[:cap // 2].tolist())
            rows.append({
                "lint": "prefix-collision", "severity": "error" if seq_level else "warning", "business_key": a,
                "seq": int(head) if seq_level else None, "positions": positions,
                "message": (f"K1 state keys of {b!r} start with "
                            + (f"'{a}_{head}_': the lookup prefix of {a!r} at seq {head} counts them (false "
                               f"divergence) and {a!r}'s eviction scans touch them" if seq_level else
                               f"'{a}_': prune and eviction scans of {a!r} also reach them"))})
    return rows


def _action_uuid(records: pd.DataFrame, cap: int, attempts: pd.Series | None) -> list[dict[str, Any]]:
    if attempts is None:
        attempts = annotate(records)["attempt"]
    # an unstable UUID needs a second attempt of its key: only keys with a record of attempt 2 or later qualify
    attempts = attempts.reindex(records.index)
    later = (attempts >= 2).fillna(False).to_numpy(dtype=bool)
    if not later.any():
        return []
    keys = records["business_key"].isin(records["business_key"][later].unique()).to_numpy()
    # the columns read, not the whole frame: masking copies every column it holds
    records = records[["business_key", "seq", "event_uuid", "action_uuid", "key_format", "tombstone"]][keys]
    attempts = attempts[keys]
    frame = pd.DataFrame({"business_key": records["business_key"].astype(object), "seq": records["seq"],
                          "event_uuid": records["event_uuid"].astype(object),
                          "action_uuid": records["action_uuid"].astype(object),
                          "key_format": records["key_format"].astype(object), "attempt": attempts,
                          "tombstone": records["tombstone"].fillna(False).astype(bool)})
    frame = frame[frame["attempt"].notna() & ~frame["tombstone"] & (frame["key_format"] != "K2")]
    group = ["business_key", "seq", "event_uuid"]
    # only an event seen in two attempts under two action UUIDs can be unstable: find those in one pass
    counts = frame.groupby(group, sort=False)[["attempt", "action_uuid"]].transform("nunique")
    frame = frame[(counts["attempt"] >= 2) & (counts["action_uuid"] >= 2)]
    rows = []
    for (k, s, e), grp in frame.groupby(group, sort=False):
        sets = {a: frozenset(g["action_uuid"]) for a, g in grp.groupby("attempt")}
        pairs = [(a, b) for a in sets for b in sets if a < b and not (sets[a] & sets[b])]
        if not pairs:
            continue
        a, b = pairs[0]
        rows.append({"lint": "action-uuid-unstable", "severity": "warning", "business_key": k, "seq": int(s),
                     "positions": tuple(grp.index[:cap].tolist()),
                     "message": (f"event {str(e)[:8]} at ({k}, {s}) was handled under action UUIDs "
                                 f"{sorted(x[:8] for x in sets[a])} in attempt {a} and "
                                 f"{sorted(x[:8] for x in sets[b])} in attempt {b}: hash-based UUIDs of Java "
                                 f"actions change per JVM, so lookups never hit across restarts (P03)")})
    return rows


def _typed_keys(recs: pd.DataFrame, cap: int) -> list[dict[str, Any]]:
    # the candidates only: texts under more than one key group, counted from the distinct (text, group) pairs
    text_code = pd.factorize(recs["key_text"])[0]
    group = recs["key_group"].to_numpy(dtype="int64", na_value=0)
    typed = (recs["key_format"].isin(["K1.5", "K1.5-draft"]) & recs["key_group"].notna()).to_numpy() & (text_code >= 0)
    texts = distinct_counts(text_code[typed], group[typed], text_code.max(initial=-1) + 1)
    many = np.append(texts > 1, False)   # code -1 (no text) reads the last
    sub = recs.loc[typed & many[text_code], ["key_text", "key_group"]]
    rows = []
    for text, grp in sub.groupby(sub["key_text"].astype(object), sort=True):
        groups = sorted(set(grp["key_group"].astype(int)))
        if len(groups) > 1:
            rows.append({"lint": "typed-key-collision", "severity": "error", "business_key": text, "seq": None,
                         "positions": tuple(grp.index[:cap].tolist()),
                         "message": (f"key text {text!r} appears under key groups {groups}: distinct typed keys "
                                     f"(e.g. Long 1 and String \"1\") share its text, so with maxParallelism 1 or "
                                     f"under K1 they share state keys and reuse each other's results (#1099)")})
    return rows


def _fingerprints(log: Any, recs: pd.DataFrame, cap: int) -> list[dict[str, Any]]:
    live = ~recs["tombstone"].fillna(False).astype(bool) & recs["error"].isna()
    if "value_format" in recs:
        live &= ~recs["value_format"].isin(["V0", "V1"])
    # the four columns read, not the whole frame: masking copies every column it holds
    live_recs = recs[["state_key", "business_key", "seq", "event_uuid"]][live.to_numpy()]
    keyed = live_recs["state_key"]
    last = live_recs[(keyed.notna() & ~keyed.duplicated(keep="last")).to_numpy()]   # each state key's latest record
    bad: dict[tuple[Any, Any], list[tuple[int, str, str]]] = defaultdict(list)
    value = log.value
    for pos, k, s, e in zip(last.index.tolist(), last["business_key"].astype(object).tolist(), last["seq"].tolist(),
                            last["event_uuid"].astype(object).tolist()):
        event = getattr(value(pos), "task_event", None)
        if event is None:
            continue
        try:
            raw = event.attributes
            expected = fingerprint_of_raw(bytes(raw)) if hasattr(event, "attrs") else event_uuid(raw)
        except Exception:  # noqa: BLE001 - unreadable attributes are a decode problem, not this lint's
            continue
        if expected != e:
            bad[(k, int(s))].append((pos, e, expected))
    rows = []
    for (k, s), items in bad.items():
        pos, e, expected = items[0]
        rows.append({"lint": "fingerprint-mismatch", "severity": "warning", "business_key": k, "seq": s,
                     "positions": tuple(p for p, _, _ in items[:cap]),
                     "message": (f"event UUID {e[:8]} at ({k}, {s}) is not the canonical fingerprint "
                                 f"{expected[:8]} of taskEvent.attributes: a legacy recipe, a Java POJO with a "
                                 f"partial creator, JDK < 19 float digits, or a non-upstream writer (§4.3.1)")})
    return rows
