"""Every count the package prints has its noun in the right number: "1 body re-run", never "1 bodies" or "file(s)".

Counts are written with ``agent_inspect._glossary.plural`` (``count_words`` for the noun alone); the tests read every
module's string literals and conditional expressions, and the widgets' scripts, for plurals written by hand.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect.cli._scan import by_function_line, rule_counts_line

PACKAGE = Path(__file__).parents[2] / "agent_inspect"
_HEDGE = re.compile(r"[a-z](?<!http)\(s\)")   # "file(s)"; a call such as input_event(s) is code, not a literal
_JS_SUFFIX = re.compile(r"\?\s*([\"'`])(e?s)?\1\s*:\s*([\"'`])(e?s)?\3")     # n === 1 ? "" : "s"


def test_a_scan_rules_line_says_one_body_and_two_bodies() -> None:
    one = dict(rerun=1, resumed=0, calls=1, evictions=1, stale_reuse_risk=1, crashed_keys=1)
    assert rule_counts_line(one) == ("1 body re-run, 1 durable call re-executed, 1 eviction, 1 reuse at risk, "
                                     "1 key crashes")
    two = dict(rerun=1, resumed=1, calls=2, evictions=0, stale_reuse_risk=2, crashed_keys=1200)
    assert rule_counts_line(two) == ("2 bodies re-run, 2 durable calls re-executed, 0 evictions, 2 reuses at risk, "
                                     "1,200 keys crash")


def test_a_scan_rules_line_counts_the_sub_agent_calls_its_by_function_line_lists() -> None:
    """The production sample under original: 382 durable calls and 9 sub-agent calls; the "by function" line
    under it names the sub-agent's 9 too, so the totals must (they summed to 382 beside 391 listed)."""
    counts = dict(rerun=464, resumed=0, calls=382, calls_subagent=9, evictions=464, stale_reuse_risk=0,
                  crashed_keys=0)
    assert rule_counts_line(counts) == ("464 bodies re-run, 382 durable calls re-executed, 9 sub-agent calls sent "
                                        "again, 464 evictions, 0 reuses at risk, 0 keys crash")
    one = {**counts, "calls_subagent": 1}
    assert "1 sub-agent call sent again" in rule_counts_line(one)
    assert "sub-agent" not in rule_counts_line({**counts, "calls_subagent": 0})


def _singular_is_body(test: ast.expr) -> bool | None:
    """Whether ``x if n == 1 else y`` gives the singular first (``n == 1``: True; ``n != 1``, ``n > 1``: False)."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op = test.ops[0]
        if isinstance(op, ast.Eq):
            return True
        if isinstance(op, (ast.NotEq, ast.Gt, ast.GtE)):
            return False
    return None


def _noun_in_two_numbers(one: str, many: str) -> bool:
    """``one`` and ``many`` are a noun's singular and plural ("", "s"; "round", "rounds"; "task was", "tasks
    were"); a verb agreeing with a count is the other way round ("agrees" for one, "agree" for many)."""
    one, many = one.strip(), many.strip()
    if one == "" and many in ("s", "es"):
        return True
    first, other = (one.split() or [""])[0], (many.split() or [""])[0]
    return bool(first) and other in (first + "s", first + "es")


def _hedges(text: str) -> bool:
    """"file(s)" in prose; not ``code(s)`` in double backticks, nor http(s)."""
    return bool(_HEDGE.search(re.sub(r"``.*?``", "", text, flags=re.S)))


def hand_written_plurals(source: str, name: str = "<text>") -> list[str]:
    """The lines of Python ``source`` that write a plural by hand: a literal hedging with "(s)", or a choice
    between a noun's two numbers (``'s' if n != 1 else ''``, ``'divergence' if n == 1 else 'divergences'``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _hedges(node.value):
            found.append(f"{name}:{node.lineno}: {node.value.strip()[:60]!r}")
        elif isinstance(node, ast.IfExp) and isinstance(node.body, ast.Constant) and \
                isinstance(node.orelse, ast.Constant) and isinstance(node.body.value, str) and \
                isinstance(node.orelse.value, str):
            body, orelse, first = node.body.value, node.orelse.value, _singular_is_body(node.test)
            pairs = [(body, orelse)] if first else [(orelse, body)] if first is False else \
                [(body, orelse), (orelse, body)]
            if any(_noun_in_two_numbers(one, many) for one, many in pairs):
                found.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_check_finds_each_way_of_writing_a_plural_by_hand() -> None:
    assert len(hand_written_plurals(
        "a = f\"{n} round{'s' if n != 1 else ''}\"\n"
        "b = f\"{n} {'divergence' if n == 1 else 'divergences'}\"\n"
        "c = f\"{n} task{'' if n == 1 else 's'}\"\n"
        "d = f\"{'task was' if n == 1 else 'tasks were'}\"\n"
        "e = 'read {n} file(s)'\n")) == 5
    assert hand_written_plurals("a = f\"{plural(n, 'round')} {'agrees' if n == 1 else 'agree'} {event(s)}\"\n"
                                "b = 'an http(s) URL; ``history(s)`` rebuilds it'\n") == []


def test_no_user_facing_text_in_the_package_writes_a_plural_by_hand() -> None:
    found = [hit for path in sorted(PACKAGE.rglob("*.py"))
             for hit in hand_written_plurals(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE)))]
    scripts = [f"{path.name}:{n}: {line.strip()}" for path in sorted(PACKAGE.rglob("*.js"))
               for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
               if _JS_SUFFIX.search(line) or re.search(r"[\"'`][^\"'`]*[a-z]\(s\)", line)]
    assert found + scripts == []


def test_a_diff_past_its_limit_counts_the_rest_as_verify_does(capsys: pytest.CaptureFixture[str]) -> None:
    # it printed "  … 105 more (--limit)": no "and", and no separator past 999, unlike verify's "… and N more"
    from agent_inspect.cli import main

    path = str(ai.samples.path("production"))
    assert main(["diff", path, f"{path}@fixed", "--limit", "0"]) == 0
    assert capsys.readouterr().out.endswith("\ndiffering executions:\n  … and 105 more (--limit)\n")


def test_a_scan_by_function_line_counts_with_separators_and_names_what_it_leaves_out() -> None:
    # the counts printed "tools.search 1203"
    calls = {"tools.search": 1_203, "tools.order": 40, "a": 3, "b": 2, "c": 1, "d": 1, "e": 1}
    assert by_function_line(calls) == ("by function: tools.search 1,203, tools.order 40, a 3, b 2, c 1, and 2 more "
                                       "functions")
    assert by_function_line({"tools.search": 1}) == "by function: tools.search 1"
