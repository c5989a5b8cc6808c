"""``diff(a, b)`` and its result: aligned pairs, per-key first divergence, a round-level graph diff."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Unpack, cast

import pandas as pd

from agent_inspect._bulk import gc_paused
from agent_inspect._glossary import did_you_mean, plural
from agent_inspect._html import Code, HtmlPart, HtmlRepr, Strong, Table, Text
from agent_inspect._jsonable import jsonable
from agent_inspect._types import RecoveryOverrides
from agent_inspect.diffing._align import PAIR_COLUMNS, STATUSES, align, compare_pairs
from agent_inspect.diffing._selectors import SelectorError, parse_selector
from agent_inspect.diffing._sides import Side, as_side

if TYPE_CHECKING:
    import networkx as nx

    from agent_inspect._types import Diffable, LogLike
    from agent_inspect.diffing._explain import Explanation
    from agent_inspect.recovery import Recovery

__all__ = ["Diff", "diff", "FIRST_COLUMNS"]

FIRST_COLUMNS = ("business_key", "seq", "action", "action_uuid", "status", "where", "expected", "actual", "why",
                 "pos_a", "pos_b")
"""Columns of :attr:`Diff.first_divergences`: per key, the first pair that is not ``same``; ``action`` is its name
(the UUID when no log names it), ``action_uuid`` the UUID a log side names it by (None when the sides use names)."""


@dataclass(frozen=True, eq=False)
class Diff(HtmlRepr):
    """Two sides aligned per business key, round (seq) and action execution.

    ``pairs``: one row per aligned pair (:data:`~agent_inspect.diffing.PAIR_COLUMNS`): ``status`` is
    ``same``, ``changed``, ``only in a`` or ``only in b``; ``match`` says how the pair was aligned;
    ``changes`` holds the field-level differences (:class:`~agent_inspect.diffing.FieldChange`).
    ``first_divergences``: per key the first pair that is not ``same``, as expected (a) / actual (b) /
    where / why it matters to the store, its action by name (``action``) and UUID (``action_uuid``). ``notes``:
    what to keep in mind reading it (a log as recorded against a prediction compares no two rules). A diff is ``empty`` when every pair is ``same``.

    For example::

        d = ai.diff(ai.diffing.attempt(log, "user-0011", 1), ai.diffing.attempt(log, "user-0011", 2))
        d.counts, d.first_divergences, d.empty
        d.pairs[["status", "match"]].head()
    """

    a: Side
    b: Side
    pairs: pd.DataFrame = field(repr=False)
    notes: tuple[str, ...] = ()

    @property
    def differences(self) -> pd.DataFrame:
        """The pairs that are not ``same``."""
        return self.pairs[self.pairs["status"] != "same"]

    @property
    def empty(self) -> bool:
        """True when the sides agree on every execution."""
        return bool((self.pairs["status"] == "same").all())

    def __len__(self) -> int:
        return int((self.pairs["status"] != "same").sum())

    def counts(self) -> dict[str, int]:
        """Pairs per status."""
        vc = self.pairs["status"].value_counts()
        return {s: int(vc.get(s, 0)) for s in STATUSES}

    def keys(self) -> list[str]:
        """Business keys with at least one difference, in key order."""
        return sorted({str(k) for k in self.differences["business_key"].dropna()})

    def for_key(self, key: str) -> pd.DataFrame:
        """The pairs of one business key."""
        return self.pairs[self.pairs["business_key"].astype(str) == str(key)]

    @cached_property
    def first_divergences(self) -> pd.DataFrame:
        """Per business key, the first pair that differs (columns :data:`FIRST_COLUMNS`)."""
        diffs = self.differences
        kinds = {"a": self.a.kind, "b": self.b.kind}
        rows = [first_divergence_row(row, kinds, reasons=(_reason(self.a, row["a"]), _reason(self.b, row["b"])))
                for _, row in diffs.groupby(diffs["business_key"].astype(str), sort=True).head(1).iterrows()]
        if any(r["action_uuid"] is not None for r in rows):   # named as the CLI and the views name it
            names = self.action_names
            for r in rows:
                if r["action_uuid"] is not None:
                    r["action"] = names.get(r["action_uuid"], r["action_uuid"])
        return pd.DataFrame(rows, columns=list(FIRST_COLUMNS))

    @cached_property
    def action_names(self) -> dict[str, str]:
        """``{action UUID: name}`` from both sides' logs (:func:`names_for`) and the names either side uses."""
        from agent_inspect.diffing._names import names_for

        known = sorted({str(a) for s in (self.a, self.b) for a in s.units["action"].dropna().unique()})
        return names_for(*(s.log for s in (self.a, self.b) if s.log is not None), known=known)

    def action_label(self, action: object) -> str:
        """How a view names ``action``: a name as it is; an action UUID by its name and short id, ``triage
        (f6aaf3fe)``, since two UUIDs may share a name (spec §4.4); an unnamed UUID as ``uuid:f6aaf3fe…``."""
        from agent_inspect.history import action_label, is_uuid

        text = action_label(action, self.action_names)
        return f"{text} ({str(action)[:8]})" if is_uuid(str(action)) and str(action) in self.action_names else text

    def first_divergence(self, key: str) -> dict[str, Any] | None:
        """The first divergence of ``key`` as a dict (None when the key's pairs are all the same)."""
        f = self.first_divergences
        hit = f[f["business_key"].astype(str) == str(key)]
        return None if hit.empty else hit.iloc[0].to_dict()

    def swapped(self) -> Diff:
        """The same diff with the sides exchanged."""
        return diff(self.b, self.a)

    def graph(self, key: str, seq: int) -> nx.DiGraph:
        """The round (key, seq) as one graph of both sides: a node per aligned pair with ``status``
        (same / changed / only in a / only in b), an edge from the execution that emitted a task's
        event to the task (on either side)."""
        import networkx as nx

        rows = self.pairs[(self.pairs["business_key"].astype(str) == str(key)) & (self.pairs["seq"] == seq)]
        g = nx.DiGraph(key=str(key), seq=int(seq))
        owner: dict[tuple[str, Any], int] = {}
        for n, r in rows.iterrows():
            label = r["action_b"] if r["action_a"] is None else r["action_a"]
            g.add_node(int(n), status=str(r["status"]), action=str(label), event_type=str(r["event_type"]),
                       pos_a=_opt(r["pos_a"]), pos_b=_opt(r["pos_b"]), changes=len(r["changes"]))
            for side, s in (("a", self.a), ("b", self.b)):
                idx = _opt(r[side])
                if idx is not None and "task_event_id" in s.units:
                    owner[(side, s.units.at[idx, "task_event_id"])] = int(n)
        for n, r in rows.iterrows():
            for side, s in (("a", self.a), ("b", self.b)):
                idx = _opt(r[side])
                if idx is None or "upstream_event_id" not in s.units:
                    continue
                parent = owner.get((side, s.units.at[idx, "upstream_event_id"]))
                if parent is not None and parent != n:
                    g.add_edge(parent, int(n))
        return g

    def explain(self, key: str, seq: int, action: str, *, side: str = "b", **options: Any) -> Explanation:
        """Why the task (key, seq, action) was reused, resumed or rerun on one side (default b)
        (:func:`agent_inspect.diffing.explain` on that side's source)."""
        from agent_inspect.diffing._explain import explain

        s = {"a": self.a, "b": self.b}.get(side)
        if s is None:
            raise SelectorError(f"side {side!r}: use 'a' or 'b'")
        if s.kind == "prediction" and s.log is not None:
            options.setdefault("log", s.log)
        # every side holds what it was made from, or at least its log
        subject = s.source if s.source is not None else cast("LogLike", s.log)
        return explain(subject, key, seq, action, **options)

    def to_dict(self, *, key: str | None = None, limit: int | None = None) -> dict[str, Any]:
        """Plain data for ``--json``: sides (``sides``: each one's kind, rule, ``what_if`` and ``rule_label``, as
        ``reconstruct --json`` names them), counts, first divergences and the differing pairs."""
        pairs = self.differences if key is None else self.differences[
            self.differences["business_key"].astype(str) == str(key)]
        firsts = self.first_divergences if key is None else self.first_divergences[
            self.first_divergences["business_key"].astype(str) == str(key)]
        if limit is not None:
            pairs = pairs.head(limit)
        return {
            "a": self.a.label, "b": self.b.label, "sides": {"a": self.a.settings(), "b": self.b.settings()},
            "counts": self.counts(), "empty": self.empty, "notes": list(self.notes),
            "first_divergences": [jsonable(r) for r in firsts.to_dict("records")],
            "pairs": [{**jsonable({k: v for k, v in r.items() if k != "changes"}),
                       "changes": [c.to_dict() for c in r["changes"]]} for r in pairs.to_dict("records")],
        }

    def __repr__(self) -> str:
        c = self.counts()
        return (f"Diff(a={self.a.label!r}, b={self.b.label!r}, same={c['same']:,}, changed={c['changed']:,}, "
                f"only_in_a={c['only in a']:,}, only_in_b={c['only in b']:,})")

    def _html_parts(self) -> Iterable[HtmlPart]:
        c = self.counts()
        yield Text(Strong("Diff"), " a = ", Code(self.a.label), ", b = ", Code(self.b.label), ": ",
                   ", ".join(f"{k} {v:,}" for k, v in c.items()))
        for note in self.notes:
            yield Text(Strong("Note: "), note)
        if self.empty:
            yield Text("The sides agree on every action execution.")
        else:
            firsts = self.first_divergences
            labels = [self.action_label(u or a) for a, u in zip(firsts["action"], firsts["action_uuid"])]
            yield Table(firsts.assign(action=labels).drop(columns="action_uuid"),
                        caption="first divergence per key", max_rows=50)


def _opt(v: Any) -> Any:
    return None if v is None or v is pd.NA or (isinstance(v, float) and v != v) else int(v)


def _only_why(have: str, lack: str, kinds: dict[str, str]) -> str:
    if kinds.get(lack) == "prediction":      # a prediction lists the tasks its recovery runs, not what was written
        return (f"the recovery {lack} predicts runs no task for this action at this round (it does not replay the "
                f"round, or no task reaches it), while {have} " + ("runs it" if kinds.get(have) == "prediction"
                                                                   else "executed it"))
    if kinds.get(have) == "prediction":
        return f"{lack} never executed this action at this round, while the recovery {have} predicts runs it"
    return (f"{lack} never executed this action at this round: a recovery of {lack} has no record of it to reuse, "
            f"and a recovery of {have} reuses one that {lack} would not produce")


def _reason(side: Side, unit: Any) -> str | None:
    """A prediction's own reason for the outcome of one of its tasks (None for other sides, or no reason)."""
    if "reason" not in side.units.columns or pd.isna(unit) or unit not in side.units.index:
        return None
    reason = side.units.at[unit, "reason"]
    return str(reason) if isinstance(reason, str) and reason else None


def _why(row: pd.Series, kinds: dict[str, str] | None = None,
         reasons: tuple[str | None, str | None] = (None, None)) -> tuple[str, str]:
    """(where, why it matters to the store) for one differing pair; ``kinds``: each side's kind ("log", "prediction", …);
    ``reasons``: each side's own reason for its outcome, where it has one."""
    status, changes = str(row["status"]), row["changes"]
    if status in ("only in a", "only in b"):
        have = status[-1]
        return "execution", _only_why(have, "b" if have == "a" else "a", kinds or {})
    first = changes[0]
    areas = {c.area for c in changes}
    if "identity" in areas:
        ident = next(c for c in changes if c.area == "identity")
        if ident.path.endswith("event_uuid"):
            return ident.path, ("a different event UUID (the task event's attributes differ) means a different "
                                "state key: the lookup misses the other side's record, so nothing is reused, and the "
                                "miss evicts the key's later rounds (spec §8.2, §10.3)")
        return ident.path, ("a different action UUID (the action's identity or code changed, spec §4.4) means a "
                            "different state key: no reuse, the action runs again")
    if "outcome" in areas:
        oc = next(c for c in changes if c.area == "outcome")
        because = "; ".join(f"{side}: {r}" for side, r in zip("ab", reasons) if r)
        return oc.path, (f"the recovery decides differently for this task: {oc.a} against {oc.b}"
                         + (f" ({because})" if because else ""))
    if "calls" in areas:
        c = next(c for c in changes if c.area == "calls")
        return c.path, ("the durable-call journal differs at this slot: on resume calls match by position "
                        "(function id and args digest), so a mismatch cuts the journal there and the call and all "
                        "later ones run again (spec §9.4)")
    if "completion" in areas:
        return "completed", ("a completed record is reused, an incomplete one resumes its body (spec §9.3)")
    return first.path, ("same state key, different content: a recovery that finds one side's record reuses its "
                        "outputs and memory updates in place of the other's (ids are kept on reuse, spec §9.3)")


def first_divergence_row(row: pd.Series, kinds: dict[str, str] | None = None, *,
                         reasons: tuple[str | None, str | None] = (None, None)) -> dict[str, Any]:
    """The first-divergence row (:data:`FIRST_COLUMNS`) of one differing pair (``kinds``: each side's kind;
    ``reasons``: each side's own reason for its task's outcome, a prediction's ``reason``)."""
    where, why = _why(row, kinds, reasons)
    changes = row["changes"]
    hit = next((c for c in changes if c.path == where), changes[0] if changes else None)
    action = row["action_a"] if row["action_a"] is not None else row["action_b"]
    if hit is not None:
        expected, actual = hit.a, hit.b
    else:
        expected = "executed" if row["status"] == "only in a" else "<absent>"
        actual = "executed" if row["status"] == "only in b" else "<absent>"
    from agent_inspect.history import is_uuid

    return {"business_key": row["business_key"], "seq": row["seq"], "action": action,
            "action_uuid": str(action) if action is not None and is_uuid(str(action)) else None,
            "status": str(row["status"]),
            "where": where, "expected": expected, "actual": actual, "why": why,
            "pos_a": row["pos_a"], "pos_b": row["pos_b"]}


def _runs_recovery(selector: str) -> bool:
    """True when a selector string runs a recovery (``@predict``, ``@reconstruct``, a rule, ``@markers``, …)."""
    sel = parse_selector(selector)
    return not (sel.mode == "log" and sel.markers is None and sel.runtime is None)


def _settings_used(settings: dict[str, Any], *sides: tuple[Diffable, Side]) -> None:
    """Settings given when neither side runs a recovery would change nothing (a rule never run, a diff that reads
    "no difference" under it): a ``SelectorError`` saying how to run one."""
    given = [f"{name}=" for name, value in settings.items() if value is not None]
    if not given or any(isinstance(obj, str) and _runs_recovery(obj) for obj, _ in sides):
        return
    kinds = [side.kind for _, side in sides]
    what = f"both are {kinds[0]}s" if kinds[0] == kinds[1] else f"a {kinds[0]} and a {kinds[1]}"
    raise SelectorError(f"{' and '.join(given)} would change nothing: neither side runs a recovery ({what}); "
                        "name it in a side, 'log.jsonl@predict=RULE' (per task) or '@reconstruct=RULE' (per record), "
                        "or pass ai.predict(log, rule=..., markers=...) as a side")


def diff(a: Diffable, b: Diffable, *, recovery: Recovery | None = None, key: str | None = None,
         log_a: LogLike | None = None, log_b: LogLike | None = None, timeout: float | None = None,
         **overrides: Unpack[RecoveryOverrides]) -> Diff:
    """Diff anything against anything: logs, attempts, reconstructions or predictions under rules,
    replay executors, or selector strings (``"prod.jsonl@attempt=2"``, see
    :func:`agent_inspect.diffing.parse_selector`).

    ``key`` keeps one business key. ``log_a`` / ``log_b`` give a prediction's records (for values). ``timeout``:
    seconds a selector string's Kafka broker or Fluss cluster (or its ``@markers=`` checkpoint's storage) may take
    to answer (default: the loader's 10).
    ``recovery`` and the settings as keywords (``rule``, ``markers``, ``runtime``, … as every verb takes
    them) apply to each selector string where it sets none of its own; they never make a side a recovery (a
    side without a rule or ``@markers=`` is the log as written, read under ``runtime`` and ``kafka_pending``). Pairs are aligned per business key, round and action execution
    (:func:`agent_inspect.diffing.align` documents the passes; logs of two key formats, such as runs before and
    after an upgrade, pair actions by name); changed pairs carry field-level changes;
    ids that every attempt draws anew are not compared.

    For example::

        d = ai.diff(ai.diffing.attempt(log, "user-0011", 1), ai.diffing.attempt(log, "user-0011", 2))
        d.first_divergences
    """
    settings: dict[str, Any] = {"recovery": recovery, **overrides}
    with gc_paused():
        sa, sb = (as_side(a, log=log_a, timeout=timeout, **settings),
                  as_side(b, log=log_b, timeout=timeout, **settings))
        _settings_used(settings, (a, sa), (b, sb))
        if sa.label == sb.label and a is not b:
            sa, sb = as_side(sa, label=f"a: {sa.label}"), as_side(sb, label=f"b: {sb.label}")
        sa, sb = _keyed_alike(sa, sb), _keyed_alike(sb, sa)
        if key is not None:
            keyed = _only_key(sa, key), _only_key(sb, key)
            if not len(keyed[0].units) and not len(keyed[1].units):   # a typo is not "no difference"
                pool = {*sa.units["business_key"].dropna().astype(str), *sb.units["business_key"].dropna().astype(str)}
                raise SelectorError(f"business key {key!r} is on neither side" + (
                    did_you_mean([str(key)], pool) or f" ({plural(len(pool), 'business key')} between them)"))
            sa, sb = keyed
        sa, sb = _named_alike(sa, sb), _named_alike(sb, sa)
        sa, sb = _named_across_schemes(sa, sb)
        matched = align(sa.units, sb.units)
        pairs = compare_pairs(sa, sb, matched)
    return Diff(sa, sb, pairs[list(PAIR_COLUMNS)], notes=_notes(sa, sb))


def _notes(a: Side, b: Side) -> tuple[str, ...]:
    """The note for a log as recorded against a prediction: it compares what the job wrote with what a restore
    runs (every task not run again is "only in" the log), which users meant as a comparison of two rules."""
    if {a.kind, b.kind} != {"log", "prediction"}:
        return ()
    (log, log_name), (pred, pred_name) = sorted(((a, "a"), (b, "b")), key=lambda s: s[0].kind)
    rule = pred.rule_mark.name if pred.rule_mark is not None else pred.rule
    other = "fixed" if rule in (None, "original") else rule
    try:
        source = parse_selector(log.label).source
    except SelectorError:
        source = log.label
    return (f"{log_name} is the log as recorded and {pred_name} a restore under {rule}: this compares what the job "
            f"wrote with what that restore runs (each task it does not run again is 'only in {log_name}'), not two "
            f"rules; to compare rules, diff '{source}@original' with '{source}@{other}' under the same markers",)


def _named_alike(side: Side, other: Side) -> Side:
    """``side`` with its actions named as ``other`` names them: by name when ``side`` has action UUIDs (a log's
    records) and ``other`` has none (a prediction's tasks). The names come from the log and from ``other``'s
    executions of the same state keys; a UUID named by neither stays as it is."""
    units = side.units
    if not units["action_uuid"].notna().any() or other.units["action_uuid"].notna().any():
        return side
    from agent_inspect.history import action_names

    same = units[["state_key", "action_uuid"]].merge(other.units[["state_key", "action"]].dropna(), on="state_key")
    names = {**(action_names(side.log.records) if side.log is not None else {}),
             **dict(zip(same["action_uuid"], same["action"]))}
    action = units["action_uuid"].map(names).fillna(units["action"])
    return replace(side, units=units.assign(action=action.astype(object)))


def _named_across_schemes(a: Side, b: Side) -> tuple[Side, Side]:
    """Both log sides with their actions named, when their logs use different key formats: each format has its
    own action UUID scheme (spec §4.4), so a run before an upgrade (K1.5) and one after it (K2) share no UUID. A
    K2 UUID is its name's, so a name either log gives names it (a K2 sub-agent child whose outputs, V4 result
    events, name no action is named by the K1.5 log's child outputs)."""
    formats = [_key_formats(s) for s in (a, b)]
    if not all(formats) or formats[0] & formats[1]:
        return a, b
    from agent_inspect.diffing._names import names_for

    named = []
    for side, other in ((a, b), (b, a)):
        names = names_for(side.log, other.log)      # the side's own names first
        action = side.units["action_uuid"].map(names).fillna(side.units["action"])
        named.append(replace(side, units=side.units.assign(action=action.astype(object))))
    return named[0], named[1]


def _key_formats(side: Side) -> set[str]:
    records = getattr(side.log, "records", None)
    if records is None or "key_format" not in records or not side.units["action_uuid"].notna().any():
        return set()
    return {str(f) for f in records["key_format"].dropna().unique()}


def _keyed_alike(side: Side, other: Side) -> Side:
    """``side`` with the digests by which a K1.6/K2 log names its keys replaced by the key texts ``other`` names
    the same keys by: a log written before an upgrade to K2 and one written after it name each key two ways."""
    from agent_inspect.codec import string_key_digest

    mine = set(side.units["business_key"].dropna().astype(str))
    texts = set(other.units["business_key"].dropna().astype(str)) - mine
    named = {digest: text for text in texts if (digest := string_key_digest(text)) in mine}
    if not named:
        return side
    bk = side.units["business_key"].astype(object)
    return replace(side, units=side.units.assign(business_key=bk.map(lambda k: named.get(k, k))))


def _only_key(side: Side, key: str) -> Side:
    from agent_inspect.log import logged_key

    bk = side.units["business_key"].astype(str)
    named = logged_key(str(key), set(bk)) or str(key)   # a K1.6/K2 side names the key by its digest
    units = side.units[(bk == named).to_numpy()]
    return replace(side, units=units)     # its what-if mark too
