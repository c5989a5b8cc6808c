"""The source every command reads, in one place: ``SOURCE`` and ``--timeout SECONDS`` for a Kafka topic or Fluss
table, and the one loader the verbs call with them."""

from __future__ import annotations

import argparse
from typing import Any

from agent_inspect.cli._numbers import seconds

__all__ = ["add_source", "add_timeout", "source_options", "load_log", "require_records"]

SOURCE_HELP = "kafka://host:port/topic, fluss://host:port/db.table, or a dump file"


def add_source(parser: argparse.ArgumentParser, text: str = SOURCE_HELP) -> None:
    """The ``source`` argument and ``--timeout`` (how long a broker may take)."""
    parser.add_argument("source", help=text)
    add_timeout(parser)


def add_timeout(parser: argparse.ArgumentParser, *, scheduler: bool = False) -> None:
    """``--timeout SECONDS``: the library's ``timeout=`` (``scheduler``: a ``--scheduler`` waits as long)."""
    also = " (and for a --scheduler to answer)" if scheduler else ""
    parser.add_argument("--timeout", type=seconds, default=None, metavar="SECONDS",
                        help=f"seconds to wait for a Kafka broker or Fluss cluster{also} (or a checkpoint URL's "
                             "storage) before giving up (default: 10; raise it for a slow or distant service)")


def source_options(args: argparse.Namespace, source: str | None = None) -> dict[str, Any]:
    """The loader keywords of the command line's source options: ``timeout`` (None: the loader's 10) for a Kafka
    topic or Fluss table (a file waits for nothing, and its loader takes no timeout)."""
    from agent_inspect.sources import source_scheme

    text = str(source if source is not None else args.source)
    remote = source_scheme(text) in ("kafka", "fluss")
    return {"timeout": getattr(args, "timeout", None)} if remote else {}


def load_log(args: argparse.Namespace, source: str | None = None, **options: Any) -> Any:
    """The log ``source`` (default ``args.source``) names, read with the command line's source options; one line
    (exit 2) when it holds no records."""
    from agent_inspect.log import load

    text = str(source if source is not None else args.source)
    return require_records(load(text, **source_options(args, text), **options), text)


def require_records(log: Any, source: str) -> Any:
    """``log``, unless it holds no records: then there is nothing to analyse, and the verb stops with one line
    saying what to check (exit 2, as for a business key without records or a trace without any)."""
    if len(log.records):
        return log
    from agent_inspect.sources import empty_source

    raise empty_source(source)
