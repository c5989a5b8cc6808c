"""Number options checked as they are parsed: a bad one is a usage error (one line, exit 2) before any work."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TypeVar

__all__ = ["count", "port", "seconds"]

_N = TypeVar("_N", int, float)


def count(text: str) -> int:
    """A whole number, 0 or more (rows to print, keys to show)."""
    value = _parsed(text, int, "a whole number")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def port(text: str) -> int:
    """A TCP port, 0 (a free one) to 65535: checked before a server is started or a site is built."""
    value = _parsed(text, int, "a port number")
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port {value} is outside 0..65535 (0: a free one)")
    return value


def seconds(text: str) -> float:
    """A positive, finite number of seconds (how long to wait for a service)."""
    value = _parsed(text, float, "a number of seconds")
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive, finite number of seconds, not {text}")
    return value


def _parsed(text: str, parse: Callable[[str], _N], what: str) -> _N:
    try:
        return parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
