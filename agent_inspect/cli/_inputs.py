"""What a command reads, so that its output never overwrites it (sources are read-only)."""

from __future__ import annotations

import argparse
import os

__all__ = ["refuse_overwriting_inputs"]


def refuse_overwriting_inputs(output: str | os.PathLike[str], args: argparse.Namespace) -> None:
    """One line (exit 2) when ``output`` is a file the command reads: its source, ``--trace`` files, a ``--markers``
    file, the ``--checkpoint``'s files, a ``--prices`` file. Checked before anything is loaded."""
    from agent_inspect.sources import check_output, input_files

    read = [*input_files(getattr(args, "source", None), kind="dump"),
            *input_files(getattr(args, "trace", None), kind="trace"),
            *input_files(getattr(args, "markers", None)), *input_files(getattr(args, "checkpoint", None)),
            *input_files(getattr(args, "prices", None))]
    check_output(output, read)
