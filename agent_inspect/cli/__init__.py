"""The ``agent-inspect`` command line.

Each subcommand lives in its own module ``agent_inspect/cli/_<name>.py`` exposing
``register(subparsers)``; the parser is assembled from those modules, so adding a
command never edits this file. Exit codes: 0 success, 1 a checked expectation failed,
2 bad usage, unreadable input or an empty source (one-line reason on stderr), 3 ``verify`` cannot decide.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import warnings
from collections.abc import Sequence
from typing import NoReturn

from agent_inspect._errors import InspectError
from agent_inspect.cli._terminal import inert_terminal

__all__ = ["main", "build_parser"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2
        print(f"agent-inspect: error: {message}", file=sys.stderr)
        raise SystemExit(2)


_DESCRIPTION = ("Inspect the recoveries of Apache Flink Agents jobs from their action-state logs: what a restore "
                "reuses, re-runs and evicts, why, and whether the job did that.")
_EPILOG = ("exit codes: 0 success; 1 a checked expectation failed; 2 bad usage, unreadable input or an empty source "
           "(one line on stderr says why); 3 verify cannot decide. 'agent-inspect COMMAND --help' lists a command's "
           "options.")


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every discovered subcommand."""
    from agent_inspect import __version__

    parser = _Parser(prog="agent-inspect", description=_DESCRIPTION, epilog=_EPILOG)
    parser.add_argument("--version", action="version", version=f"agent-inspect {__version__}",
                        help="print the version of agent_inspect and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_") and not info.name.startswith("__"):
            module = importlib.import_module(f"{__name__}.{info.name}")
            register = getattr(module, "register", None)
            if register is not None:
                register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    with inert_terminal(), warnings.catch_warnings():   # job data may carry escape sequences: never obeyed
        args = build_parser().parse_args(argv)   # a usage error quotes the arguments, a pasted key's escapes too
        warnings.showwarning = _one_line   # a loader's warning is one line, like an error, not file:line + source
        if os.getcwd() not in sys.path:
            # every verb's module:ClassName rule, next to the user's files; last, so a file there named like a
            # module we import later (json.py, pandas.py) shadows nothing
            sys.path.append(os.getcwd())
        return _run(args)


def _one_line(message: Warning | str, category: type[Warning], filename: str, lineno: int,
              file: object = None, line: str | None = None) -> None:
    print(f"agent-inspect: {message}", file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args) or 0)
    except InspectError as exc:   # in a shell's words: --timeout, not the library's timeout=
        print(f"agent-inspect: {exc.cli_text()}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as exc:
        # expected I/O failures (missing input, unwritable output, bad path): one line, never a traceback
        where = f" {exc.filename!r}" if getattr(exc, "filename", None) else ""
        # a folder to write into that is a file ("File exists '/etc/passwd'" said nothing of what to do)
        hint = {FileExistsError: ": it is a file, not a directory; name a directory to write into",
                NotADirectoryError: ": part of that path is a file, not a directory; name a directory to write into"}
        print(f"agent-inspect: {exc.strerror or exc}{where}{hint.get(type(exc), '')}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
