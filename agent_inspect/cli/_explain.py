"""``agent-inspect explain SOURCE --key K --seq S --action NAME [recovery settings] [--json]``: why did this run?"""

from __future__ import annotations

import argparse
import json
from typing import Any

from agent_inspect.cli._settings import add_recovery_options, recovery_from_args

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "explain", help="why a task is reused, resumed or rerun: the chain of store decisions behind it",
        description="Predict the recovery of SOURCE (under --rule; default the rule the runtime ships) and print the chain of store decisions behind "
                    "one task's outcome: the lookup, the record the rebuild did or did not load, and the eviction, "
                    "invalidation, tombstone, window or miss that caused a rerun; with what it cost downstream.")
    parser.add_argument("source", help="a source or dump file (selectors @key=, @markers=, @runtime= allowed)")
    parser.add_argument("--key", required=True, help="business key (or the key label of a case)")
    parser.add_argument("--seq", required=True, type=int, help="the round's seqNum")
    parser.add_argument("--action", required=True, help="action name (or action UUID)")
    parser.add_argument("--event", help="narrow to an event id, event type or replay input label")
    add_recovery_options(parser)
    parser.add_argument("--also", action="append", default=[], metavar="RULE",
                        help="also report this task's outcome under RULE (repeatable)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from agent_inspect.diffing import explain, parse_selector
    from agent_inspect.log import load

    sel = parse_selector(args.source)
    if args.markers is None and sel.markers:
        args.markers = f"@{sel.markers}"
    log = load(sel.source)
    if sel.key is not None:
        log = log.for_key(sel.key)
    if sel.rule is not None and args.rule is None:
        args.rule = sel.rule
    if sel.runtime is not None and args.runtime is None:
        args.runtime = sel.runtime
    why = explain(log, args.key, args.seq, args.action, event=args.event, recovery=recovery_from_args(args, log),
                  also=args.also)
    if args.json:
        print(json.dumps(why.to_dict(), ensure_ascii=False, default=str))
    else:
        print(why.story())
    return 0
