"""The rule safety checker: judge a divergence rule on random recovery histories.

Definitions (the generator knows the true history, so it can judge):

- The **branch** of a task or record at (key k, seq s) is the inputs of k at seqs ``0..s`` in the
  attempt that ran it. A recovery's branch comes from the checkpoint it restored plus the inputs
  the source replays after it.
- A **stale reuse** is a REUSE of a record (or a RESUME of an incomplete record with recorded call
  results, which replays them) whose branch differs from the recovery's branch at that key and seq:
  a record written under a different input at seq s (a branch change, spec §10.2 items 1–2) or at a
  later seq of a round that depended on a different earlier input (§10.2 item 1, G01). It is also a
  reuse of a record written for another task of the same recovery: a sibling with identical
  attributes (#1084, G09) whose record this recovery already reused, or whose event it also dispatches.
- A **tainted reuse** is a reuse of a record on the right branch that its own attempt wrote after
  that attempt had made a stale reuse itself (its memory was already wrong). No rule that reads only
  the log can see this (spec §10.3 "Tainted records"); it is counted, but not held against the rule.
- An **avoidable rerun** is a RERUN of a task whose state key holds, in the rebuild window read with
  plain last-write-wins (tombstones delete), a completed record on the recovery's branch that is not
  tainted and that no earlier task of this recovery has used: reusing it would have been safe.

Every failure kind gets a counterexample: the history shrunk (whole attempts, trailing rounds,
restored tasks, then single records, until removing any record makes the failure disappear) and
written as a case file (docs/reference/cases.md), where stale and tainted records carry ``stale = true``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from agent_inspect.checker._generate import (
    History,
    HistoryOptions,
    RuleCheckError,
    generate_history,
)
from agent_inspect.checker._judge import (
    _FRAME_COLUMNS,
    FAILURE_KINDS,
    _Eval,
    _evaluate,
    _history_subject,
    resolve_check_rule,
)
from agent_inspect.checker._limits import KNOWN_LIMITS, known_limit
from agent_inspect.checker._report import REFERENCE_RULE, CheckReport, Counterexample
from agent_inspect.checker._shrink import _assemble, _case_base, _history_lines, _judge_case, _restored, _shrink
from agent_inspect.checker._sweep import sweep as sweep_shapes
from agent_inspect.rules import rule_name

if TYPE_CHECKING:
    from agent_inspect._types import RuleLike

__all__ = ["check", "CheckReport", "Counterexample", "resolve_check_rule", "FAILURE_KINDS", "history_seeds",
           "KNOWN_LIMITS", "known_limit"]

def check(rule: RuleLike, *, n: int = 200, seed: int = 0, minimize: bool = True,
          options: HistoryOptions | Mapping[str, Any] | None = None, seeds: Sequence[int] | None = None,
          sweep: bool = True, **generator_options: Any) -> CheckReport:
    """Judge ``rule`` on ``n`` random recovery histories (reproducible from ``seed``).

    ``rule`` is a built-in name, ``"module:ClassName"``, a :class:`DivergenceRule` subclass or
    instance. Generator options (:class:`HistoryOptions`: ``keys``, ``rounds``, ``attempts``,
    ``branch_changes``, ``tombstones``, ``savepoints``, ``production_rules``, …) come as ``options``
    or keywords. Returns a :class:`CheckReport` with stale reuses, avoidable reruns, raising rules
    and, unless ``minimize=False``, a minimized counterexample case per failure kind. A rule whose hook
    raises or returns the wrong type is reported as broken (``report.broken``: the first error in one
    line, with ``file:line`` in the rule's code), never as unsafe.

    Besides the ``n`` random histories the rule is judged on the matrix sweep (unless ``sweep=False``): one
    fixed history for each shape of the bundled cases (each case agent, each call case D01–D06; their own
    options, not ``options``), so every check goes through every case the matrix knows. The frame's ``case``
    column names a sweep history's case (empty for a random one). ``seeds`` re-checks given random histories
    (the ``seed`` column of a report's frame) instead of ``n`` new ones, without the sweep::

        report = ai.checker.check("fixed", n=500, seed=1, tombstones=1.0)
        report.counterexample("stale-reuse").save("cases/")

    For example::

        report = ai.checker.check("fixed", n=5, seed=0, keys=2)   # or a DivergenceRule class or instance
        report.passed, report.stale_reuses, report.avoidable_reruns
    """
    if n < 0:
        raise RuleCheckError(f"n={n} must be 0 or more")
    opts = HistoryOptions.of(options, **generator_options)
    todo: list[tuple[int, HistoryOptions, str]] = [(int(s), opts, "") for s in seeds] if seeds is not None else \
        [(s, opts, "") for s in history_seeds(seed, n)]
    if sweep and seeds is None:
        todo += [(shape.seed, HistoryOptions.of(shape.options), shape.case) for shape in sweep_shapes()]
    rule_obj = resolve_check_rule(rule)
    name = rule_name(rule_obj)     # its one label, as every verb names it (the spec typed only for typing again)
    reference = resolve_check_rule(REFERENCE_RULE)
    rows: list[dict[str, Any]] = []
    first_of: dict[str, tuple[bool, int, History]] = {}   # per kind: (no defect, records, history), least first
    for i, (hseed, hopts, case) in enumerate(todo):
        h = generate_history(hseed, hopts)
        subject = _history_subject(h)
        ev = _evaluate(subject, rule_obj)
        # a stale reuse the reference rule makes too is a spec §10.3 known limit of log-only rules, not a defect
        beyond = len(set(ev.stale_at) - set(_evaluate(subject, reference).stale_at)) if ev.stale else 0
        rows.append({"history": i, "seed": hseed, "keys": len(h.paths), "rounds": sum(len(p) for p in h.paths.values()),
                     "attempts": len(h.attempts), "records": len(h.log), "tasks": ev.tasks, "reused": ev.reused,
                     "resumed": ev.resumed, "rerun": ev.rerun, "stale_reuses": len(ev.stale),
                     "stale_beyond_reference": beyond, "tainted_reuses": len(ev.tainted),
                     "avoidable_reruns": len(ev.avoidable), "crashed": ev.crashed, "error": ev.error, "case": case})
        for kind in FAILURE_KINDS:
            # the counterexample shows a defect where there is one (a stale reuse beyond the reference's)
            rank = (kind == "stale-reuse" and not beyond, len(h.log))
            if ev.fails(kind) and (kind not in first_of or rank < first_of[kind][:2]):
                first_of[kind] = (*rank, h)
    frame = pd.DataFrame(rows, columns=_FRAME_COLUMNS)
    cexs = []
    for kind in FAILURE_KINDS:
        if kind not in first_of:
            continue
        no_defect, _, first = first_of[kind]
        case_id = f"CHK-{kind}-{first.seed}"
        summary = f"rules.check counterexample: {kind} under {name} (history seed {first.seed})"
        # the full, unminimized history is kept beside the minimal one (spec §10.3, issue #12 item 10)
        lines, pending, replay = _history_lines(first)
        full = _assemble(_case_base(first, f"{case_id}-full", f"rules-check-{kind}-full",
                                    summary + " (full history, not minimized)"),
                         lines, replay, pending, _restored(first))
        full_ev = _judge_case(full, rule_obj) or _Eval()
        if minimize:
            data, ev = _shrink(kind, first, rule_obj, case_id, summary, reference=None if no_defect else reference)
        else:
            data, ev = {**full, "id": case_id, "name": f"rules-check-{kind}", "summary": summary}, full_ev
        items = ev.stale if kind == "stale-reuse" else ev.avoidable if kind == "avoidable-rerun" else \
            [ev.error] if ev.error else []
        details = ev.stale_compact if kind == "stale-reuse" else ev.avoidable_compact if kind == "avoidable-rerun" \
            else []
        # a stale reuse beyond the reference's is the rule's defect, whatever limit its history shows
        limit = known_limit(first, _evaluate(_history_subject(first), rule_obj), kind) if no_defect else None
        if kind == "stale-reuse" and no_defect and limit is None:
            limit = f"the reference rule {REFERENCE_RULE} makes it too"
        note = f"history: {first.describe()}" + (f"; spec §10.3 known limit: {limit}" if limit else "")
        data = {**data, "note": note}
        full = {**full, "note": note}
        cexs.append(Counterexample(kind=kind, rule=name, history_seed=first.seed, history=first.describe(),
                                   items=tuple(str(i) for i in items), details=tuple(details), data=data,
                                   rule_object=rule_obj,
                                   full_data=full, known_limit=limit))
    return CheckReport(rule=name, n=len(todo), seed=seed, options=opts, frame=frame, counterexamples=tuple(cexs))


def history_seeds(seed: int, n: int) -> list[int]:
    """The history seeds a check with ``seed`` and ``n`` uses (``generate_history(s)`` rebuilds each)."""
    rng = random.Random(seed)
    return [rng.getrandbits(48) for _ in range(n)]
