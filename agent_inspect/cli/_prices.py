"""The token-ledger options shared by ``verify`` and ``report``: prices and the rules to compare with."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from agent_inspect._errors import InspectError

__all__ = ["add_token_args", "prices_of", "with_tokens"]


def add_token_args(parser: argparse.ArgumentParser) -> None:
    """``--price MODEL=IN/OUT`` (repeatable), ``--prices FILE.toml``, ``--tokens-under RULE`` (repeatable)."""
    parser.add_argument("--price", action="append", default=[], metavar="MODEL=IN/OUT",
                        help="USD per million input/output tokens of a model (or function id; * for any), "
                             "e.g. qwen-max=1.6/6.4; repeatable; gives the token ledger a cost")
    parser.add_argument("--prices", type=Path, metavar="FILE.toml",
                        help='prices as TOML: ["MODEL"] with input = … and output = … (USD per million tokens)')
    parser.add_argument("--tokens-under", action="append", default=[], metavar="RULE",
                        help="also predict the tokens the restore would have re-spent under RULE (repeatable)")


def prices_of(args: argparse.Namespace) -> dict[str, tuple[float, float]] | None:
    """The price table the options give, or None."""
    from agent_inspect.trace import parse_prices, prices_from_toml

    prices: dict[str, tuple[float, float]] = {}
    if args.prices is not None:
        try:
            text = args.prices.read_text(encoding="utf-8")
        except OSError as exc:
            raise InspectError(f"--prices file {str(args.prices)!r} cannot be read ({exc.strerror}); check the "
                               "path") from None
        except UnicodeDecodeError:   # a picture or a binary passed by mistake was a traceback
            raise InspectError(f"--prices file {str(args.prices)!r} is not a prices file (not UTF-8 text); write one "
                               '["MODEL"] table per model with input = … and output = …') from None
        try:
            prices.update(prices_from_toml(text))
        except InspectError as exc:   # which file, as every --markers or case file error names it
            raise InspectError(f"--prices file {str(args.prices)!r}: {str(exc).removeprefix('bad prices file: ')}") \
                from None
    prices.update(parse_prices(args.price))
    return prices or None


def with_tokens(verification: Any, args: argparse.Namespace, restore: Any = None) -> Any:
    """``verification`` with its token ledger, as the options ask."""
    return verification.with_tokens(prices=prices_of(args), rules=tuple(args.tokens_under), restore=restore)
