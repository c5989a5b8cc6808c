"""``agent-inspect rules check``: exit codes, JSON, saved counterexamples, user rules by module:ClassName."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import agent_inspect as ai
from agent_inspect.cases import load_cases, run_case
from agent_inspect.cli import main

BRANCH = ["--option", "tombstones=0", "--option", "branch_changes=1.0", "--option", "keys=2",
          "--option", "rounds=3", "--option", "subagents=0", "--option", "savepoint_target=first",
          "--option", "identical_children=0", "--option", "case_agents=0"]   # branch changes alone


def test_stale_reuse_exits_1_with_json_and_saved_cases(capsys, tmp_path):
    code = main(["rules", "check", "naive", "--n", "60", "--seed", "1", "--no-sweep", "--json", "--save", str(tmp_path),
                 *BRANCH])
    assert code == 1
    out = json.loads(capsys.readouterr().out)
    assert out["rule"] == "naive" and out["stale_reuses"] > 0 and not out["passed"]
    kinds = {c["kind"] for c in out["counterexamples"]}
    assert "stale-reuse" in kinds
    assert len(out["saved"]) == len(out["counterexamples"])
    stale = next(p for p in out["saved"] if "stale-reuse" in p)
    (case,) = load_cases(stale)
    assert run_case(case, "naive").stale


def test_safe_rule_exits_0_with_text(capsys):
    code = main(["rules", "check", "lookup-only", "--n", "60", "--seed", "1", "--no-sweep", *BRANCH])
    text = capsys.readouterr().out
    assert code == 0
    assert text.startswith("PASS rule lookup-only: 60 histories")


def test_bad_usage_exits_2(capsys):
    assert main(["rules", "check", "fixed", "--n", "2", "--option", "colour"]) == 2
    assert "NAME=VALUE" in capsys.readouterr().err
    assert main(["rules", "check", "fixed", "--n", "2", "--option", "colour=red"]) == 2
    assert "unknown history option" in capsys.readouterr().err
    assert main(["rules", "check", "nope", "--n", "2"]) == 2
    assert "unknown rule" in capsys.readouterr().err


def test_user_rule_by_module_and_class_from_the_working_directory(tmp_path):
    (tmp_path / "team_rules.py").write_text(
        "from agent_inspect.rules import NaiveRule\n"
        "class Careless(NaiveRule):\n"
        "    name = 'careless'\n")
    proc = subprocess.run([sys.executable, "-m", "agent_inspect", "rules", "check", "team_rules:Careless",
                           "--n", "5", "--seed", "2", "--json", "--no-minimize", *BRANCH],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    assert out["rule"] == "careless" and out["stale_reuses"] > 0


def test_a_broken_user_rule_exits_2_and_says_broken(tmp_path):
    (tmp_path / "team_rules.py").write_text(
        "from agent_inspect.rules import FixedRule\n"
        "class Boom(FixedRule):\n"
        "    name = 'boom'\n"
        "    def lookup(self, session, task):\n"
        "        raise RuntimeError('no rounds')\n")
    proc = subprocess.run([sys.executable, "-m", "agent_inspect", "rules", "check", "team_rules:Boom",
                           "--n", "3", "--seed", "4", "--no-minimize", *BRANCH],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout.startswith("BROKEN ") and "team_rules.py:5" in proc.stdout


def test_a_saved_counterexample_says_how_to_replay_it(capsys, tmp_path):
    """`--save` printed the path alone, and `cases run PATH` then ran the file under `fixed` (a counterexample
    names no expectation) and passed: the failure came back only with `--rules` and the checked rule's name."""
    code = main(["rules", "check", "naive", "--n", "60", "--seed", "1", "--no-sweep", "--save", str(tmp_path), *BRANCH])
    assert code == 1
    lines = [ln.strip() for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("replay: ")]
    stale = next(ln for ln in lines if "stale-reuse" in ln)
    command = stale.removeprefix("replay: ").split()
    assert command[:3] == ["agent-inspect", "cases", "run"] and command[-2:] == ["--rules", "naive"]
    assert main(command[1:]) == 1
    assert "FAIL " in capsys.readouterr().out
    # an avoidable rerun replays as a PASS (no expectation: stale reuse only), and the line says so
    assert main(["rules", "check", "original", "--n", "30", "--seed", "3", "--no-sweep", "--save",
                 str(tmp_path / "original")]) == 1
    lines = [ln.strip() for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("replay: ")]
    rerun = next(ln for ln in lines if "avoidable-rerun" in ln)
    assert rerun.endswith("(it passes: a case without expectations checks stale reuse only; its predicted items "
                          "show the avoidable-rerun)")


@pytest.mark.parametrize("option, says", [("tombstones=abc", "tombstones='abc' is a probability"),
                                          ("tombstones=nan", "tombstones=nan is a probability"),
                                          ("keys=abc", "keys='abc' must be a whole number"),
                                          ("keys=2.5", "keys=2.5 must be a whole number"),
                                          ("fanout=abc", "fanout='abc' must be a whole number, 0 or more")])
def test_an_option_value_that_is_no_number_is_one_line(option, says, capsys):
    # "tombstones=abc" was a ValueError traceback from float(); "keys=2.5" passed the check and crashed in random
    assert main(["rules", "check", "fixed", "--n", "2", "--option", option]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"history option {says}" in err


def test_a_whole_float_counts_as_its_number():
    assert ai.checker.HistoryOptions(keys=2.0).keys == 2
