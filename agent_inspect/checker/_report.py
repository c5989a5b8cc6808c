"""What a check returns: the per-history frame, the failure counts and one minimized counterexample per kind."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from agent_inspect._glossary import plural
from agent_inspect._html import Bullets, Code, Details, Heading, HtmlPart, HtmlRepr, Strong, Table, Text
from agent_inspect.cases import executor_for
from agent_inspect.checker._generate import (
    HistoryOptions,
)
from agent_inspect.checker._shrink import _parse

if TYPE_CHECKING:
    from agent_inspect.executor import ReplayExecutor
    from agent_inspect.rules import DivergenceRule

__all__ = ["CheckReport", "Counterexample", "REFERENCE_RULE"]

REFERENCE_RULE = "fixed"
"""The rule a check holds others to (spec §10.3): a stale reuse it makes too is a known limit of log-only rules."""

# -- results ----------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Counterexample:
    """A minimized history that shows one failure kind, as a case file (docs/reference/cases.md).

    ``items`` tell each failing task of the minimized case as a story (which task, which record, why
    reusing or re-running it is wrong); ``details`` say the same in the compact case notation; ``case`` is the parsed case,
    :meth:`to_toml` / :meth:`save` write it, :meth:`executor` opens it in the replay stepper.
    ``full_data`` is the full, unminimized history as a case (``full_case``; saved beside the minimal
    one); ``known_limit`` names the spec §10.3 known limit the history falls in, or None (a rule defect).

    For example::

        report = ai.checker.check("naive", n=20, seed=1)
        for example in report.counterexamples:          # one minimized case per failure kind
            print(example.kind, example.items[:1])
            example.to_toml()                           # a case file: save it, run it, step through it
    """

    kind: str
    rule: str
    history_seed: int
    history: str
    items: tuple[str, ...]
    data: Mapping[str, Any] = field(repr=False)
    details: tuple[str, ...] = field(default=(), repr=False)
    rule_object: DivergenceRule | None = field(default=None, repr=False, compare=False)
    full_data: Mapping[str, Any] | None = field(default=None, repr=False)
    known_limit: str | None = None

    @property
    def full_case(self) -> Any:
        """The full, unminimized history as a case (None when not kept)."""
        return _parse(self.full_data) if self.full_data is not None else None

    @property
    def case(self) -> Any:
        """The counterexample as a :class:`~agent_inspect.rules.Case`."""
        return _parse(self.data)

    @property
    def records(self) -> int:
        """Log lines (action executions and tombstones) of the minimized history."""
        return len(self.data["log"])

    @property
    def attempts(self) -> int:
        return len({ln["att"] for ln in self.data["log"]})

    @property
    def rounds(self) -> int:
        """Replayed inputs plus the restored in-flight round, if any."""
        return len(self.data["replay"]) + (1 if self.data.get("pending") else 0)

    def to_toml(self) -> str:
        """The case file text."""
        import tomli_w

        return tomli_w.dumps(_toml_ready(self.data))

    def save(self, path: str | Path) -> Path:
        """Write the case file: ``path`` ending in ``.toml``, or a directory (created if needed) that gets
        ``<case id>.toml``; the full history goes beside it as ``<name>-full.toml``. Returns the path written."""
        import tomli_w

        path = Path(path)
        if path.suffix != ".toml":
            path.mkdir(parents=True, exist_ok=True)
            path = path / f"{self.data['id']}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_toml(), encoding="utf-8")
        if self.full_data is not None:
            path.with_name(f"{path.stem}-full.toml").write_text(tomli_w.dumps(_toml_ready(self.full_data)),
                                                                encoding="utf-8")
        return path

    def executor(self, **options: Any) -> ReplayExecutor:
        """A :class:`~agent_inspect.executor.ReplayExecutor` over the counterexample under the checked rule."""
        rule = self.rule_object if self.rule_object is not None else self.rule
        return executor_for(self.case, rule=rule, **options)

    def to_dict(self) -> dict[str, Any]:
        import tomli_w

        return {"kind": self.kind, "rule": self.rule, "history_seed": self.history_seed, "history": self.history,
                "items": list(self.items), "details": list(self.details), "records": self.records, "attempts": self.attempts,
                "rounds": self.rounds, "case": self.to_toml(), "known_limit": self.known_limit,
                "full_case": tomli_w.dumps(_toml_ready(self.full_data)) if self.full_data is not None else None}


def _toml_ready(data: Mapping[str, Any]) -> dict[str, Any]:
    order = ["id", "name", "category", "summary", "note", "replay", "pending", "log", "setup", "keys", "agent"]
    return {k: data[k] for k in order if k in data}


@dataclass(frozen=True, eq=False)
class CheckReport(HtmlRepr):
    """What :func:`check` found: one row per history in ``frame``, totals, and one minimized
    counterexample per failure kind (``counterexamples``).

    For example::

        report = ai.checker.check("naive", n=5, seed=1)
        report.passed, report.verdict, report.totals
        print(report.summary())
    """

    rule: str
    n: int
    seed: int
    options: HistoryOptions
    frame: pd.DataFrame = field(repr=False)
    counterexamples: tuple[Counterexample, ...] = ()

    def _sum(self, col: str) -> int:
        return int(self.frame[col].sum()) if len(self.frame) else 0

    @property
    def stale_reuses(self) -> int:
        return self._sum("stale_reuses")

    @property
    def stale_beyond_reference(self) -> int:
        """Stale reuses the reference rule (:data:`REFERENCE_RULE`) does not make in the same history: the rule's
        defects. The others are spec §10.3 known limits, which no rule that reads the log alone avoids."""
        if len(self.frame) and "stale_beyond_reference" not in self.frame:   # a frame made without the reference
            return self.stale_reuses
        return self._sum("stale_beyond_reference")

    @property
    def avoidable_reruns(self) -> int:
        return self._sum("avoidable_reruns")

    @property
    def tainted_reuses(self) -> int:
        return self._sum("tainted_reuses")

    @property
    def errors(self) -> int:
        return int(self.frame["error"].notna().sum()) if len(self.frame) else 0

    @property
    def passed(self) -> bool:
        """Not broken, and no stale reuse beyond the reference rule's (its own are spec §10.3 known limits)."""
        return self.stale_beyond_reference == 0 and self.errors == 0

    @property
    def broken(self) -> str | None:
        """The rule's first error in one line (a hook raised or returned the wrong type, with ``file:line`` in
        the rule's code), or None. A broken rule is not judged safe or unsafe."""
        if not len(self.frame):
            return None
        errors = self.frame["error"].dropna()
        return str(errors.iloc[0]) if len(errors) else None

    @property
    def verdict(self) -> str:
        """``"broken"``, ``"unsafe"`` (a stale reuse the reference rule does not make), ``"known limits only"`` (every
        stale reuse is one the reference makes too) or ``"no stale reuse"``."""
        return "broken" if self.errors else "unsafe" if self.stale_beyond_reference else \
            "known limits only" if self.stale_reuses else "no stale reuse"

    def counterexample(self, kind: str) -> Counterexample | None:
        """The counterexample of ``kind`` (one of ``FAILURE_KINDS``), or None."""
        return next((c for c in self.counterexamples if c.kind == kind), None)

    @property
    def totals(self) -> dict[str, int]:
        return {"histories": len(self.frame), "tasks": self._sum("tasks"), "reused": self._sum("reused"),
                "resumed": self._sum("resumed"), "rerun": self._sum("rerun"), "stale_reuses": self.stale_reuses,
                "histories_with_stale": int((self.frame["stale_reuses"] > 0).sum()) if len(self.frame) else 0,
                "stale_beyond_reference": self.stale_beyond_reference,
                "tainted_reuses": self.tainted_reuses, "avoidable_reruns": self.avoidable_reruns,
                "errors": self.errors}

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return {"rule": self.rule, "n": self.n, "seed": self.seed, "passed": self.passed, "verdict": self.verdict,
                "broken": self.broken, **self.totals,
                "counterexamples": [c.to_dict() for c in self.counterexamples]}

    def summary(self) -> str:
        t = self.totals
        if self.broken is not None:
            return (f"{self.broken} (in {t['errors']:,} of {plural(t['histories'], 'history', 'histories')}; a broken "
                    "rule is not judged for stale reuses)")
        swept = int((self.frame["case"].fillna("") != "").sum()) if "case" in self.frame else 0
        origin = f" ({t['histories'] - swept:,} random, {swept:,} from the case matrix)" if swept else ""
        stale, beyond = t["stale_reuses"], t["stale_beyond_reference"]
        whose = "" if not stale else " (spec §10.3 known limits of log-only rules)" if self.rule == REFERENCE_RULE \
            else f" (all made by the reference rule {REFERENCE_RULE} too: spec §10.3 known limits)" if not beyond else \
            "" if beyond == stale else f" ({beyond:,} beyond the reference rule {REFERENCE_RULE}'s)"
        return (f"rule {self.rule}: {plural(t['histories'], 'history', 'histories')}{origin}, {plural(t['tasks'], 'task')}; "
                f"{plural(stale, 'stale reuse')} in {plural(t['histories_with_stale'], 'history', 'histories')}{whose}, "
                f"{plural(t['avoidable_reruns'], 'avoidable rerun')}, {plural(t['tainted_reuses'], 'tainted reuse')}, "
                f"{plural(t['errors'], 'error')}")

    def __repr__(self) -> str:
        return f"CheckReport({self.summary()})"

    def _html_parts(self) -> Iterable[HtmlPart]:
        verdict = Strong(self.verdict) if self.verdict in ("unsafe", "broken") else self.verdict
        yield Text(Strong("Rule check"), " ", Code(self.rule), " — ", verdict, ": ", self.summary())
        yield Table(pd.DataFrame([self.totals]), caption="totals")
        bad = self.frame[(self.frame["stale_reuses"] > 0) | (self.frame["avoidable_reruns"] > 0)
                         | self.frame["error"].notna()]
        if len(bad):
            yield Table(bad, caption="histories with findings", max_rows=10)
        for c in self.counterexamples:
            yield Heading(c.kind, ": seed ", c.history_seed,
                          f", {plural(c.attempts, 'attempt')}, {plural(c.rounds, 'round')}, {plural(c.records, 'record')}")
            yield Text(c.history, f" — spec §10.3 known limit: {c.known_limit}" if c.known_limit
                       else " — not a known limit: a defect of the rule")
            yield Bullets(c.items)
            if c.details:
                yield Details("compact notation", "\n".join(c.details))
            yield Details("case file", c.to_toml())
