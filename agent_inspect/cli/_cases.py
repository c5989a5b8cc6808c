"""``agent-inspect cases run PATH... [--rules original,fixed] [--json]``: run the case matrix."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from agent_inspect._errors import InspectError
from agent_inspect._glossary import plural

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "cases", help="run case files (docs/reference/cases.md) under divergence rules and check their expectations",
        description="Work with case files: recovery histories with expected outcomes per rule.")
    sub = parser.add_subparsers(dest="cases_command", required=True, metavar="{run}", parser_class=type(parser))
    run = sub.add_parser(
        "run", help="predict every case under every rule and compare with the expected outcomes",
        description="For each case and rule: the predicted outcomes in the spec's notation, the expected ones and "
                    "pass/fail. Exit 1 when any expectation fails.")
    run.add_argument("paths", nargs="+", help="case files (*.toml) or directories of them")
    run.add_argument("--rules", help="comma-separated rule names (default: the rules each case has expectations for)")
    run.add_argument("--json", action="store_true", help="one JSON array of results on stdout")
    run.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from agent_inspect.cases import CALL_RULE, build_case, load_cases, run_case
    from agent_inspect.rules import resolve_rule

    cases = load_cases(args.paths)
    if not cases:
        raise InspectError(f"no case files (*.toml) under {' '.join(args.paths)}")
    wanted = [r.strip() for r in args.rules.split(",") if r.strip()] if args.rules else None
    for name in wanted or ():
        resolve_rule(name)   # unknown names fail before any work, with the list of known rules
    results = []
    for case in cases:
        if case.call_case is not None and not case.log:
            results.append(run_case(case, CALL_RULE))
            continue
        built = build_case(case)
        for rule in wanted or case.rules or ["fixed"]:
            results.append(run_case(case, rule, built=built))
    failed = [r for r in results if not r.passed]
    if args.json:
        json.dump([r.to_dict() for r in results], sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        for r in results:
            mark = "PASS" if r.passed else "FAIL"
            kind = "" if r.expected_given else " (no expectation: checked for stale reuse only)"
            print(f"{mark} {r.case_id} {r.rule}{kind}")
            print(f"    predicted: {' '.join(r.predicted)}")
            if r.expected_given:
                print(f"    expected:  {' '.join(r.expected)}")
            for m in r.mismatches:
                print(f"    - {m}")
        print(f"{len(results) - len(failed)} passed, {len(failed)} failed ({plural(len(cases), 'case')})")
    return 1 if failed else 0
