"""The recovery settings every subcommand takes: one options group, the same names and defaults everywhere.

``--rule --markers|--checkpoint --runtime --store-flavour --kafka-pending --call-matching`` are the command-line form
of :class:`agent_inspect.Recovery`'s overrides; left out, each takes the default ``Recovery.for_log``
resolves (the rule the log's runtime ships, the runtime inferred from the records, the whole loaded log
as the rebuild window).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from agent_inspect.cli._markers_args import add_markers_options, markers_from_args

if TYPE_CHECKING:
    from agent_inspect.recovery import Recovery

__all__ = ["add_recovery_options", "recovery_overrides", "recovery_from_args", "RUNTIME_CHOICES",
           "STORE_FLAVOUR_CHOICES", "KAFKA_PENDING_CHOICES", "CALL_MATCHING_CHOICES", "markers_text"]

# literal here so that building the parser (``--help``) imports nothing heavy; tests hold them equal to the
# package's own lists (log.RUNTIMES, recovery.STORE_FLAVOURS, store.KAFKA_PENDING, recovery.CallMatching)
RUNTIME_CHOICES = ("auto", "0.3", "0.4", "main")
STORE_FLAVOUR_CHOICES = ("auto", "kafka-k1", "fluss-k1", "segment")
KAFKA_PENDING_CHOICES = ("refresh", "marker")
CALL_MATCHING_CHOICES = ("position", "function-id")


def add_recovery_options(parser: argparse.ArgumentParser, *, markers: bool = True) -> argparse._ArgumentGroup:
    """Add the recovery settings group to ``parser`` (``markers=False`` when the command reads no markers)."""
    if markers:
        add_markers_options(parser)   # --markers JSON|@FILE|FILE or --checkpoint PATH
    group = parser.add_argument_group(
        "recovery settings", "how the restore runs; the same options and defaults for every command")
    group.add_argument("--rule", default=None,
                       help="divergence rule: original, naive, fixed, lookup-only, branch-aware, "
                            "fixed+round-regression, or your own as module:Class (from the current directory) or "
                            "path/to/file.py:Class (default: the rule the runtime ships, original; any other is "
                            "labelled a what-if)")
    group.add_argument("--runtime", default=None, choices=RUNTIME_CHOICES,
                       help="the upstream version that wrote the log (default auto: inferred from the records)")
    group.add_argument("--store-flavour", default=None, choices=STORE_FLAVOUR_CHOICES,
                       help="the original rule's store flavour (default auto: from the key format and source)")
    group.add_argument("--kafka-pending", default=None, choices=KAFKA_PENDING_CHOICES,
                       help="how a 0.4+ Kafka store brings in-flight rounds back (default: the runtime's)")
    group.add_argument("--call-matching", default=None, choices=CALL_MATCHING_CHOICES,
                       help="how replayed durable calls meet their recorded slots (default: position)")
    return group


def markers_text(args: argparse.Namespace) -> str | None:
    """``--markers`` as given (None with ``--checkpoint`` or neither)."""
    text: str | None = getattr(args, "markers", None)
    return text


def recovery_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given on the command line, as ``Recovery`` overrides (those left out are absent)."""
    given = {"rule": args.rule, "markers": markers_from_args(args),
             "runtime": args.runtime, "store_flavour": args.store_flavour, "kafka_pending": args.kafka_pending,
             "call_matching": args.call_matching}
    return {name: value for name, value in given.items() if value is not None}


def recovery_from_args(args: argparse.Namespace, log: Any) -> Recovery:
    """The settings of one command, resolved once against ``log``."""
    from agent_inspect.recovery import Recovery

    return Recovery.resolve(log, None, **recovery_overrides(args))
