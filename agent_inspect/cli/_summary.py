"""``agent-inspect summary SOURCE [--json]``: what a log holds, at a glance."""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "summary", help="count records, errors, business keys, partitions, key/value formats of a log",
        description="Load an action-state log and print its counts: records, decode errors, business keys, "
                    "partitions, key and value formats, completed records and tombstones, and which upstream "
                    "runtime wrote it (0.3, 0.4 or main, inferred from the records, with the evidence).")
    add_source_arguments(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.set_defaults(func=_run)


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """SOURCE plus the options that shape how it is read (shared with ``export``)."""
    parser.add_argument("source", help="kafka://host:port/topic, fluss://host:port/db.table, or a dump file")
    parser.add_argument("--key", action="append", dest="business_keys", metavar="KEY",
                        help="only this business key (repeatable)")


def load_source(args: argparse.Namespace) -> Any:
    """The log named by ``args.source``, read with the options of :func:`add_source_arguments`."""
    from agent_inspect.log import load

    options: dict[str, Any] = {}
    if args.business_keys:
        options["business_keys"] = list(args.business_keys)
    return load(args.source, **options)


def _run(args: argparse.Namespace) -> int:
    from agent_inspect.log import plain_text as _plain

    summary = load_source(args).summary()
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, sort_keys=False))
        return 0
    src = summary.pop("source", {})
    print(f"{'source':<30} {src.get('kind')} {src.get('location')}"
          + (f" (topic {src['topic']})" if src.get("topic") else ""))
    runtime = summary.pop("runtime", None)
    for name, value in summary.items():
        print(f"{name:<30} {_plain(value, empty='-')}")
    if runtime is not None:
        print(f"{'runtime':<30} {runtime['name']} ({'inferred' if runtime['inferred'] else 'given'}: "
              f"{runtime['evidence']}; default rule {runtime['default_rule']})")
    return 0
