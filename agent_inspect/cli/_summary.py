"""``agent-inspect summary SOURCE [--json]``: what a log holds, at a glance."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import textwrap
import warnings
from collections.abc import Mapping
from typing import Any

from agent_inspect.cli._source import add_source, require_records, source_options
from agent_inspect.cli._terminal import faint

__all__ = ["register", "summary_text"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "summary", help="count records, errors, business keys, partitions, key/value formats of a log",
        description="Load an action-state log and print its counts: records, decode errors, business keys, "
                    "partitions, key and value formats, completed records and tombstones, and which upstream "
                    "runtime wrote it (0.3, 0.4 or main, inferred from the records, with the evidence).")
    add_source_arguments(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--explain", action="store_true", help="say under each field what it counts")
    parser.set_defaults(func=_run)


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """SOURCE (and ``--timeout``) plus the options that shape how it is read (shared with ``export``)."""
    add_source(parser)
    parser.add_argument("--key", action="append", dest="business_keys", metavar="KEY",
                        help="only this business key (repeatable)")


def load_source(args: argparse.Namespace) -> Any:
    """The log named by ``args.source``, read with the options of :func:`add_source_arguments`."""
    from agent_inspect._glossary import plural
    from agent_inspect.log import load

    options: dict[str, Any] = source_options(args)
    if args.business_keys:
        options["business_keys"] = list(args.business_keys)
    with warnings.catch_warnings():   # the loader checks the keys (an error when none has a record) ...
        warnings.simplefilter("ignore", UserWarning)
        log = load(args.source, **options)
    for key in log.source.options.get("missing_business_keys", ()):   # ... and names those missing: one line each
        print(f"agent-inspect: no records of business key {key!r} in {args.source}", file=sys.stderr)
    if repeated := log.source.options.get("repeated_positions"):   # overlapping dumps put together
        print(f"agent-inspect: {args.source} holds {plural(repeated, 'record')} at a partition and offset an earlier "
              "line has; each repeat counts as one more write: load one dump, or drop the repeated lines",
              file=sys.stderr)
    return require_records(log, args.source)


def _run(args: argparse.Namespace) -> int:
    log = load_source(args)
    summary = log.summary()
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, sort_keys=False))
        return 0
    print(summary_text(summary, explain=args.explain, dim=sys.stdout.isatty() and "NO_COLOR" not in os.environ))
    errors = log.errors
    if len(errors):   # where and why, or the count alone leaves a terminal user nowhere to look
        # no verb lists them all: say what to run, in Python ("log.errors" means nothing in a shell)
        keys = f", business_keys={list(args.business_keys)!r}" if args.business_keys else ""
        print(f"\nfirst records that do not decode ({min(len(errors), 3)} of {len(errors):,}; in Python, "
              f"agent_inspect.load({args.source!r}{keys}).errors lists each):")
        for part, offset, error in errors[["partition", "offset", "error"]].head(3).itertuples(index=False):
            where = "" if part < 0 else f"partition {part}, offset {offset}: "   # a file line's reason names it
            print(f"  {where}{error}")
    return 0


#: explanations that name Python (``log.errors``) in the views, in words a shell user can act on (as the footer)
_IN_A_SHELL = {"errors": "rows whose key or value could not be decoded (in Python, the loaded log's .errors lists each)"}


def summary_text(summary: Mapping[str, Any], *, explain: bool = True, indent: str = "",
                 width: int | None = None, dim: bool = False) -> str:
    """``ActionStateLog.summary()`` as aligned terminal lines: each field's label and value (the words of
    :func:`agent_inspect.log.summary_facts`, as in the views and the report), with its explanation beneath
    (indented; faint when ``dim``) unless ``explain`` is False. Lines wrap at ``width`` (default: the
    terminal's, at most 100 columns)."""
    from agent_inspect.log import summary_facts

    width = width or min(shutil.get_terminal_size((100, 24)).columns, 100)
    src = summary.get("source")
    rows = [("source", f"{src.get('kind')} {src.get('location')}" + (f" (topic {src['topic']})" if src.get("topic")
                                                                     else ""), "")] if isinstance(src, Mapping) else []
    rows += [(f.label, f.text, _IN_A_SHELL.get(f.name, f.explanation)) for f in summary_facts(summary)]
    column = len(indent) + max(len(label) for label, _, _ in rows) + 2
    width = max(width, column + 30)
    hang = " " * column
    lines = []
    for label, text, explanation in rows:
        lines += textwrap.wrap(text, width, initial_indent=f"{indent}{label}".ljust(column), subsequent_indent=hang,
                               break_on_hyphens=False) or [f"{indent}{label}"]
        if explain and explanation:
            lines += [f"{hang}  {faint(line)}" if dim else f"{hang}  {line}"
                      for line in textwrap.wrap(explanation, width - column - 2, break_on_hyphens=False)]
    return "\n".join(lines)
