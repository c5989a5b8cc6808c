"""The one-line error a checkpoint read gives storage that does not answer, checked the same way for every protocol."""

from __future__ import annotations

import time

import agent_inspect as ai


def fails_within(url: str, bound: float, *, timeout: float = 1) -> ai.SourceError:
    """``ai.checkpoint.read(url, timeout=timeout)`` fails in under ``bound`` seconds with the one-line "cannot
    reach" message naming the wait and what to do; returns the error for further checks."""
    start = time.monotonic()
    try:
        ai.checkpoint.read(url, timeout=timeout)
    except ai.SourceError as error:
        took = time.monotonic() - start
        message = str(error)
        assert took < bound, took
        assert "\n" not in message, message
        assert message.startswith(f"cannot reach {url}: no answer within {timeout:g}s"), message
        assert "raise timeout=" in message and "local folder" in message, message
        return error
    raise AssertionError(f"reading {url} did not fail")
