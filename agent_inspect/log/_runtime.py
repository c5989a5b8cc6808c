"""Which upstream runtime wrote a log: inferred from its records, with the evidence (issue #12 item 7).

Pure: a records frame in, a :class:`RuntimeInfo` out. The rules, strongest first:

1. a V4 record (``subagentResultEvents`` present, addendum §1.2) means **main** (post-0.4 code);
2. output events that all carry lineage (0.4 binds it to every output, issue #12 item 2) mean **0.4**;
3. otherwise **0.3** (outputs without lineage, or nothing that pins a later runtime);
4. **unknown** when no record decoded (nothing to judge: an empty log, or a file of another kind). The
   verbs still need a runtime model: an unknown runtime is modelled as :data:`DEFAULT_MODEL` (0.4, the
   current release), and says so (``RuntimeInfo.model``, the evidence text).

Every runtime up to and including main ships the original divergence rule (#1301 is unfixed), so
:func:`default_rule` is ``"original"`` for each of them; the fixed rule is a what-if.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from agent_inspect._glossary import plural

if TYPE_CHECKING:
    import pandas as pd

    from agent_inspect._types import LogLike

__all__ = ["RUNTIMES", "KEEPS_PENDING", "RuntimeInfo", "infer_runtime", "resolve_runtime", "joined_runtime",
           "default_rule", "UNKNOWN", "DEFAULT_MODEL", "source_kind_of", "store_flavour"]

RUNTIMES = ("0.3", "0.4", "main")
"""Runtimes a log can be read as; ``"auto"`` infers one from the records."""
KEEPS_PENDING = ("0.4", "main")
"""Runtimes whose pending states survive checkpoints (#1158 Kafka, #1175 Fluss): each checkpoint re-appends the
retained states as refresh rows, which are no attempts, calls or divergences (addendum §2.2)."""
#: what inference says when no record decoded
UNKNOWN = "unknown"
#: the runtime model the verbs use for an unknown runtime (the current release)
DEFAULT_MODEL = "0.4"

_SHIPPED_RULE = {"0.3": "original", "0.4": "original", "main": "original"}


@dataclass(frozen=True)
class RuntimeInfo:
    """The runtime a log is read as: ``name`` ("0.3" / "0.4" / "main", or "unknown" when no record decoded),
    whether it was ``inferred``, and why; ``model``: the runtime the verbs model (``name``, or
    :data:`DEFAULT_MODEL` for an unknown one); ``store_flavour``: the original rule's store flavour the log's
    store runs (:func:`store_flavour` of its key formats and source: "kafka-k1", "fluss-k1", "segment"; several
    joined by "+" when its records mix key formats; None without a log or a parsed key).

    For example::

        info = log.runtime()                           # or ai.log.infer_runtime(log)
        info.name, info.inferred, info.evidence, info.model, info.store_flavour
    """

    name: str
    inferred: bool
    evidence: str
    counts: dict[str, int] = field(default_factory=dict)
    model: str = ""
    store_flavour: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not self.model:
            object.__setattr__(self, "model", self.name if self.name in RUNTIMES else DEFAULT_MODEL)

    @property
    def default_rule(self) -> str:
        """The divergence rule this runtime ships (the default answer everywhere)."""
        return default_rule(self.model)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form (the ``runtime`` field of summaries)."""
        return {"name": self.name, "inferred": self.inferred, "evidence": self.evidence, "model": self.model,
                "default_rule": self.default_rule, "store_flavour": self.store_flavour, "counts": dict(self.counts)}


def default_rule(runtime: str) -> str:
    """The divergence rule ``runtime`` ships: the original rule for 0.3, 0.4 and main alike.

    For example::

        ai.log.default_rule("0.4"), ai.log.default_rule(log.runtime().name)   # "original": what upstream ships
    """
    return _SHIPPED_RULE[_check(runtime)]


def _check(runtime: str) -> str:
    if runtime not in RUNTIMES:
        from agent_inspect._errors import RecoveryError

        raise RecoveryError(f"unknown runtime {runtime!r}; use one of {', '.join(RUNTIMES)} or 'auto'")
    return runtime


def _frame(log: Any) -> Any:
    return getattr(log, "records", log)


def infer_runtime(log: LogLike | pd.DataFrame | None) -> RuntimeInfo:
    """The runtime that wrote ``log`` (an ``ActionStateLog`` or its records frame), inferred, with evidence.

    For example::

        ai.log.infer_runtime(log)                      # the runtime that wrote it, and the evidence
    """
    return replace(_infer(log), store_flavour=_log_flavour(log))


def _infer(log: LogLike | pd.DataFrame | None) -> RuntimeInfo:
    r = _frame(log)
    n = len(r) if r is not None else 0
    if n == 0 or "value_format" not in r:
        return RuntimeInfo(UNKNOWN, True, "no records to judge", {})
    fmt = r["value_format"].astype(object)
    decoded = r["error"].isna() & ~r["tombstone"] if "error" in r else ~r["tombstone"]
    if not decoded.any():
        return RuntimeInfo(UNKNOWN, True, f"none of the {n} records decoded", {"records": n, "decoded": 0})
    v4 = int(((fmt == "V4") & decoded).sum())
    outputs = decoded & (r["output_event_count"].fillna(0) > 0)
    pinned = ~r["value_format_inferred"].fillna(True).astype(bool)
    with_lineage = int((outputs & fmt.isin(["V3", "V3+"]) & pinned).sum())
    without = int((outputs & r["value_format_lineage_rule"].fillna(False).astype(bool)).sum()) \
        if "value_format_lineage_rule" in r else 0
    return _decided({"v4_records": v4, "output_records_with_lineage": with_lineage,
                     "output_records_without_lineage": without, "output_records": int(outputs.sum())})


def _decided(counts: dict[str, int]) -> RuntimeInfo:
    """The runtime the evidence ``counts`` of decoded records point to (rules 1-3): a function of the counts only, so
    the parts of a log, their counts summed, say what the whole says (:func:`joined_runtime`)."""
    v4, with_lineage = counts["v4_records"], counts["output_records_with_lineage"]
    without = counts["output_records_without_lineage"]
    if v4:
        carry = "carries" if v4 == 1 else "carry"
        return RuntimeInfo("main", True, f"{plural(v4, 'record')} {carry} subagentResultEvents (V4), which only "
                                         "post-0.4 main writes", counts)
    if with_lineage and not without:
        which = "the one record with output events carries" if with_lineage == 1 else \
            f"all {plural(with_lineage, 'record')} with output events carry"
        return RuntimeInfo("0.4", True, f"{which} lineage (0.4 binds it to every output event)", counts)
    if without:
        have = "has" if without == 1 else "have"
        return RuntimeInfo("0.3", True, f"{plural(without, 'record')} {have} output events none of which carries "
                                        "lineage (0.4 would have bound it)", counts)
    return RuntimeInfo("0.3", True, "no V4 record and no output event with lineage: nothing pins a later runtime",
                       counts)


def resolve_runtime(runtime: str | RuntimeInfo | None, log: LogLike | pd.DataFrame | None = None) -> RuntimeInfo:
    """A :class:`RuntimeInfo` from ``"auto"`` / None (inferred from ``log``) or a runtime name (given).

    For example::

        ai.log.resolve_runtime("auto", log), ai.log.resolve_runtime("0.4")
    """
    if isinstance(runtime, RuntimeInfo):
        if runtime.store_flavour is None and log is not None:
            return replace(runtime, store_flavour=_log_flavour(log))
        return runtime
    if runtime is None or runtime == "auto":
        if log is None:
            return RuntimeInfo("0.4", True, "no log to judge: read as 0.4, the current release", {})
        return infer_runtime(log)
    # the evidence follows "given: " in every sentence that names the runtime ("runtime 0.3 (given: …)")
    return RuntimeInfo(_check(runtime), False, "not inferred from the records", {},
                       store_flavour=_log_flavour(log) if log is not None else None)


def joined_runtime(parts: Iterable[RuntimeInfo]) -> RuntimeInfo:
    """The runtime inferred for the records of several logs together (the windows of one input), from what
    :func:`infer_runtime` said of each: their evidence counts summed, then the same rules, so it is what the
    inference says of them loaded as one log (not the newest part's answer: outputs without lineage anywhere read
    the whole as 0.3 unless a V4 record is somewhere). "unknown" only when no part held a decoded record. The store
    flavour is not joined here (it needs the whole's source kind: :func:`joined_flavour`).

    For example::

        spec, windows = ai.log.plan_windows("sample_logs/production.parquet")   # one per partition
        parts = [ai.log.read_window(spec, w).runtime() for w in windows]
        ai.log.joined_runtime(parts) == ai.load("sample_logs/production.parquet").runtime()   # True
    """
    parts = list(parts)
    known = [p for p in parts if p.name != UNKNOWN]
    if not known:
        n = sum(int(p.counts.get("records", 0)) for p in parts)
        return RuntimeInfo(UNKNOWN, True, f"none of the {n} records decoded" if n else "no records to judge",
                           {"records": n, "decoded": 0} if n else {})
    names = ("v4_records", "output_records_with_lineage", "output_records_without_lineage", "output_records")
    return _decided({c: sum(int(p.counts.get(c, 0)) for p in known) for c in names})


def source_kind_of(log: LogLike | pd.DataFrame | None) -> str | None:
    """"kafka" or "fluss" for the original rule's flavour inference (files: Fluss when agent_key is present).

    For example::

        ai.recovery.source_kind_of(log)              # "kafka", "fluss" or None: the original rule's store flavour
    """
    source = getattr(log, "source", None)
    kind = getattr(source, "kind", None)
    if kind in ("kafka", "fluss"):
        return str(kind)
    options = getattr(source, "options", None) or {}
    if options.get("backend") in ("kafka", "fluss"):
        return str(options["backend"])
    raw = getattr(log, "raw", None)
    agent_key = getattr(raw, "agent_key", None)
    if agent_key is not None and any(a is not None for a in agent_key):
        return "fluss"
    return "kafka" if kind is not None else None


def store_flavour(key_format: str, source_kind: str | None) -> str:
    """The original rule's store flavour (spec §8.2) for a record of ``key_format`` written through a
    ``source_kind`` store ("kafka", "fluss"; None reads as Kafka): the snapshot's prefix matching for K1 keys
    ("kafka-k1" / "fluss-k1"), exact segments from K1.5 on ("segment").

    For example::

        ai.log.store_flavour("K1.5", "kafka"), ai.log.store_flavour("K1", "fluss")   # "segment", "fluss-k1"
    """
    if key_format == "K1":
        return "fluss-k1" if source_kind == "fluss" else "kafka-k1"
    return "segment"


def joined_flavour(flavours: Iterable[str]) -> str | None:
    """The store flavour of records of ``flavours`` together: each flavour once (one already joined counts as its
    parts), sorted, joined by "+"; None when there is none. A log mixing key formats and a scan whose windows differ
    both say it this way.

    For example::

        ai.log.joined_flavour(["segment", "kafka-k1", "segment"])   # "kafka-k1+segment"
    """
    return "+".join(sorted({f for v in flavours for f in str(v).split("+") if f})) or None


def _log_flavour(log: LogLike | pd.DataFrame | None) -> str | None:
    """The store flavour of ``log``'s records (several joined by "+"); None when no key parsed."""
    r = _frame(log)
    if r is None or not len(r) or "key_format" not in r:
        return None
    kind = source_kind_of(log)
    return joined_flavour(store_flavour(str(f), kind) for f in r["key_format"].dropna().unique())
