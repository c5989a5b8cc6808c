"""Run a case under a rule and check the prediction against the case's expectations."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from agent_inspect import codec
from agent_inspect._errors import CaseFileError
from agent_inspect._glossary import plural
from agent_inspect.cases._build import BuiltCase, build_case, call_result, encode_payload
from agent_inspect.cases._format import Case
from agent_inspect.cases._notation import CacheOp, ExpectedItem
from agent_inspect.recovery import NOT_DISPATCHED, Prediction, predict
from agent_inspect.recovery.engine import CallEvent, CallJournal, CallSlot
from agent_inspect.rules import resolve_rule
from agent_inspect.store import CacheEvent

if TYPE_CHECKING:
    from agent_inspect._types import RuleLike

__all__ = ["CaseResult", "run_case", "run_call_case", "CALL_RULE"]

CALL_RULE = "call"
"""The pseudo rule name of call-level cases (D01–D06 do not depend on the divergence rule)."""
#: What a Java durable call throws when its hit has a null result (upstream ``Optional.of(null)``, spec §9.4).
JAVA_NULL_HIT = "java.lang.NullPointerException"


@dataclass(frozen=True)
class CaseResult:
    """One case under one rule: predicted vs expected outcomes in the spec's notation, and pass/fail.

    ``passed`` compares with the case's expectation for the rule when it has one
    (``expected_given``); otherwise it is the safety criterion alone: no stale reuse.
    ``stale`` lists predicted items that reuse or resume a record the case marks stale.
    ``reruns`` counts bodies that run again, ``evictions`` the cache entries removed (rebuild and
    replay), ``calls`` durable calls executed again by function id.

    For example::

        result = ai.cases.run_case(ai.cases.load_cases("cases/G01.toml")[0], "naive")
        result.passed, result.predicted, result.stale   # as the case expects: naive reuses a stale record
    """

    case_id: str
    name: str
    category: str
    rule: str
    passed: bool
    expected_given: bool
    expected: tuple[str, ...]
    predicted: tuple[str, ...]
    mismatches: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    crashed: bool = False
    reruns: int = 0
    evictions: int = 0
    calls: Mapping[str, int] = field(default_factory=dict)
    prediction: Prediction | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json`` output."""
        return {"case": self.case_id, "name": self.name, "category": self.category, "rule": self.rule,
                "passed": self.passed, "expected_given": self.expected_given, "expected": list(self.expected),
                "predicted": list(self.predicted), "mismatches": list(self.mismatches), "stale": list(self.stale),
                "crashed": self.crashed, "reruns": self.reruns, "evictions": self.evictions,
                "calls": dict(self.calls)}


def run_case(case: Case, rule: RuleLike = "fixed", *, built: BuiltCase | None = None) -> CaseResult:
    """Build ``case`` into a real log, predict its recovery under ``rule`` and check the expectation.

    ``rule`` is a rule name (its expectation is looked up by that name) or a
    :class:`~agent_inspect.rules.DivergenceRule` (looked up by its ``name``). Call-level cases
    (``[call_case]``) ignore the rule and run the position-matched durable-call replay (§9.4).

    For example::

        ai.cases.run_case(ai.cases.load_cases("cases/G01.toml")[0], "original").passed
    """
    if case.call_case is not None and not case.log:
        return run_call_case(case)

    rule_obj = resolve_rule(rule)
    # a built-in by the name given (original:kafka-k1 too); a user's rule by its name, as every verb names it
    rule_name = rule if isinstance(rule, str) and type(rule_obj).__module__.startswith("agent_inspect.") \
        else rule_obj.name
    if built is None:
        built = build_case(case)
    ids = built.id_factory()
    prediction = predict(built.log, plan=built.plan, agent=built.agent, rule=rule_obj, markers=built.markers, new_id=ids,
                         runtime=case.setup.runtime, kafka_pending=case.setup.kafka_pending)
    labels = {**built.id_labels, **ids.labels}
    lines = {ln.n: ln for ln in case.log}
    rows = []
    for r in prediction.tasks.itertuples(index=False):
        label = labels.get(r.event_id) if r.event_id else None
        stale = False
        if r.outcome in ("REUSE", "RESUME") and pd.notna(r.entry_pos):
            line_no = built.line_of_pos.get(int(r.entry_pos))
            ln = lines.get(line_no) if line_no is not None else None
            stale = bool(ln is not None and ln.stale is not None and ln.stale.applies(r.key, label))
        rows.append((r, label, stale))
    names = {bk: labels_[0] for bk, labels_ in built.key_of_business_key.items()}
    predicted = tuple(_notation(r, label, stale, names) for r, label, stale in rows)
    stale_items = tuple(p for p, (_, _, s) in zip(predicted, rows) if s)
    expectation = case.expect.get(rule_name)
    mismatches: list[str] = []
    if expectation is not None:
        if expectation.crash != prediction.crashed:
            mismatches.append("expected the job to crash (✗crash)" if expectation.crash
                              else "the job crashes (a lookup FAILs), which the case does not expect")
        exp_run = [i for i in expectation.items if i.outcome != NOT_DISPATCHED]
        exp_nd = [i for i in expectation.items if i.outcome == NOT_DISPATCHED]
        got_run = [x for x in rows if x[0].outcome != NOT_DISPATCHED]
        got_nd = [x for x in rows if x[0].outcome == NOT_DISPATCHED]
        for n, (exp, got) in enumerate(zip(exp_run, got_run), start=1):
            why = _mismatch(exp, *got, built)
            if why:
                mismatches.append(f"task {n}: expected {exp}, predicted {_notation(*got, names)} ({why})")
        if len(exp_run) != len(got_run):
            extra = [str(i) for i in exp_run[len(got_run):]] or [_notation(*x, names) for x in got_run[len(exp_run):]]
            mismatches.append(f"expected {len(exp_run)} dispatched tasks, predicted {len(got_run)}: "
                              f"{'missing' if len(exp_run) > len(got_run) else 'extra'} {' '.join(extra)}")
        for exp in exp_nd:
            if not any(not _mismatch(exp, *x, built) for x in got_nd):
                mismatches.append(f"expected {exp} (a cached record no task looks up); not predicted")
    # a case counts the sub-agent calls sent again too, by their ids (S01, S05): durable and sub-agent calls
    sent = prediction.ledger[prediction.ledger["kind"].isin(("call", "subagent"))]
    calls = {str(k): int(v) for k, v in sent.groupby("name", observed=True)["count"].sum().items()}
    for fn, count in case.expect_calls.get(rule_name, {}).items():
        executed = sum(calls.values()) if fn == "*" else calls.get(fn, 0)
        if executed != count:
            mismatches.append(f"expected {plural(count, 'executed call')} of {fn}, predicted {executed}")
    for fid, want in case.expect_results.get(rule_name, {}).items():
        got_ids = prediction.subagent_results.get(fid)
        got_r = got_ids if got_ids is None or isinstance(got_ids, str) else \
            tuple(labels.get(i, i) for i in got_ids)
        if got_r != want:
            mismatches.append(f"sub-agent call {fid}: expected the caller to get {_results_text(want)}, "
                              f"predicted {_results_text(got_r)}")
    passed = not mismatches if expectation is not None else not stale_items
    evictions = sum(len(e.removed) for e in prediction.events if e.op not in ("delete", "supersede"))
    return CaseResult(case_id=case.id, name=case.name, category=case.category, rule=rule_name, passed=passed,
                      expected_given=expectation is not None,
                      expected=tuple(str(i) for i in expectation.items) + (("✗crash",) if expectation.crash else ())
                      if expectation is not None else (),
                      predicted=predicted + (("✗crash",) if prediction.crashed else ()),
                      mismatches=tuple(mismatches), stale=stale_items, crashed=prediction.crashed,
                      reruns=prediction.reruns(), evictions=evictions, calls=calls, prediction=prediction)


def _results_text(value: Any) -> str:
    if value is None:
        return "no call"
    if isinstance(value, str):
        return "its journal (a terminal slot replayed)"
    return "[" + ", ".join(f"#{v}" for v in value) + "]"


def _notation(row: Any, label: str | None, stale: bool, names: dict[str, str]) -> str:
    """The predicted item in the expectation notation (it parses back, so it can be pasted into a case)."""
    ops = "".join(f"[{_op_text(e, names)}]" for e in row.cache_ops
                  if e.op in ("evict", "invalidate", "cross-key", "remove"))
    text = f"{row.key}:{row.input}.{row.action}" + (f"#{label}" if label else "") + f"={row.outcome}{ops}"
    return text + (" ✗stale" if stale else "")


def _op_text(event: Any, names: dict[str, str]) -> str:
    key = names.get(event.business_key, event.business_key)
    if event.op == "cross-key":
        return f"evict *>{event.seq}"
    if event.op == "remove":
        # one-by-one removals (identity mismatch, snapshot Fluss scan); "evict k>s" in expectations matches them
        return f"remove {len(event.removed)} of {key}@{event.seq}"
    return f"{event.op} {key}{'>=' if event.op == 'invalidate' else '>'}{event.seq}"


def _mismatch(exp: ExpectedItem, row: Any, label: str | None, stale: bool, built: Any) -> str:
    if exp.action != row.action:
        return "different action"
    if exp.outcome != row.outcome:
        return "different outcome"
    if exp.key is not None and exp.key != row.key:
        return "different key"
    if exp.input is not None and exp.input != row.input:
        return "different input"
    if exp.event_id is not None and exp.event_id != label:
        return "different event id"
    if exp.stale != stale:
        return "stale reuse not expected" if stale else "expected a stale reuse"
    for op in exp.ops:
        if not any(_op_matches(op, e, built) for e in row.cache_ops):
            return f"no {op.kind} of {op.key or 'every key'} at seq {op.bound}"
    return ""


def _op_matches(op: CacheOp, event: CacheEvent, built: BuiltCase) -> bool:
    if op.key is None:
        return event.op == "cross-key" and event.seq == op.bound
    # the snapshot Fluss flavour evicts by removing the parsable entries it scanned
    kinds = ("evict", "remove") if op.kind == "evict" else (op.kind,)
    if event.op not in kinds or event.seq != op.bound:
        return False
    bk = event.business_key
    if bk is None:
        return False    # op.key is set here, and an event without a business key names no key
    return op.key in built.key_of_business_key.get(bk, (bk,))


# -- call-level cases ------------------------------------------------------------------------------

def run_call_case(case: Case) -> CaseResult:
    """Run a durable-call case (§9.4) at call level: recorded journal, body on resume, expectations."""
    cc = case.call_case
    if cc is None:
        raise CaseFileError(f"{case.id}: not a call case (no [call_case])")
    # through a real record, so legacy shapes (V1: no status) go through the codec as production data does
    state = codec.ActionState(task_event=codec.Event.new("_input_event", {"input": case.id}, id=None),
                              call_results=tuple(call_result(c, where=case.id) for c in cc.record))
    recorded = codec.decode_action_state(codec.encode_action_state(state, value_format=cc.value_format)).call_results
    decisions: list[CallEvent] = []
    journal = CallJournal([CallSlot.from_record(r) for r in recorded], report=decisions.append, deliver=False)
    mismatches: list[str] = []
    predicted: list[str] = []
    outcomes = []
    for n, (step, exp) in enumerate(zip(cc.body, cc.expect), start=1):
        slot = journal.results[journal.index] if journal.index < len(journal.results) else None
        payloads = (_b64(slot.result_payload), _b64(slot.exception_payload)) if slot is not None else (None, None)
        start = len(decisions)
        # a call case's body goes on past every failure (each step is the next call it makes): the failure is the
        # journal's decision, read from `decisions`
        with contextlib.suppress(Exception):
            journal.call(step.function_id, step.args_digest, _declared(step.raises),
                         reconciler=_declared(step.reconciler == "raises" and "reconciler") if step.reconciler else None)
        out = _CallOutcome.of(decisions[start:])
        outcomes.append(out)
        # Java delivers a hit through Optional.of(result): a null result throws instead (spec §9.4)
        throws = JAVA_NULL_HIT if cc.producer == "java" and out.outcome == "hit" and payloads[0] is None else None
        predicted.append(f"{step.function_id}@{out.index}={out.outcome}" + (f"→{throws}" if throws else ""))
        if out.outcome != exp.get("outcome") or ("index" in exp and out.index != exp["index"]):
            mismatches.append(f"call {n} ({step.function_id}): expected {exp.get('outcome')}@{exp.get('index')}, "
                              f"got {out.outcome}@{out.index}")
            continue
        if "throws" in exp and (throws is None or str(exp["throws"]) not in throws):
            mismatches.append(f"call {n} ({step.function_id}): expected the hit to throw {exp['throws']}, "
                              f"but it {'throws ' + throws if throws else 'returns the recorded result'}")
        elif throws and "throws" not in exp:
            mismatches.append(f"call {n} ({step.function_id}): this Java hit on a null result throws {throws} "
                              f"(Optional.of(null), spec §9.4); say throws = \"{throws}\"")
        if "returns" in exp and payloads[0] != encode_payload(exp["returns"], where=f"{case.id} expect"):
            mismatches.append(f"call {n} ({step.function_id}): the replayed result is not the expected payload")
        if "raises" in exp and not _raises(payloads[1], str(exp["raises"])):
            mismatches.append(f"call {n} ({step.function_id}): the recorded exception is not {exp['raises']}")
        if exp.get("null_payloads") and payloads != (None, None):
            mismatches.append(f"call {n} ({step.function_id}): expected a hit with null payloads")
    for text in cc.warnings:
        if not any(text in w for w in journal.warnings):
            mismatches.append(f"expected the warning {text!r}")
    if cc.truncated_to is not None and not any(o.truncated_to == cc.truncated_to for o in outcomes):
        mismatches.append(f"expected the journal to be truncated to {cc.truncated_to}")
    if cc.final_record is not None:
        got = [(s.function_id, s.args_digest, s.status) for s in journal.results]
        want = list(cc.final_record)
        ok = len(got) == len(want) and all(
            g[0] == w.get("fn") and g[2] == w.get("status") and ("args" not in w or g[1] == w["args"])
            for g, w in zip(got, want))
        if not ok:
            mismatches.append(f"final journal {got} differs from the expected {want}")
    if cc.effective_statuses is not None:
        eff = tuple(r.effective_status for r in recorded)
        if eff != tuple(cc.effective_statuses):
            mismatches.append(f"effective statuses {eff}, expected {tuple(cc.effective_statuses)}")
    executed: dict[str, int] = {}
    for o in outcomes:
        if o.outcome == "execute":
            executed[o.function_id] = executed.get(o.function_id, 0) + 1
    return CaseResult(case_id=case.id, name=case.name, category=case.category, rule=CALL_RULE,
                      passed=not mismatches, expected_given=True,
                      expected=tuple(f"{s.function_id}@{e.get('index')}={e.get('outcome')}"
                                     + (f"→{e['throws']}" if "throws" in e else "")
                                     for s, e in zip(cc.body, cc.expect)),
                      predicted=tuple(predicted), mismatches=tuple(mismatches),
                      reruns=0, evictions=0, calls=executed)


@dataclass(frozen=True)
class _CallOutcome:
    """One call's decision in a case's words: hit, reraise (a recorded failure), execute, reconcile."""

    function_id: str
    outcome: str
    index: int
    truncated_to: int | None

    @classmethod
    def of(cls, decisions: Sequence[CallEvent]) -> _CallOutcome:
        last = decisions[-1]
        cut = next((d.index for d in decisions if d.outcome in ("mismatch", "truncate")), None)
        outcome = {"hit-failed": "reraise", "pending-hit": "hit"}.get(str(last.outcome), str(last.outcome))
        return cls(last.function_id, outcome, last.index, cut)


def _b64(payload: bytes | None) -> str | None:
    return None if payload is None else base64.b64encode(payload).decode("ascii")


def _declared(raises: Any) -> Callable[[], None]:
    def run() -> None:
        if raises:
            raise RuntimeError(f"declared failure: {raises}")
    return run


def _raises(payload: str | None, name: str) -> bool:
    """Whether an exception payload names ``name``, read without unpickling (payloads are untrusted)."""
    if payload is None:
        return False
    data = base64.b64decode(payload)
    return name.encode() in data


def expectation_rules(cases: Sequence[Case]) -> list[str]:
    """Every rule any of ``cases`` has expectations for, in first-seen order."""
    return list(dict.fromkeys(r for c in cases for r in c.expect))
