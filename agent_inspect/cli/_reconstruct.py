"""``agent-inspect reconstruct SOURCE --rule R [--markers JSON|--checkpoint PATH] [--json]``: what a recovery does and why."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from agent_inspect._errors import InspectError
from agent_inspect._jsonable import jsonable, jsonable_rows
from agent_inspect.cli._markers_args import add_markers_options, markers_from_args

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "reconstruct", help="reconstruct a recovery under a divergence rule: divergences, evicted records, ledger",
        description="Rebuild the action-state cache from the recovery markers under a divergence rule, replay the "
                    "logged tasks, and report the divergences, the evicted and invalidated records and the "
                    "re-execution ledger.")
    parser.add_argument("source", help="kafka://host:port/topic, fluss://host:port/db.table, or a dump file")
    parser.add_argument("--rule", default=None,
                        help="original, naive, fixed, lookup-only, branch-aware, fixed+round-regression, "
                             "or original:<kafka-k1|fluss-k1|segment> (default: the rule the runtime ships, "
                             "original; fixed is a what-if)")
    parser.add_argument("--runtime", default="auto", choices=["auto", "0.3", "0.4", "main"],
                        help="the upstream runtime that wrote the log (default auto: inferred from the records)")
    add_markers_options(parser)
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


def analyse(log: Any, *, rule: str | None, markers: Any, ledger: bool = True,
            runtime: str = "auto") -> dict[str, Any]:
    """The report the command prints, as plain JSON-able data."""
    from agent_inspect.recovery import reconstruct

    result = reconstruct(log, rule=rule, markers=markers, runtime=runtime)
    recs = result.records
    evicted = recs[recs["status"] == "evicted"]
    invalidated = recs[recs["status"] == "invalidated"]
    divergences = jsonable_rows(result.divergences)
    report: dict[str, Any] = {
        "rule": result.rule.name,
        "runtime": result.runtime.as_dict() if result.runtime is not None else None,
        "markers": jsonable(result.markers),
        "records": len(recs),
        "status": result.summary()["status"],
        "outcomes": result.summary()["outcomes"],
        "divergences": divergences,
        "evicted": _records(evicted),
        "invalidated": _records(invalidated),
        "totals": {"evicted": len(evicted), "invalidated": len(invalidated),
                   "cache_events": len(result.evictions), "divergences": len(divergences)},
        "ledger": None,
    }
    if ledger:
        report["ledger"], report["ledger_error"] = _ledger(log, result.rule.name if rule is None else rule, markers,
                                                           runtime)
    return report


def _ledger(log: Any, rule: str, markers: Any,
            runtime: str = "auto") -> tuple[list[dict[str, Any]] | None, str | None]:
    try:
        from agent_inspect.recovery import predict
    except ImportError:
        return None, "the static prediction is not available in this build"
    try:
        prediction = predict(log, rule=rule, markers=markers, runtime=runtime)
    except InspectError as exc:
        return None, str(exc)
    totals = prediction.ledger_totals()
    return jsonable_rows(totals), None


def _run(args: argparse.Namespace) -> int:
    from agent_inspect.log import load

    markers = markers_from_args(args)
    log = load(args.source)
    report = analyse(log, rule=args.rule, markers=markers, ledger=not args.no_ledger, runtime=args.runtime)
    if args.json:
        json.dump(report, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    rt = report["runtime"]
    print(f"runtime {rt['name']} ({'inferred' if rt['inferred'] else 'given'}: {rt['evidence']})")
    print(f"rule {report['rule']}: {report['records']} records, "
          + ", ".join(f"{k} {v}" for k, v in report["status"].items() if v))
    for d in report["divergences"]:
        print(f"  divergence {d['id']} [{d['kind']}] {d['business_key']}@{d['seq']}: {d['explanation']}")
    t = report["totals"]
    print(f"evicted {t['evicted']}, invalidated {t['invalidated']}, cache events {t['cache_events']}")
    if report["ledger"]:
        print("re-execution ledger:")
        for row in report["ledger"]:
            print(f"  {row.get('kind')} {row.get('name')}: {row.get('count')}")
    elif report.get("ledger_error"):
        print(f"ledger unavailable: {report['ledger_error']}")
    return 0
