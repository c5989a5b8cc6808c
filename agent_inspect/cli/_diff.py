"""``agent-inspect diff A B [--key K] [--json]``: two logs, attempts, or rules against each other."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from agent_inspect.cli._numbers import count
from agent_inspect.cli._settings import add_recovery_options, recovery_overrides
from agent_inspect.cli._source import add_timeout

__all__ = ["register"]

_SELECTOR_HELP = ("a source (kafka://host:port/topic, fluss://host:port/db.table, or a dump file) with optional "
                  "selectors: @RULE or @predict=RULE (what a recovery under RULE does per task), @reconstruct=RULE "
                  "(each record's status), @attempt=N (attempt N of each key), @key=K, @markers=FILE (without a "
                  "rule: what the restore does under the runtime's rule), @runtime=NAME (alone: how the log is read)")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "diff", help="diff two logs, attempts or rules: aligned executions and the first divergence per key",
        description="Align A and B per business key, round and action execution; print the counts, the first "
                    "divergence per key (expected = A, actual = B, where, why it matters to the store) and the "
                    "changed fields. Examples: diff prod.jsonl@attempt=1 prod.jsonl@attempt=2 --key order-7; "
                    "diff prod.jsonl@original prod.jsonl@fixed; diff kafka-copy.jsonl fluss-copy.parquet.")
    parser.add_argument("a", help=_SELECTOR_HELP)
    parser.add_argument("b", help="the other side, same syntax")
    parser.add_argument("--key", help="only this business key")
    add_timeout(parser)   # for a kafka:// or fluss:// side
    add_recovery_options(parser).description = (
        "for each side that sets none of its own; a side without @RULE or @markers stays the log as written, "
        "read under --runtime and --kafka-pending")
    parser.add_argument("--limit", type=count, default=50, help="differing pairs to print (default 50)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from agent_inspect.diffing import diff, parse_selector
    from agent_inspect.sources import FileKind, empty_source, file_kind

    # a side with no records is a dump that failed, not a job that did nothing: exit 2 as every verb says it (a
    # recovery of it failed with "no root (_input_event) records … pass a ReplayPlan", a log side exited 0)
    for text in (args.a, args.b):
        source = parse_selector(text).source
        if "://" not in source and os.path.isfile(source) and file_kind(source) == FileKind.EMPTY:
            raise empty_source(source)
    d = diff(args.a, args.b, key=args.key, timeout=args.timeout, **recovery_overrides(args))
    for side in (d.a, d.b):
        if side.kind == "log" and side.log is not None and not len(side.log.records):
            raise empty_source(parse_selector(args.a if side is d.a else args.b).source)   # a topic read empty
    if args.json:
        print(json.dumps(d.to_dict(key=args.key, limit=args.limit), ensure_ascii=False, default=str))
        return 0
    c = d.counts()
    for name, label in (("a", d.a.label), ("b", d.b.label)):    # two alike sides are labelled "a: …" / "b: …"
        print(label if label.startswith(f"{name}: ") else f"{name}: {label}")
    print("pairs: " + ", ".join(f"{k} {v}" for k, v in c.items()))
    for note in d.notes:
        print(f"note: {note}")
    if d.empty:
        print("no difference")
        return 0
    print("\nfirst divergence per key:")
    for r in d.first_divergences.itertuples(index=False):
        print(f"  {r.business_key} seq {r.seq} {d.action_label(r.action_uuid or r.action)} [{r.status}] at {r.where}")
        print(f"    expected (a): {r.expected}\n    actual   (b): {r.actual}\n    why: {r.why}")
    print("\ndiffering executions:")
    for r in d.differences.head(args.limit).itertuples(index=False):
        action = r.action_a if r.action_a is not None else r.action_b
        print(f"  {r.business_key} seq {r.seq} {d.action_label(action)} {r.event_type}: {r.status}"
              + (f" (aligned by {r.match})" if isinstance(r.match, str) and r.match != "state key" else ""))
        for ch in r.changes:
            print(f"      {ch.path}: {ch.a} -> {ch.b}")
    if len(d) > args.limit:
        print(f"  … and {len(d) - args.limit:,} more (--limit)")   # as verify ends its list
    return 0
