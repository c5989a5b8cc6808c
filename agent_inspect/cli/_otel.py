"""``agent-inspect otel SOURCE [--trace PATH] [--markers …] (--endpoint URL | -o spans.json)``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from agent_inspect.cli._settings import add_recovery_options, markers_text, recovery_from_args
from agent_inspect.cli._source import add_source, load_log

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
    add_source(parser)
    parser.add_argument("--trace", help="the recovered job's Trace Log (file, directory or glob)")
    add_recovery_options(parser)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--endpoint", help="OTLP/HTTP endpoint, e.g. http://127.0.0.1:6006/v1/traces")
    where.add_argument("-o", "--output", type=Path, help="write one OTLP JSON file instead")
    parser.add_argument("--project", help="the Phoenix project (resource attribute openinference.project.name)")
    parser.add_argument("--no-explain", action="store_true", help="leave out the store decisions (span events)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    add_token_args(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from agent_inspect.cli._inputs import refuse_overwriting_inputs
    from agent_inspect.cli._markers_args import restore_of
    from agent_inspect.cli._prices import with_tokens
    from agent_inspect.otel import to_otel
    from agent_inspect.sources import check_export

    if args.output is not None:
        refuse_overwriting_inputs(args.output, args)
    checked = check_export(endpoint=args.endpoint, path=args.output)     # before loading: a topic can take minutes
    log = load_log(args)
    recovery = recovery_from_args(args, log)
    obj: Any = log
    if args.trace:
        from agent_inspect.trace import verify

        restore = restore_of(markers_text(args))
        obj = with_tokens(verify(log, args.trace, recovery=recovery, restore=restore), args, restore)
    done = to_otel(obj, endpoint=checked if args.endpoint else None, path=args.output, recovery=None if args.trace else recovery,
                   project=args.project,
                   explain_chain=not args.no_explain)
    if args.json:
        json.dump({"spans": done.spans, "traces": done.traces, "errors": done.errors, "endpoint": done.endpoint,
                   "path": done.path, "rule": done.rule, "warnings": list(done.warnings)}, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(done)
    return 0
