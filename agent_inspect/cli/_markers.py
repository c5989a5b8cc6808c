"""``agent-inspect markers SOURCE [--checkpoint PATH] [--trace PATH] [--json]``: where a restore's recovery markers come from.

Lists candidate markers best first, each with where it came from, its evidence and confidence. Every source of
candidates is one entry of :data:`CANDIDATE_SOURCES`; a stronger source (a checkpoint read from disk) goes first.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from agent_inspect._glossary import plural
from agent_inspect.cli._source import add_source, load_log

__all__ = ["register", "CANDIDATE_SOURCES"]


def _inferred(args: argparse.Namespace, log: Any, trace: Any) -> list[Any]:
    """Candidates inferred from the log (and the trace, when given)."""
    from agent_inspect.markers import infer_markers

    return infer_markers(log, trace)


def _checkpoint(args: argparse.Namespace, log: Any, trace: Any) -> list[Any]:
    """The markers a Flink checkpoint holds (``--checkpoint``): what the restore read, not a guess."""
    if not getattr(args, "checkpoint", None):
        return []
    from agent_inspect.checkpoint import read
    from agent_inspect.cli._markers_args import checkpoint_options
    from agent_inspect.markers import MarkerCandidate

    cp = read(args.checkpoint, **checkpoint_options(args))
    unread = [f"not read: {what}" for what in cp.not_read]
    return [MarkerCandidate(markers=cp.recovery_markers(), source="checkpoint", evidence=cp.provenance,
                            confidence=1.0, notes=tuple(unread))]


#: Where candidates come from, in order: each takes the parsed arguments, the loaded log and trace (or None)
#: and returns ``MarkerCandidate``s best first. The listing keeps this order, then each source's own.
CANDIDATE_SOURCES: list[Callable[[argparse.Namespace, Any, Any], list[Any]]] = [_checkpoint, _inferred]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "markers", help="candidate recovery markers for a restore, best first, with where each came from",
        description="No checkpoint at hand? Infer the recovery markers of a restore from the log (refresh rows at a "
                    "checkpoint, what the last restore ran again, where it began) and, with --trace, from the Trace "
                    "Log of the restore. Pass the chosen markers to any verb with --markers.")
    add_source(parser)
    parser.add_argument("--trace", help="the Trace Log of the restore: a trace file, a directory of them, or a glob")
    parser.add_argument("--checkpoint", metavar="PATH",
                        help="the job's Flink checkpoint or savepoint (chk-N directory, _metadata file, or a checkpoint "
                             "directory for the latest completed one; local, file://, s3://, gs://, hdfs://): its "
                             "markers come first, as read")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from agent_inspect.cli._trace import load_trace_records
    from agent_inspect.markers import CONFIDENCE_MEANS

    log = load_log(args)
    trace = load_trace_records(args.trace) if args.trace else None
    candidates = [c for source in CANDIDATE_SOURCES for c in source(args, log, trace)]
    if args.json:
        json.dump({"source": args.source, "trace": args.trace, "confidence_means": CONFIDENCE_MEANS,
                   "candidates": [{"rank": n, **c.to_dict()} for n, c in enumerate(candidates, 1)]}, sys.stdout)
        sys.stdout.write("\n")
        return 0
    print(f"{args.source}: {plural(len(candidates), 'candidate marker set')}, best first "
          f"(confidence: {CONFIDENCE_MEANS})")
    for n, c in enumerate(candidates, 1):
        which = f", restore {c.restore}" if c.restore is not None else ""
        print(f"{n}. {c.source} (confidence {c.confidence:.2f}{which})")
        print(f"   --markers '{json.dumps(c.to_dict()['markers'])}'")
        print(f"   {c.evidence}")
        for note in c.notes:
            print(f"   note: {note}")
    return 0
