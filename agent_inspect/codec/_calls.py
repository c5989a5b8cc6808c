"""Durable-call identity (spec §5.5, addendum §4): how a call meets its recorded slot, and routing ids."""

from __future__ import annotations

from collections.abc import Callable

from agent_inspect._errors import ReplayError

__all__ = ["CALL_MATCHING", "call_matcher", "call_router"]

CALL_MATCHING = ("position", "function-id")
"""How a durable call is matched with the recorded slot at its position: ``"position"`` compares functionId and
argsDigest (released upstream, and the #1158 test); ``"function-id"`` compares functionId only (the #1016
variant, whose Python ids are the explicit ``durable_id`` or ``<module>.<qualname>::<16-hex digest>``). An
absent argsDigest is the empty one in both.
"""


def _position(rf: str, rd: str | None, f: str, d: str | None) -> bool:
    return rf == f and (rd or "") == (d or "")


def _function_id(rf: str, rd: str | None, f: str, d: str | None) -> bool:
    return rf == f


def call_matcher(call_matching: str = "position") -> Callable[[str, str | None, str, str | None], bool]:
    """``same(recorded_function_id, recorded_args_digest, function_id, args_digest)`` for a :data:`CALL_MATCHING` mode.

    For example::

        same = ai.codec.call_matcher("function-id")
        same("tools.lookup", "ab12", "tools.lookup", "ff00")   # function-id matching ignores the digest
    """
    if call_matching == "position":
        return _position
    if call_matching == "function-id":
        return _function_id
    raise ReplayError(f"unknown call_matching {call_matching!r}; use one of {', '.join(CALL_MATCHING)}")


def call_router(function_id: str) -> str | None:
    """The router a model-routing call belongs to, else None (addendum §4).

    ``route:<router>`` (the decision), ``chat:<router>:<candidate>`` (each candidate attempt, in fallback
    order) and ``judge:<router>`` (the judge's chat call) all belong to ``<router>``; plain ``chat`` (tool-call
    rounds) and every other id to none.

    For example::

        ai.codec.call_router("chat:support:gpt-4o"), ai.codec.call_router("chat")   # "support", None
    """
    head, sep, rest = function_id.partition(":")
    if not sep or not rest:
        return None
    if head in ("route", "judge"):
        return rest
    if head == "chat":
        router, sep2, candidate = rest.partition(":")
        return router if sep2 and router and candidate else None
    return None
