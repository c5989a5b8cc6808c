"""``agent-inspect otel SOURCE [--trace PATH] [--markers …] (--endpoint URL | -o spans.json)``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["register"]


def register(subparsers: Any) -> None:
    from agent_inspect.cli._prices import add_token_args

    parser = subparsers.add_parser(
        "otel", help="send a recovery to an OpenTelemetry backend (OTLP/HTTP) or write it as OTLP JSON",
        description="Predict the recovery of SOURCE (checked against --trace when given) and export it as "
                    "OpenTelemetry spans named as upstream's converter names them: invoke_agent per input run, "
                    "action per execution (prediction, verdict, cause, tokens under agent_inspect.*; status "
                    "error on a disagreement; the store decisions behind it as events), chat / execute_tool / "
                    "parse per durable call.")
    parser.add_argument("source", help="kafka://host:port/topic, fluss://host:port/db.table, or a dump file")
    parser.add_argument("--trace", help="the recovered job's Trace Log (file, directory or glob)")
    parser.add_argument("--markers", help='the restore\'s markers as JSON ([{"0": 120}]) or @FILE')
    parser.add_argument("--rule", default="original", help="the rule the job ran (default: original)")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--endpoint", help="OTLP/HTTP endpoint, e.g. http://127.0.0.1:6006/v1/traces")
    where.add_argument("-o", "--output", type=Path, help="write one OTLP JSON file instead")
    parser.add_argument("--project", help="the Phoenix project (resource attribute openinference.project.name)")
    parser.add_argument("--no-explain", action="store_true", help="leave out the store decisions (span events)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    add_token_args(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from agent_inspect.cli._prices import with_tokens
    from agent_inspect.cli._report import parse_markers, restore_of
    from agent_inspect.log import load
    from agent_inspect.otel import to_otel

    markers = parse_markers(args.markers)
    log = load(args.source)
    obj: Any = log
    if args.trace:
        from agent_inspect.trace import verify

        obj = with_tokens(verify(log, args.trace, rule=args.rule, markers=markers, restore=restore_of(args.markers)),
                          args, restore_of(args.markers))
    done = to_otel(obj, endpoint=args.endpoint, path=args.output, markers=markers, rule=args.rule,
                   project=args.project, explain_chain=not args.no_explain)
    if args.json:
        json.dump({"spans": done.spans, "traces": done.traces, "errors": done.errors, "endpoint": done.endpoint,
                   "path": done.path}, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(done)
    return 0
