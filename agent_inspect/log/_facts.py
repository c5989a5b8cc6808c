"""A log's summary in words a user reads: one label and one explanation per ``ActionStateLog.summary()`` field.

Pure: a summary dict in, ``(name, label, text, explanation)`` rows out. The report, the log's HTML view and
the widgets all read the summary through :func:`summary_facts`, so a field is named the same everywhere; the
JSON of ``agent-inspect summary --json`` keeps the machine names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from agent_inspect._glossary import plural
from agent_inspect.log._runtime import RuntimeInfo

__all__ = ["SummaryFact", "SUMMARY_LABELS", "summary_facts", "runtime_text", "plain_text", "rule_label",
           "RuleMark", "rule_mark"]


class SummaryFact(NamedTuple):
    """One summary field: its machine ``name``, a ``label`` in words, its value as ``text``, an ``explanation``.

    For example::

        for fact in ai.log.summary_facts(log.summary())[:3]:
            print(fact.label, fact.text, "-", fact.explanation)
    """

    name: str
    label: str
    text: str
    explanation: str


SUMMARY_LABELS: dict[str, tuple[str, str]] = {
    "records": ("records", "records read from the source, tombstones and undecodable ones included"),
    "errors": ("records that do not decode", "rows whose key or value could not be decoded (see log.errors)"),
    "business_keys": ("business keys", "distinct business keys (the job's keyBy values)"),
    "partitions": ("partitions", "Kafka partitions (or Fluss buckets) the records came from"),
    "key_formats": ("state-key formats", "records per state-key layout (K0 … K2)"),
    "value_formats": ("value formats", "records per ActionState JSON version (V0 … V4)"),
    "value_formats_inferred": ("value formats guessed", "records whose JSON does not pin one version: the "
                               "format shown is the most likely one"),
    "value_formats_by_lineage_rule": ("records pinned by the 0.4 lineage rule", "records with output events "
                                      "none of which carries upstreamEventId: 0.4 binds it to every output event, "
                                      "so they cannot be V3 (read as V2a/V2b)"),
    "completed": ("completed records", "records with completed=true (the action finished)"),
    "tombstones": ("tombstones", "deletions (records without a value)"),
    "executions": ("action executions", "distinct state keys written (one per action execution)"),
    "root_records": ("records of root events", "records whose task event is the round's input"),
    "flagged_keys": ("business keys with key hazards", "business keys with at least one state key that trips "
                     "a known parser hazard (e.g. '_' in the key text)"),
    "flagged_records": ("records with key hazards", "records whose state key trips a known parser hazard"),
    "key_flags": ("key hazards", "records per hazard found in the state keys"),
    "runtime": ("runtime that wrote the log", "the upstream Flink Agents runtime these records come from, "
                "and the evidence for it (override with runtime=)"),
}
"""machine name -> (label, explanation); fields not listed here keep their name as label"""


_NO_RECORDS = "the source is empty (the wrong file, topic or offsets, or a dump that failed?)"


def plain_text(v: object, empty: str = "—") -> str:
    """A summary value as text (shared by the HTML view and the CLI's ``summary``).

    For example::

        ai.log.plain_text(None), ai.log.plain_text(1234)   # "—" for nothing, "1,234"
    """
    if isinstance(v, Mapping):
        return ", ".join(f"{k}: {_count(n)}" for k, n in v.items()) or empty
    if isinstance(v, (list, tuple)):
        return ", ".join(map(str, v)) or empty   # partition numbers and names: identifiers, not counts
    return _count(v)


def _count(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)


def runtime_text(runtime: RuntimeInfo | Mapping[str, object]) -> str:
    """``"0.4 (inferred: <evidence>; default rule original)"`` from a ``RuntimeInfo`` or its ``as_dict()``.

    For example::

        ai.log.runtime_text(log.runtime())
    """
    if not isinstance(runtime, Mapping):
        runtime = runtime.as_dict()
    how = "inferred" if runtime.get("inferred") else "given"
    name, model = runtime.get("name"), runtime.get("model") or runtime.get("name")
    modelled = f"; modelled as {model}, the current release" if model != name else ""
    return f"{name} ({how}: {runtime.get('evidence')}{modelled}; default rule {runtime.get('default_rule')})"


class RuleMark(NamedTuple):
    """A rule as :func:`rule_label` names it, as data: its ``name``, whether it is a ``what_if`` under the
    ``runtime`` (the runtime's name; None when none was given), and the rule that runtime ``ships``.

    ``mark`` is what follows the name of a what-if (``" (what-if; 0.4 ships original)"``, else ``""``) and
    ``label`` the whole label, so a caller that writes the rule its own way (a diff side's selector text) adds
    the one mark without slicing a label.

    For example::

        m = ai.log.rule_mark("fixed", log.runtime())
        m.what_if, m.ships, m.label                    # True, "original", "fixed (what-if; 0.4 ships original)"
    """

    name: str
    what_if: bool
    runtime: str | None
    ships: str | None

    @property
    def mark(self) -> str:
        """The words after a what-if's name (``" (what-if; 0.4 ships original)"``); ``""`` for any other rule."""
        return f" (what-if; {self.runtime} ships {self.ships})" if self.what_if else ""

    @property
    def label(self) -> str:
        """The rule's one label: its name and, for a what-if, the mark (what :func:`rule_label` returns)."""
        return self.name + self.mark


def rule_mark(rule: object, runtime: RuntimeInfo | None) -> RuleMark:
    """The rule ``rule`` under ``runtime`` as a :class:`RuleMark`: its name, whether it is a what-if, and what
    the runtime ships.

    ``rule``: a name (``"fixed"``, ``"original:segment"``) or a rule object (its ``name``, with its given store
    ``flavour`` as ``original:kafka-k1``). A what-if when ``runtime`` (a ``RuntimeInfo``; None: never) ships
    another rule, or the shipped rule in a store flavour other than the log's (``runtime.store_flavour``: a K1.5
    log's store is "segment", so ``original:kafka-k1`` is a what-if there, and ``ships`` says
    ``original:segment``).

    For example::

        ai.log.rule_mark("original:segment", log.runtime()).what_if     # False: the production sample's own store
        ai.log.rule_mark("original:kafka-k1", log.runtime()).label      # "original:kafka-k1 (what-if; 0.4 ships original:segment)"
    """
    if isinstance(rule, str):
        name = rule
    else:
        base, flavour = getattr(rule, "name", None), getattr(rule, "flavour", None)
        base = base if isinstance(base, str) else type(rule).__name__
        name = f"{base}:{flavour}" if isinstance(flavour, str) and flavour else base
    if runtime is None:
        return RuleMark(name, False, None, None)
    shipped = runtime.default_rule
    base, _, flavour = name.partition(":")
    if name == shipped or base != shipped:
        return RuleMark(name, name != shipped, runtime.name, shipped)
    # the shipped rule in a given store flavour: the runtime's own only when the log's store runs that flavour
    own = runtime.store_flavour
    if own is None or flavour == own:
        return RuleMark(name, False, runtime.name, shipped)
    return RuleMark(name, True, runtime.name, shipped if "+" in own else f"{shipped}:{own}")


def rule_label(rule: object, runtime: RuntimeInfo | None) -> str:
    """The one label of a rule, wherever a rule is named (results, views, the report, the CLI, OTel spans).

    ``rule``: a name (``"fixed"``, ``"original:segment"``) or a rule object (its ``name``, with its given store
    ``flavour`` as ``original:kafka-k1``). Marked ``"fixed (what-if; 0.4 ships original)"`` when ``runtime`` (a
    ``RuntimeInfo``; None: no mark) ships another rule, or its rule in a store flavour other than the log's. The
    same answer as data: :func:`rule_mark`.

    For example::

        ai.log.rule_label("fixed", log.runtime())      # "fixed (what-if; 0.4 ships original)"
    """
    return rule_mark(rule, runtime).label


def summary_facts(summary: Mapping[str, object]) -> list[SummaryFact]:
    """The fields of ``summary`` (``ActionStateLog.summary()``) in order, labelled; ``source`` is left out.

    For example::

        [(fact.name, fact.text) for fact in ai.log.summary_facts(log.summary())]
    """
    out = []
    for name, value in summary.items():
        if name == "source":
            continue
        label, explanation = SUMMARY_LABELS.get(name, (name.replace("_", " "), ""))
        is_runtime = name == "runtime" and isinstance(value, (Mapping, RuntimeInfo))
        text = runtime_text(value) if is_runtime else plain_text(value)  # type: ignore[arg-type]
        if name == "partitions" and isinstance(value, (list, tuple)) and value:   # "0" alone reads as a count
            text = f"{text} ({plural(len(value), 'partition')})"
        if name == "records" and value == 0:
            text = f"0: {_NO_RECORDS}"
        out.append(SummaryFact(name, label, text, explanation))
    return out
