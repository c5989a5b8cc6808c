"""Number options checked as they are parsed: a bad one is a usage error (one line, exit 2) before any work."""

from __future__ import annotations

import argparse

__all__ = ["count", "port", "seconds"]


def count(text: str) -> int:
    """A whole number, 0 or more (rows to print, keys to show)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def port(text: str) -> int:
    """A TCP port, 0 (a free one) to 65535: checked before a server is started or a site is built."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port {value} is outside 0..65535 (0: a free one)")
    return value


def seconds(text: str) -> float:
    """A positive, finite number of seconds (how long to wait for a service)."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive, finite number of seconds, not {text}")
    return value
