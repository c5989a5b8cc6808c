"""``agent-inspect verify SOURCE --trace PATH [recovery settings] [--json]``.

Checks the prediction of a recovery against the Trace Log of the recovered job. Exit code 0 when every
task agrees, 1 when any task disagrees (a release gate for a new rule), 3 when nothing disagrees but the
trace cannot decide some task (agent model, invisible reuse, truncated trace, a join below
``--confidence``; ``--strict`` makes that 1), 2 on bad usage or unreadable input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import pandas as pd

from agent_inspect._errors import InspectError
from agent_inspect._glossary import plural
from agent_inspect.cli._settings import add_recovery_options, markers_text, recovery_from_args
from agent_inspect.cli._source import add_source, load_log

__all__ = ["register"]


def register(subparsers: Any) -> None:
    from agent_inspect.cli._prices import add_token_args

    parser = subparsers.add_parser(
        "verify", help="check a recovery's prediction against the job's Trace Log (exit 0 agree, 1 disagree, "
                       "3 undetermined)",
        description="Predict the recovery under a rule and compare every task with what the Trace Log shows the "
                    "job did; explain each disagreement (wrong rule or runtime, markers, invisible reuse, "
                    "truncated or missing trace).")
    add_source(parser)
    parser.add_argument("--trace", required=True, help="a trace file, a directory of trace files, or a glob")
    add_recovery_options(parser)   # a sample markers file (@FILE) also gives the restored seqNums and in-flight tasks
    from agent_inspect.trace import CONFIDENCES

    parser.add_argument("--confidence", default="low", choices=CONFIDENCES,
                        help="the weakest join between a task and its traced execution that counts (default: low); "
                             "a task joined more weakly is undetermined")
    parser.add_argument("--strict", action="store_true",
                        help="fail (exit 1) when the trace cannot decide a task, instead of exit 3")
    parser.add_argument("--job", help="the job to check when the trace mixes several")
    parser.add_argument("--infer", action="store_true", help="rank every built-in rule and store flavour, and the inferred markers, by agreement")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    add_token_args(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from agent_inspect.cli._markers_args import restore_of
    from agent_inspect.cli._prices import prices_of, with_tokens
    from agent_inspect.cli._trace import load_trace_records
    from agent_inspect.trace import verify

    prices_of(args)                    # bad prices fail before the slow part
    log = load_log(args)
    trace = load_trace_records(args.trace)
    try:
        result = verify(log, trace, recovery=recovery_from_args(args, log), restore=restore_of(markers_text(args)),
                        job=args.job, infer=args.infer, confidence=args.confidence)
    except (ValueError, KeyError) as exc:
        raise InspectError(f"cannot verify: {exc}") from None
    result = with_tokens(result, args, restore_of(markers_text(args)))
    if args.json:
        json.dump(result.to_dict(), sys.stdout)
        sys.stdout.write("\n")
    else:
        print(f"{result.verdict.value.upper()}: {result.summary_text()}")
        print(f"tokens: {result.tokens.headline()}")
        for note in (*result.notes, *result.tokens.notes):
            print(f"note: {note}")
        shown = result.mismatches
        if result.other_job:      # one line per task of a key the trace never names is a wall saying the same
            unnamed = shown["cause"] == "trace-missing"
            shown = shown[~unnamed]
        for row in shown.itertuples(index=False):
            # a traced execution the prediction lacks has no predicted outcome and maybe no round
            seq = f" seq {row.seq}" if not pd.isna(row.seq) else ""
            predicted = row.predicted if isinstance(row.predicted, str) else "nothing"
            print(f"  {row.verdict} {row.key}{seq} {row.action}: predicted {predicted}, observed "
                  f"{row.observed} [{row.cause}] {row.explanation}")
        if result.other_job and unnamed.any():
            n = int(unnamed.sum())
            print(f"  {plural(n, 'task')} of keys the trace never names {'is' if n == 1 else 'are'} not listed (--json lists them)")
        if result.ranking is not None:
            print("rules, store flavours and markers by agreement:" if args.infer else "rules and store flavours by agreement:")
            ranking = result.ranking
            # at least 5, and every configuration tied with the best: the verdict names them all
            shown = max(5, int((ranking["agree"] == ranking["agree"].max()).sum())) if len(ranking) else 0
            for r in ranking.head(shown).itertuples(index=False):
                whose = "" if getattr(r, "markers", "given") == "given" else \
                    f" with markers from the {r.markers} {json.dumps(r.marker_values)}"
                unsure = f", {r.undetermined:,} undetermined" if r.undetermined else ""
                print(f"  {r.name}{whose}: {r.agree:,} of {plural(r.tasks, 'task')} {'agrees' if r.agree == 1 else 'agree'}, "
                      f"{r.disagree:,} {'disagrees' if r.disagree == 1 else 'disagree'}{unsure}")
            if len(ranking) > shown:
                print(f"  … and {len(ranking) - shown:,} more (--json lists them)")
    return exit_code(result.verdict, strict=args.strict)


def exit_code(verdict: str, *, strict: bool = False) -> int:
    """0 agree, 1 disagree, 3 undetermined (1 with ``strict``)."""
    if verdict == "agree":
        return 0
    if verdict == "undetermined" and not strict:
        return 3
    return 1
