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

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_inspect._glossary import plural

if TYPE_CHECKING:
    import pandas as pd

    from agent_inspect._types import LogLike

__all__ = ["RUNTIMES", "KEEPS_PENDING", "RuntimeInfo", "infer_runtime", "resolve_runtime", "default_rule", "UNKNOWN",
           "DEFAULT_MODEL"]

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
    :data:`DEFAULT_MODEL` for an unknown one).

    For example::

        info = log.runtime()                           # or ai.log.infer_runtime(log)
        info.name, info.inferred, info.evidence, info.model
    """

    name: str
    inferred: bool
    evidence: str
    counts: dict[str, int] = field(default_factory=dict)
    model: str = ""

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
                "default_rule": self.default_rule, "counts": dict(self.counts)}


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
    counts = {"v4_records": v4, "output_records_with_lineage": with_lineage,
              "output_records_without_lineage": without, "output_records": int(outputs.sum())}
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
        return runtime
    if runtime is None or runtime == "auto":
        if log is None:
            return RuntimeInfo("0.4", True, "no log to judge: read as 0.4, the current release", {})
        return infer_runtime(log)
    return RuntimeInfo(_check(runtime), False, f"runtime={runtime!r} was given", {})
