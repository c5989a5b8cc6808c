"""``agent-inspect samples list|write``: the deterministic sample logs."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from agent_inspect._glossary import count_words

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "samples", help="list or (re)generate the deterministic sample logs",
        description="The sample logs are histories of named divergence cases and a production-like job, "
                    "written by the replay executor acting as the operator. 'write' generates every file "
                    "(kcat -J JSONL, plain JSONL, Parquet, markers JSON) byte-identically.")
    sub = parser.add_subparsers(dest="samples_command", required=True, metavar="{list,write}")
    listing = sub.add_parser("list", help="name and description of every sample")
    listing.add_argument("--json", action="store_true", help="print one JSON object")
    listing.set_defaults(func=_list)
    write = sub.add_parser("write", help="generate sample files into DIR")
    write.add_argument("directory", type=Path, help="output directory (created if missing)")
    write.add_argument("--name", action="append", dest="names", metavar="NAME",
                       help="only this sample (repeatable); default: all, plus README.md")
    write.add_argument("--json", action="store_true", help="print the written files as one JSON object")
    write.set_defaults(func=_write)


def _list(args: argparse.Namespace) -> int:
    from agent_inspect.samples import SAMPLES

    if args.json:
        print(json.dumps(dict(SAMPLES)))
    else:
        width = max(map(len, SAMPLES))
        for name, text in SAMPLES.items():
            print(f"{name:<{width}}  {text}")
    return 0


def _write(args: argparse.Namespace) -> int:
    from agent_inspect._errors import InspectError
    from agent_inspect.samples import SAMPLES, write_samples

    unknown = [n for n in args.names or () if n not in SAMPLES]
    if unknown:
        raise InspectError(f"no sample named {unknown[0]!r}; see `agent-inspect samples list`")
    written = write_samples(args.directory, names=args.names)
    if args.json:
        print(json.dumps({"directory": str(args.directory), "files": [p.name for p in written]}))
    else:
        print(f"wrote {len(written)} {count_words(len(written), 'file')} to {args.directory}")
    return 0
