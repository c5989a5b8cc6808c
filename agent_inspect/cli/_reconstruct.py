"""``agent-inspect reconstruct SOURCE [recovery settings] [--json]``: what a recovery does and why."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from agent_inspect._errors import InspectError
from agent_inspect._glossary import count_words
from agent_inspect._jsonable import jsonable, jsonable_rows
from agent_inspect.cli._settings import add_recovery_options, recovery_from_args
from agent_inspect.cli._source import add_source, load_log
from agent_inspect.store import Outcome

if TYPE_CHECKING:
    from agent_inspect.recovery import Recovery

__all__ = ["register"]

#: a ledger kind as the text says it where its name is not a word
_KIND_WORDS = {"subagent": "sub-agent"}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "reconstruct", help="reconstruct a recovery under a divergence rule: divergences, evicted records, ledger",
        description="Rebuild the action-state cache from the recovery markers under a divergence rule, replay the "
                    "logged tasks, and report the divergences, the evicted and invalidated records and the "
                    "re-execution ledger.")
    add_source(parser)
    add_recovery_options(parser)
    parser.add_argument("--no-ledger", action="store_true", help="skip the static prediction (ledger)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.set_defaults(func=_run)


def _records(frame: Any) -> list[dict[str, Any]]:
    cols = ["partition", "offset", "business_key", "seq", "state_key", "completed", "divergence_id", "reason",
            "status_rule_note"]
    out = []
    for pos, row in zip(frame.index.tolist(), frame[cols].itertuples(index=False, name=None)):
        out.append({"pos": pos, **{c: jsonable(v) for c, v in zip(cols, row)}})
    return out


def analyse(log: Any, *, recovery: Recovery, ledger: bool = True) -> dict[str, Any]:
    """The report the command prints, as plain JSON-able data."""
    from agent_inspect.recovery import reconstruct
    result = reconstruct(log, recovery=recovery)
    recs = result.records
    evicted = recs[recs["status"] == "evicted"]
    invalidated = recs[recs["status"] == "invalidated"]
    divergences = jsonable_rows(result.divergences)
    report: dict[str, Any] = {
        "rule": result.rule.name,
        "what_if": recovery.what_if,
        "rule_label": recovery.rule_label,
        "settings": recovery.as_dict(),
        "runtime": result.runtime.as_dict() if result.runtime is not None else None,
        "markers": jsonable(result.markers),
        "markers_label": recovery.markers_label,
        "plan": recovery.provenance.get("plan"),
        "records": len(recs),
        "status": result.summary()["status"],
        "outcomes": None,          # tasks per outcome: the prediction's (none computed without it)
        "divergences": divergences,
        "evicted": _records(evicted),
        "invalidated": _records(invalidated),
        "totals": {"evicted": len(evicted), "invalidated": len(invalidated),
                   "cache_events": len(result.evictions), "divergences": len(divergences)},
        "ledger": None,
        "warnings": list(result.warnings),   # the prediction's, when it runs, say these too
    }
    if ledger:
        report.update(_prediction(log, recovery))
    return report


def _prediction(log: Any, recovery: Recovery) -> dict[str, Any]:
    """The prediction's ledger, or why there is none, its warnings (the reconstruction's and the replay's), and its
    tasks per outcome: the tasks the restore runs, also those a fresh start (``--markers '[]'``) replays, which the
    rebuild window does not hold."""
    from agent_inspect.recovery import predict

    if not len(log.records):        # nothing to replay: no tasks, nothing runs again (predict asks for inputs)
        return {"ledger": [], "ledger_error": None, "outcomes": {str(o): 0 for o in Outcome}}
    try:
        prediction = predict(log, recovery=recovery)
    except InspectError as exc:
        return {"ledger": None, "ledger_error": str(exc)}   # outcomes: not computed
    counts = prediction.tasks["outcome"].astype(str).value_counts()
    return {"ledger": jsonable_rows(prediction.ledger_totals()), "ledger_error": None,
            "warnings": list(prediction.warnings), "outcomes": {str(o): int(counts.get(str(o), 0)) for o in Outcome}}


def _run(args: argparse.Namespace) -> int:
    log = load_log(args)
    report = analyse(log, recovery=recovery_from_args(args, log), ledger=not args.no_ledger)
    if args.json:
        json.dump(report, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    rt = report["runtime"]
    print(f"runtime {rt['name']} ({'inferred' if rt['inferred'] else 'given'}: {rt['evidence']})")
    print(f"markers: {report['markers_label']}")
    if report["plan"]:
        print(f"replayed inputs: {report['plan']}")
    print(", ".join([f"rule {report['rule_label']}: {report['records']:,} {count_words(report['records'], 'record')}",
                     *(f"{k} {v:,}" for k, v in report["status"].items() if v)]))
    for d in report["divergences"]:
        where = f" {d['business_key']}@{d['seq']}" if d["business_key"] else ""   # a record without a key has no round
        print(f"  divergence {d['id']} [{d['kind']}]{where}: {d['explanation']}")
    for warning in report.get("warnings", ()):
        print(f"warning: {warning}")
    t = report["totals"]
    print(f"evicted {t['evicted']:,}, invalidated {t['invalidated']:,}, cache events {t['cache_events']:,}")
    outcomes = {str(o): (report["outcomes"] or {}).get(str(o), 0) for o in Outcome}
    if report["outcomes"] is None:   # the records' own outcomes miss the tasks a fresh start replays
        print("tasks: not computed (" + ("the prediction failed" if report.get("ledger_error") else
                                         "--no-ledger skips the prediction that counts them") + ")")
    else:
        print(f"tasks: {sum(outcomes.values()):,}" + (" (" + ", ".join(f"{o} {n:,}" for o, n in outcomes.items() if n)
                                                    + ")" if any(outcomes.values()) else ""))
    if outcomes[Outcome.FAIL]:
        print("the restore fails at a lookup (FAIL): the job restarts and fails again; the ledger counts what "
              "runs before that")
    if report["ledger"]:
        print("re-execution ledger:")
        for (kind, label), count in _ledger_lines(report["ledger"]).items():
            print(f"  {kind} {label}: {count:,}")
    elif report.get("ledger_error"):
        print(f"ledger unavailable: {report['ledger_error']}")
    elif report["ledger"] is not None:
        print("re-execution ledger: nothing runs again")
    return 0


def _ledger_lines(ledger: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    """The ledger summed by the name a reader sees (its label: one line for a sub-agent's calls, not one per
    durable-call id)."""
    lines: dict[tuple[str, str], int] = {}
    for row in ledger:
        kind = str(row.get("kind"))
        label = (_KIND_WORDS.get(kind, kind), str(row.get("label") or row.get("name")))
        lines[label] = lines.get(label, 0) + int(row.get("count") or 0)
    return lines
