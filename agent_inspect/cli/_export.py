"""``agent-inspect export SOURCE -o FILE``: copy a log's exact records to Parquet or JSONL."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from agent_inspect._errors import InspectError
from agent_inspect._glossary import count_words
from agent_inspect.cli._summary import add_source_arguments, load_source

__all__ = ["register"]

_WRITERS = {".parquet": "write_parquet", ".jsonl": "write_jsonl"}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "export", help="write a log's exact records to a .parquet or .jsonl file (reloadable)",
        description="Load an action-state log and write its records with their exact key and value bytes and "
                    "the source metadata. The format follows the output suffix: .parquet or .jsonl.")
    add_source_arguments(parser)
    parser.add_argument("-o", "--output", required=True, type=Path, help="output file: *.parquet or *.jsonl")
    parser.add_argument("--json", action="store_true", help="print what was written as one JSON object")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    writer_name = _WRITERS.get(args.output.suffix.lower())
    if writer_name is None:
        raise InspectError(f"cannot tell the export format from {str(args.output)!r}; "
                           f"name the output *.parquet or *.jsonl")
    import agent_inspect.sources as sources
    from agent_inspect.cli._inputs import refuse_overwriting_inputs

    refuse_overwriting_inputs(args.output, args)   # before loading: a topic can take minutes
    log = load_source(args)
    path = getattr(sources, writer_name)(log, args.output)
    done = {"output": str(path), "format": args.output.suffix.lower().lstrip("."), "records": len(log.records),
            "errors": int(log.records["error"].notna().sum())}
    if args.json:
        print(json.dumps(done))
    else:
        print(f"wrote {done['records']} {count_words(done['records'], 'record')} ({done['errors']} with decode errors) to {done['output']}")
    return 0
