"""``agent-inspect report SOURCE [recovery settings] [--trace PATH] -o report.html``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from agent_inspect._errors import InspectError
from agent_inspect.cli._markers_args import restore_of
from agent_inspect.cli._numbers import count
from agent_inspect.cli._settings import add_recovery_options, markers_text, recovery_from_args
from agent_inspect.cli._source import add_source, load_log

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report", help="write a self-contained HTML report (opens offline, no kernel)",
        description="Reconstruct SOURCE under a rule and write one self-contained HTML file with the summary, "
                    "divergences, timelines of the most affected keys, the ledger and the lints.")
    add_source(parser, "kafka://host:port/topic, fluss://host:port/db.table, a file path, or a fleet scan's output "
                       "directory (agent-inspect scan -o DIR)")
    parser.add_argument("-o", "--output", required=True, type=Path, help="the HTML file to write")
    add_recovery_options(parser)
    parser.add_argument("--trace", help="the recovered job's Trace Log (file, directory or glob): adds "
                                        "'Checked against the trace'")
    parser.add_argument("--title", help="heading of the report")
    parser.add_argument("--keys", type=count, default=3,
                        help="timelines of this many most affected keys (default: 3)")
    parser.add_argument("--json", action="store_true", help="print a JSON object describing the report")
    from agent_inspect.cli._prices import add_token_args

    add_token_args(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from agent_inspect.cli._inputs import refuse_overwriting_inputs
    from agent_inspect.recovery import marker_warnings
    from agent_inspect.report import write_report
    from agent_inspect.sources import check_export

    if args.output.is_dir():
        raise InspectError(f"-o {args.output} is a directory; give the path of the HTML file to write")
    refuse_overwriting_inputs(args.output, args)
    check_export(path=args.output)   # a folder that is not there: said before loading (a topic can take minutes)
    if Path(args.source).is_dir() and (Path(args.source) / "_scan.json").is_file():
        path = write_report(Path(args.source), args.output, title=args.title)  # a fleet scan's directory
        if args.json:
            json.dump({"path": str(path), "bytes": path.stat().st_size, "scan": args.source}, sys.stdout)
            sys.stdout.write("\n")
        else:
            print(f"wrote {path} ({_size(path.stat().st_size)}); open it in any browser, offline")
        return 0
    log = load_log(args)
    recovery = recovery_from_args(args, log)
    verification = None
    if args.trace:
        from agent_inspect.cli._prices import with_tokens
        from agent_inspect.trace import verify

        verification = verify(log, args.trace, recovery=recovery, restore=restore_of(markers_text(args)))
        verification = with_tokens(verification, args, restore_of(markers_text(args)))
    path = write_report(log, args.output, recovery=recovery, title=args.title, max_keys=args.keys,
                        verification=verification)
    # what the markers leave out of the log, as the report says it: a reader of the terminal line sees it too
    warnings = marker_warnings(recovery.markers, log) if recovery.markers else []
    if args.json:
        out = {"path": str(path), "bytes": path.stat().st_size, "rule": recovery.rule.name, "warnings": warnings,
               "runtime": recovery.runtime.as_dict(), "what_if": recovery.what_if,
               "rule_label": recovery.rule_label, "markers_label": recovery.markers_label}
        if verification is not None:
            out["trace_agree"] = verification.agree
            ledger = verification.tokens
            out["tokens"] = ledger.to_dict() if ledger is not None else None
            out["trace_verdict"] = verification.verdict.value
        json.dump(out, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(f"wrote {path} ({_size(path.stat().st_size)}): rule {recovery.rule_label}, markers "
              f"{recovery.markers_label}; open it in any browser, offline")
        for warning in warnings:
            print(f"warning: {warning}")
    return 0


def _size(n: int) -> str:
    """A file's size as a reader reads it: ``19 kB``, ``4.9 MB`` (a small report read "0.0 MB", as if empty)."""
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{max(1, round(n / 1e3))} kB"
