"""``agent-inspect explain SOURCE --key K --seq S --action NAME [recovery settings] [--json]``: why did this run?"""

from __future__ import annotations

import argparse
import json
from typing import Any

from agent_inspect._errors import InspectError
from agent_inspect._glossary import plural
from agent_inspect.cli._settings import add_recovery_options, recovery_from_args
from agent_inspect.cli._source import add_source, load_log

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "explain", help="why a task is reused, resumed or rerun: the chain of store decisions behind it",
        description="Predict the recovery of SOURCE (under --rule; default the rule the runtime ships) and print the chain of store decisions behind "
                    "one task's outcome: the lookup, the record the rebuild did or did not load, and the eviction, "
                    "invalidation, tombstone, window or miss that caused a rerun; with what it cost downstream.")
    add_source(parser, "a source or dump file (selectors @key=, @markers=, @runtime= allowed)")
    parser.add_argument("--key", required=True, help="business key (or the key label of a case)")
    parser.add_argument("--seq", required=True, type=int, help="the round's seqNum")
    parser.add_argument("--action", required=True, help="action name (or action UUID)")
    parser.add_argument("--event", help="narrow to an event id, event type or replay input label")
    add_recovery_options(parser)
    parser.add_argument("--also", action="append", default=[], metavar="RULE",
                        help="also report this task's outcome under RULE (repeatable)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--trace", help="the recovered job's Trace Log: adds the task's LLM tokens (and cost with "
                                        "--price), predicted and observed")
    from agent_inspect.cli._prices import add_token_args

    add_token_args(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from agent_inspect.diffing import explain, parse_selector

    sel = parse_selector(args.source)
    if sel.markers:
        if args.markers is not None or args.checkpoint is not None:
            raise InspectError(f"the markers twice: @markers={sel.markers} and --"
                               f"{'markers' if args.markers is not None else 'checkpoint'}; give one")
        args.markers = sel.markers     # read by the one --markers reader, with its errors
    log = load_log(args, sel.source)
    if sel.key is not None:
        log = log.for_key(sel.key)
    if sel.rule is not None and args.rule is None:
        args.rule = sel.rule
    if sel.runtime is not None and args.runtime is None:
        args.runtime = sel.runtime
    recovery = recovery_from_args(args, log)
    why = explain(log, args.key, args.seq, args.action, event=args.event, recovery=recovery, also=args.also)
    tokens = _task_tokens(args, log, recovery, why) if args.trace else None
    if args.json:
        print(json.dumps({**why.to_dict(), **({"tokens": tokens} if args.trace else {})}, ensure_ascii=False,
                         default=str))
    else:
        print(why.story())
        if args.trace:
            print(_tokens_line(tokens))
    return 0


def _task_tokens(args: argparse.Namespace, log: Any, recovery: Any, why: Any) -> dict[str, Any] | None:
    """The task's row of the token ledger of the restore the trace shows, under the explained rule."""
    from agent_inspect.cli._markers_args import restore_of
    from agent_inspect.cli._prices import with_tokens
    from agent_inspect.cli._settings import markers_text
    from agent_inspect.trace import verify

    restore = restore_of(markers_text(args))
    v = verify(log, args.trace, recovery=recovery, restore=restore)
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
            f"{plural(row.get('llm_calls_predicted') or 0, 'call')}; the trace shows {side('observed')}")
