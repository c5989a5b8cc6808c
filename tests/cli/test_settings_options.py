"""Every command that runs a recovery takes the same settings group, with the same names, choices and defaults."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import pytest

import agent_inspect as ai
from agent_inspect.cli import build_parser, main
from agent_inspect.cli._settings import (
    CALL_MATCHING_CHOICES,
    KAFKA_PENDING_CHOICES,
    RUNTIME_CHOICES,
    STORE_FLAVOUR_CHOICES,
    recovery_from_args,
)
from agent_inspect.log import RUNTIMES
from agent_inspect.recovery import STORE_FLAVOURS, CallMatching
from agent_inspect.store import KAFKA_PENDING

COMMANDS = ("reconstruct", "explain", "verify", "report", "scan", "diff")
SETTINGS = ("--rule", "--markers", "--runtime", "--store-flavour", "--kafka-pending", "--call-matching")
ROOT = Path(__file__).parents[2]


def test_the_choices_are_the_packages_own() -> None:
    assert RUNTIME_CHOICES == ("auto", *RUNTIMES) and STORE_FLAVOUR_CHOICES == STORE_FLAVOURS
    assert KAFKA_PENDING_CHOICES == KAFKA_PENDING and CALL_MATCHING_CHOICES == get_args(CallMatching)


def test_every_recovery_command_has_the_same_group() -> None:
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices  # type: ignore[attr-defined]
    shapes = set()
    for name in COMMANDS:
        actions = {a.option_strings[0]: a for a in sub[name]._actions if a.option_strings}
        assert set(SETTINGS) <= set(actions), name
        shapes.add(tuple((o, actions[o].default, tuple(actions[o].choices or ())) for o in SETTINGS))
    assert len(shapes) == 1 and all(default is None for _, default, _ in next(iter(shapes)))


def test_the_group_resolves_like_the_api() -> None:
    log = ai.load(ai.samples.path("N04"))
    parser = build_parser()
    args = parser.parse_args(["reconstruct", "x", "--markers", f"@{ai.samples.path('N04', 'markers')}",
                              "--rule", "fixed", "--runtime", "main", "--call-matching", "function-id"])
    got = recovery_from_args(args, log)
    want = ai.Recovery.for_log(log, rule="fixed", markers=ai.samples.markers("N04"), runtime="main",
                               call_matching="function-id")
    assert got.what_if and got.as_dict() == want.as_dict()   # (rule instances compare by identity)
    default = recovery_from_args(parser.parse_args(["reconstruct", "x"]), log)
    assert default.as_dict() == ai.Recovery.for_log(log).as_dict() and not default.what_if


def test_what_ifs_are_labelled_in_the_output(capsys: pytest.CaptureFixture[str]) -> None:
    src = str(ROOT / "sample_logs" / "N04.jsonl")
    assert main(["reconstruct", src, "--rule", "fixed", "--no-ledger"]) == 0
    assert "rule fixed (what-if; 0.4 ships original)" in capsys.readouterr().out
    assert main(["reconstruct", src, "--no-ledger", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["rule"] == "original" and report["what_if"] is False
    assert report["settings"]["provenance"]["rule"] == "original: the rule 0.4 ships"
    with pytest.raises(SystemExit):
        main(["reconstruct", src, "--store-flavour", "nope"])
    assert main(["reconstruct", src, "--rule", "fixed", "--store-flavour", "segment"]) == 2
    # in the option's words: a shell user passes no store_flavour= keyword
    assert capsys.readouterr().err.splitlines()[-1] == ("agent-inspect: --store-flavour segment applies to the original rule only, "
                                                        "not 'fixed'")
    with pytest.raises(ai.RecoveryError, match=r"^store_flavour='segment' applies to the original rule only"):
        ai.Recovery.for_log(ai.load(src), rule="fixed", store_flavour="segment")


def test_a_given_runtime_reads_naturally(capsys: pytest.CaptureFixture[str]) -> None:
    # "runtime 0.3 (given: runtime='0.3' was given)": the evidence said "given" again, in Python's words
    production = Path(ai.samples.path("production"))
    assert main(["reconstruct", str(production), "--runtime", "0.3",
                 "--markers", f"@{ai.samples.path('production', 'markers')}"]) == 0
    assert "runtime 0.3 (given: not inferred from the records)\n" in capsys.readouterr().out
    settings = ai.Recovery.resolve(ai.load(production), runtime="0.3")
    assert settings.provenance["runtime"] == "0.3: given (not inferred from the records)"
