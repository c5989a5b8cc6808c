"""``agent-inspect report SOURCE [--rule R] [--markers JSON] [--trace PATH] -o report.html``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from agent_inspect._errors import InspectError

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report", help="write a self-contained HTML report (opens offline, no kernel)",
        description="Reconstruct SOURCE under a rule and write one self-contained HTML file with the summary, "
                    "divergences, timelines of the most affected keys, the ledger and the lints.")
    parser.add_argument("source", help="kafka://host:port/topic, fluss://host:port/db.table, a file path, or a "
                                       "fleet scan's output directory (agent-inspect scan -o DIR)")
    parser.add_argument("-o", "--output", required=True, type=Path, help="the HTML file to write")
    parser.add_argument("--rule", default=None,
                        help="divergence rule (default: the rule the runtime ships, original; any other, e.g. "
                             "fixed, is labelled a what-if)")
    parser.add_argument("--runtime", default="auto", choices=["auto", "0.3", "0.4", "main"],
                        help="the upstream runtime that wrote the log (default auto: inferred from the records)")
    parser.add_argument("--markers", help='recovery markers as JSON, e.g. \'{"0": 120}\' or a list of maps, '
                                          "or @FILE (e.g. @sample_logs/production.markers.json)")
    parser.add_argument("--trace", help="the recovered job's Trace Log (file, directory or glob): adds "
                                        "'Checked against the trace'")
    parser.add_argument("--trace-rule", default="original",
                        help="the rule the traced job ran, for that check (default: original)")
    parser.add_argument("--title", help="heading of the report")
    parser.add_argument("--keys", type=int, default=3, help="timelines of this many most affected keys")
    parser.add_argument("--json", action="store_true", help="print a JSON object describing the report")
    parser.set_defaults(func=_run)


def parse_markers(text: str | None) -> Any:
    """Markers given on the command line as JSON, or ``@file`` holding them (partition numbers may be strings).

    A file may also be a sample's ``<name>.markers.json``: its ``"markers"`` entry is used.
    """
    if text is None:
        return None
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise InspectError(f"--markers file {text[1:]!r} cannot be read ({exc.strerror}); check the path") from None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InspectError(f"--markers is not valid JSON ({exc.msg}); pass e.g. '{{\"0\": 120}}' or @file") from None
    if isinstance(value, dict) and "markers" in value:
        value = value["markers"]

    def fix(m: Any) -> Any:
        if isinstance(m, dict) and all(isinstance(k, str) and k.lstrip("-").isdigit() for k in m):
            return {int(k): v for k, v in m.items()}
        return m

    return [fix(m) for m in value] if isinstance(value, list) else fix(value)


def restore_of(text: str | None) -> Any:
    """A sample markers file's ``restore`` entry (restored seqNums, in-flight tasks), if ``--markers @file``."""
    if not text or not text.startswith("@"):
        return None
    try:
        data = json.loads(Path(text[1:]).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data.get("restore") if isinstance(data, dict) else None


def _run(args: argparse.Namespace) -> int:
    from agent_inspect.log import load
    from agent_inspect.report import write_report

    if args.output.is_dir():
        raise InspectError(f"-o {args.output} is a directory; give the path of the HTML file to write")
    markers = parse_markers(args.markers)
    if Path(args.source).is_dir() and (Path(args.source) / "_scan.json").is_file():
        path = write_report(Path(args.source), args.output, title=args.title)  # a fleet scan's directory
        if args.json:
            json.dump({"path": str(path), "bytes": path.stat().st_size, "scan": args.source}, sys.stdout)
            sys.stdout.write("\n")
        else:
            print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB); open it in any browser, offline")
        return 0
    log = load(args.source)
    verification = None
    if args.trace:
        from agent_inspect.trace import verify

        verification = verify(log, args.trace, rule=args.trace_rule, markers=markers,
                              restore=restore_of(args.markers))
    path = write_report(log, args.output, rule=args.rule, markers=markers, runtime=args.runtime,
                        title=args.title, max_keys=args.keys, verification=verification)
    if args.json:
        from agent_inspect.log import resolve_runtime

        runtime = resolve_runtime(args.runtime, log)
        rule = args.rule or runtime.default_rule
        out = {"path": str(path), "bytes": path.stat().st_size, "rule": rule, "runtime": runtime.as_dict(),
               "what_if": rule.split(":")[0] != runtime.default_rule}
        if verification is not None:
            out["trace_agree"] = verification.agree
            out["trace_verdict"] = verification.verdict.value
        json.dump(out, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB); open it in any browser, offline")
    return 0
