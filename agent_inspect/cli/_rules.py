"""``agent-inspect rules check RULE [--n N] [--seed S] [--json]``: judge a rule on random histories."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any

from agent_inspect._errors import InspectError
from agent_inspect._glossary import plural
from agent_inspect.cli._numbers import count

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "rules", help="check a divergence rule on random recovery histories",
        description="Work with divergence rules.")
    sub = parser.add_subparsers(dest="rules_command", required=True, metavar="{check}", parser_class=type(parser))
    chk = sub.add_parser(
        "check", help="judge a rule on random recovery histories; exit 1 on any stale reuse",
        description="Generate random recovery histories (written by the replay executor as production writes "
                    "them), recover each under RULE and count stale reuses and avoidable reruns. Each failure kind "
                    "gets a minimized counterexample case file. Exit 1 when a stale reuse is found or the rule "
                    "raises.")
    chk.add_argument("rule", help="a built-in rule name (e.g. fixed, original:kafka-k1), or a DivergenceRule "
                                  "subclass as module:ClassName (from the current directory) or "
                                  "path/to/file.py:ClassName")
    chk.add_argument("--n", type=count, default=200, help="number of random histories (default 200)")
    chk.add_argument("--seed", type=int, default=0, help="seed of the history sequence (default 0)")
    chk.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                     help="a history generator option (HistoryOptions), e.g. tombstones=1.0 or "
                          "production_rules=fixed; repeatable")
    chk.add_argument("--save", metavar="DIR", help="write each counterexample case file into DIR")
    chk.add_argument("--no-minimize", action="store_true", help="report counterexamples without shrinking them")
    chk.add_argument("--no-sweep", action="store_true",
                     help="judge the random histories only, not also the matrix sweep (one history per bundled case)")
    chk.add_argument("--json", action="store_true", help="the report as one JSON object on stdout")
    chk.set_defaults(func=_check)


def _value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _options(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise InspectError(f"--option {item!r} is not NAME=VALUE (e.g. --option tombstones=1.0)")
        out[name.strip()] = _value(value.strip())
    return out


def _check(args: argparse.Namespace) -> int:
    from pathlib import Path

    from agent_inspect.checker import check

    report = check(args.rule, n=args.n, seed=args.seed, minimize=not args.no_minimize, sweep=not args.no_sweep,
                   **_options(args.option))
    saved = []
    if args.save:
        out = Path(args.save)
        out.mkdir(parents=True, exist_ok=True)
        saved = [str(c.save(out)) for c in report.counterexamples]
    if args.json:
        data = report.to_dict()
        if saved:
            data["saved"] = saved
        json.dump(data, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print(("PASS " if report.passed else "BROKEN " if report.verdict == "broken" else "FAIL ") + report.summary())
        for i, c in enumerate(report.counterexamples):
            print(f"\n{c.kind}: history seed {c.history_seed}; minimized to {plural(c.attempts, 'attempt')}, "
                  f"{plural(c.rounds, 'round')}, {plural(c.records, 'record')}; "
                  + (f"a known limit of log-only rules: {c.known_limit}" if c.known_limit else "not a known limit"))
            for item in c.items:
                print(f"    - {item}")
            if c.known_limit:
                print("    details: spec §10.3 (known limits)")
            if saved:
                print(f"    saved: {saved[i]}")
                # a counterexample names no expectation: without --rules, cases run would judge it under fixed
                replay = f"agent-inspect cases run {shlex.quote(saved[i])} --rules {shlex.quote(args.rule)}"
                # ...and it checks stale reuse alone: another kind replays as a PASS whose items show the finding
                print(f"    replay: {replay}" if c.kind == "stale-reuse" else
                      f"    replay: {replay} (it passes: a case without expectations checks stale reuse only; its "
                      f"predicted items show the {c.kind})")
            else:
                print("    " + c.to_toml().replace("\n", "\n    ").rstrip())
    # a rule that raises or returns the wrong type is bad input (exit 2), not an unsafe rule (exit 1)
    return 0 if report.passed else 2 if report.verdict == "broken" else 1
