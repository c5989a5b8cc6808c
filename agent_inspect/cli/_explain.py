"""``agent-inspect explain SOURCE --key K --seq S --action NAME [--rule R] [--json]``: why did this run?"""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "explain", help="why a task is reused, resumed or rerun: the chain of store decisions behind it",
        description="Predict the recovery of SOURCE under --rule and print the chain of store decisions behind "
                    "one task's outcome: the lookup, the record the rebuild did or did not load, and the eviction, "
                    "invalidation, tombstone, window or miss that caused a rerun; with what it cost downstream.")
    parser.add_argument("source", help="a source or dump file (selectors @key=, @markers=, @runtime= allowed)")
    parser.add_argument("--key", required=True, help="business key (or the key label of a case)")
    parser.add_argument("--seq", required=True, type=int, help="the round's seqNum")
    parser.add_argument("--action", required=True, help="action name (or action UUID)")
    parser.add_argument("--event", help="narrow to an event id, event type or replay input label")
    parser.add_argument("--rule", default=None, help="divergence rule (default: fixed, or the source's @rule)")
    parser.add_argument("--markers", help="recovery markers as JSON, or @FILE / FILE (e.g. a sample's "
                                          "<name>.markers.json); default: the whole loaded log")
    parser.add_argument("--also", action="append", default=[], metavar="RULE",
                        help="also report this task's outcome under RULE (repeatable)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--trace", help="the recovered job's Trace Log: adds the task's LLM tokens (and cost with "
                                        "--price), predicted and observed")
    from agent_inspect.cli._prices import add_token_args

    add_token_args(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from agent_inspect.cli._report import parse_markers
    from agent_inspect.diff import explain, parse_selector

    sel = parse_selector(args.source)
    text = args.markers or (f"@{sel.markers}" if sel.markers else None)
    if text and not text.lstrip().startswith(("@", "[", "{")):
        text = f"@{text}"              # a plain path is a markers file
    markers: Any = parse_markers(text)
    why = explain(args.source, args.key, args.seq, args.action, event=args.event, rule=args.rule,
                  markers=markers, also=args.also)
    tokens = _task_tokens(args, sel, markers, why) if args.trace else None
    if args.json:
        print(json.dumps({**why.to_dict(), **({"tokens": tokens} if args.trace else {})}, ensure_ascii=False,
                         default=str))
    else:
        print(why.story())
        if args.trace:
            print(_tokens_line(tokens))
    return 0


def _task_tokens(args: argparse.Namespace, sel: Any, markers: Any, why: Any) -> dict[str, Any] | None:
    """The task's row of the token ledger of the restore the trace shows, under the explained rule."""
    from agent_inspect.cli._prices import with_tokens
    from agent_inspect.cli._report import restore_of
    from agent_inspect.log import load
    from agent_inspect.trace import verify

    restore = restore_of(args.markers) if args.markers else None
    v = verify(load(sel.source), args.trace, rule=why.rule, markers=markers, restore=restore)
    row: dict[str, Any] | None = with_tokens(v, args, restore).tokens.for_task(why.key, why.seq, why.action)
    return row


def _tokens_line(row: dict[str, Any] | None) -> str:
    if row is None:
        return "tokens: the trace's restore has no such task"

    def side(name: str) -> str:
        i, o, c = row.get(f"input_tokens_{name}"), row.get(f"output_tokens_{name}"), row.get(f"cost_{name}")
        if i is None and o is None:
            return "unknown"
        return f"{(i or 0) + (o or 0)} ({i or 0} in, {o or 0} out)" + (f" ≈ ${c:,.4f}" if c is not None else "")

    return (f"tokens of this task's LLM calls run again in the restore the trace shows ({row.get('outcome')} "
            f"there): predicted {side('predicted')} in "
            f"{row.get('llm_calls_predicted')} call(s); the trace shows {side('observed')}")
