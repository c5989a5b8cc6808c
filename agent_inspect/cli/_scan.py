"""``agent-inspect scan SOURCE [recovery settings] [--what-if RULES] [--scheduler ADDR] [--workers N] [-o DIR] [--json]``.

A fleet scan: every partition of a topic (or every dump of a directory) on Dask, one task per
partition; prints the most-at-risk keys. Ctrl-C cancels the tasks and exits 130.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Mapping
from typing import Any

from agent_inspect._glossary import plural
from agent_inspect.cli._numbers import count
from agent_inspect.cli._settings import add_recovery_options, recovery_overrides
from agent_inspect.cli._source import add_timeout

__all__ = ["register", "rule_counts_line"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "scan", help="scan a whole topic or dump partition-parallel on Dask: which keys a restore would hurt",
        description="Plan one task per Kafka partition (per Fluss bucket, per partition of each dump), run them on a Dask "
                    "LocalCluster or an existing scheduler, and report per key what a restore would re-run under "
                    "each rule. Records are read by the workers, never by this process.")
    parser.add_argument("source", help="kafka://host:port/topic, fluss://host:port/db.table, a dump file, or a "
                                       "directory of dumps")
    add_timeout(parser, scheduler=True)
    add_recovery_options(parser)
    parser.add_argument("--what-if", default="fixed", metavar="RULES",
                        help="comma-separated rules to predict every key under as well, labelled what-ifs "
                             "(default: fixed; '' for none)")
    parser.add_argument("--scheduler", metavar="ADDR", help="a Dask scheduler address (tcp://host:8786); "
                                                            "default: a LocalCluster on this machine")
    parser.add_argument("--workers", type=int, metavar="N", help="LocalCluster worker processes (default: cores)")
    parser.add_argument("-o", "--output", metavar="DIR", help="write the records as hive-partitioned Parquet and "
                                                              "the result frames to DIR (reopen with ai.load(DIR))")
    parser.add_argument("--top", type=count, default=20, help="keys shown in the at-risk table (default: 20)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from agent_inspect._errors import InspectError
    from agent_inspect.fleet import SUMMARY_LABELS, scan, tasks_text
    from agent_inspect.sources import empty_source

    if args.workers is not None and args.workers < 1:
        raise InspectError("--workers must be 1 or more")
    if args.workers is not None and args.scheduler:
        raise InspectError("--workers sizes the local cluster; with --scheduler the cluster has its own workers")
    what_if = tuple(r.strip() for r in args.what_if.split(",") if r.strip())

    def started(link: str | None) -> None:
        if link and args.scheduler:
            print(f"agent-inspect: Dask dashboard at {link}", file=sys.stderr)
        elif link:   # the local cluster, and its dashboard, close when the command returns
            print(f"agent-inspect: Dask dashboard at {link} while the scan runs (its local cluster closes with "
                  "the command)", file=sys.stderr)

    # the scan reports failed windows itself; a cancelled or closing cluster's connection chatter is not news
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    try:
        result = scan(args.source, what_if=what_if, **recovery_overrides(args), client=args.scheduler,
                      timeout=args.timeout,   # the source's and the scheduler's
                      output=args.output, workers=args.workers,
                      progress=not args.no_progress, on_start=started)
    except KeyboardInterrupt:
        print("agent-inspect: scan cancelled (tasks cancelled, cluster closed)", file=sys.stderr)
        return 130
    s = result.summary()
    if not s["records"] and not s["failed"]:    # nothing read, and nothing failed to be: nothing to analyse
        raise empty_source(args.source)
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, default=str))
        return 0
    labels = {rule: result.rule_label(rule) for rule in result.rules}
    # a what-if label is longer than a name; the counts' labels are the report's ("failed" alone read as tasks)
    width = max(*(len(label) + 2 for label in (*labels.values(), *SUMMARY_LABELS.values())))
    print(f"{'source':<{width}}{s['source']}")
    print(f"{'runtime':<{width}}{result.runtime_provenance or s['runtime']}")   # with where it came from
    if result.store_flavour_text:
        print(f"{'store flavour':<{width}}{result.store_flavour_text}")
    for name, label in SUMMARY_LABELS.items():
        print(f"{label:<{width}}{s[name]:,}")
    for rule in result.rules:
        r = s[rule]
        print(f"{labels[rule]:<{width}}{tasks_text(r)}")
        print(f"{'':<{width}}{rule_counts_line(r)}")
        if r["calls_by_function"]:
            print(f"{'':<{width}}{by_function_line(r['calls_by_function'])}")
    if result.output:
        print(f"{'output':<{width}}{result.output}")
    top = result.at_risk(args.top)
    if len(top):
        base = result.rules[0]
        marked = "; ".join(f"{r}_… columns: {labels[r]}" for r in result.rules[1:] if labels[r] != r)
        print(f"\nmost at risk, ranked under {labels[base]}" + (f" ({marked})" if marked else "") + ":")
        print(top.to_string(index=False))
    if len(result.failures):
        print("\nfailed windows:")
        print(result.failures[["window", "reason"]].to_string(index=False))
    return 0


def by_function_line(calls: Mapping[str, int]) -> str:
    """The scan's "by function" line: the five functions called most, each with its count, then how many more
    (named as functions: after "name count" pairs a bare "and 2 more" would read as one more count)."""
    top = list(calls.items())
    more = f", and {plural(len(top) - 5, 'more function')}" if len(top) > 5 else ""
    return "by function: " + ", ".join(f"{f} {n:,}" for f, n in top[:5]) + more


def rule_counts_line(counts: dict[str, Any]) -> str:
    """One rule's totals of a scan summary in words, each count with its noun in the right number."""
    subagent = int(counts.get("calls_subagent") or 0)   # listed under "by function" too: the totals must count them
    return (f"{plural(counts['rerun'] + counts['resumed'], 'body', 'bodies')} re-run, "
            f"{plural(counts['calls'], 'durable call')} re-executed, "
            + (f"{plural(subagent, 'sub-agent call')} sent again, " if subagent else "")
            + f"{plural(counts['evictions'], 'eviction')}, "
            f"{plural(counts['stale_reuse_risk'], 'reuse')} at risk, "
            f"{plural(counts['crashed_keys'], 'key crashes', 'keys crash')}")
