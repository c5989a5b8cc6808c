"""``agent-inspect trace summary PATH [--json]``: what a Flink Agents Trace Log holds."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from agent_inspect._glossary import plural

if TYPE_CHECKING:
    from agent_inspect.trace import TraceLog

__all__ = ["register", "load_trace_records"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("trace", help="read a Flink Agents Trace Log (or old Event Log)",
                                   description="Read Trace Log files (FILE or SLF4J output, or the old Event Log).")
    sub = parser.add_subparsers(dest="trace_command", required=True)
    summary = sub.add_parser("summary", help="counts by entity type and status, jobs, subtasks, agents, keys, errors")
    summary.add_argument("path", help="a trace file, a directory of trace files, or a glob")
    summary.add_argument("--json", action="store_true", help="one JSON object on stdout")
    summary.set_defaults(func=_summary)


def load_trace_records(path: str) -> TraceLog:
    """The trace at ``path``, unless it holds no record at all (``TraceLog.require_records``, the one check every
    verb that reads a trace makes): then the verb stops with one line naming the file and what to check (exit 2)."""
    from agent_inspect.trace import load_trace

    return load_trace(path).require_records()


def _summary(args: argparse.Namespace) -> int:
    s = load_trace_records(args.path).summary()
    if args.json:
        json.dump(s, sys.stdout)
        sys.stdout.write("\n")
        return 0
    print(f"{s['source']}: {plural(s['records'], 'record')} in {plural(s['files'], 'file')}; formats "
          + ", ".join(f"{k} {v}" for k, v in s["formats"].items()))
    for et, statuses in s["by_status"].items():
        print(f"  {et}: " + ", ".join(f"{st} {n}" for st, n in statuses.items()))
    others = {k: v for k, v in s["by_entity_type"].items() if k not in s["by_status"]}
    for et, n in others.items():
        print(f"  {et}: {n}")
    print(f"jobs: {', '.join(s['jobs']) or '(not named)'}; subtasks: {len(s['subtasks']) or '(not named)'}; "
          f"agents: {', '.join(s['agents']) or '(none)'}; business keys {len(s['business_keys'])}")
    print(f"action executions {s['action_executions']}: "
          + (", ".join(f"{k} {v}" for k, v in s["observed"].items()) or "none"))
    print(s["recovery_note"])
    print(f"exact duplicates left out: {s['duplicates_dropped']}; conflicting records (same execution and status, "
          f"other content): {s['conflicting_records']}")
    print(f"errors: {len(s['errors'])}")
    for e in s["errors"][:20]:
        print(f"  {e['file']}:{e['line']}: {e['reason']}")
    return 0
