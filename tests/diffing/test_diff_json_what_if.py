"""``diff --json`` says, for each side, whether it runs a what-if rule, in the fields ``reconstruct --json`` uses."""

from __future__ import annotations

import json

import agent_inspect as ai
from agent_inspect.cli import main


def _json(capsys, *argv: str) -> dict:
    assert main(["diff", *argv, "--json", "--limit", "1"]) == 0
    return json.loads(capsys.readouterr().out)


def test_each_side_of_a_diff_says_whether_it_is_a_what_if(capsys) -> None:
    n04 = str(ai.samples.path("N04"))
    data = _json(capsys, f"{n04}@original", f"{n04}@fixed")
    assert main(["reconstruct", n04, "--rule", "fixed", "--json"]) == 0
    reconstructed = json.loads(capsys.readouterr().out)
    a, b = data["sides"]["a"], data["sides"]["b"]
    assert (a["rule"], a["what_if"], a["rule_label"]) == ("original", False, "original")
    assert (b["rule"], b["what_if"], b["rule_label"]) == ("fixed", True, reconstructed["rule_label"])
    assert b["rule_label"] == "fixed (what-if; 0.4 ships original)" and b["kind"] == "prediction"
    assert (a["label"], b["label"]) == (data["a"], data["b"])


def test_a_rule_given_to_every_side_and_a_side_without_a_rule(capsys) -> None:
    n04, markers = str(ai.samples.path("N04")), str(ai.samples.path("N04", "markers"))
    data = _json(capsys, f"{n04}@markers={markers}", f"{n04}@attempt=1", "--rule", "fixed")
    assert data["sides"]["a"]["what_if"] and data["sides"]["a"]["rule_label"] == "fixed (what-if; 0.4 ships original)"
    assert data["sides"]["b"] == {"label": data["b"], "kind": "attempt", "rule": None, "what_if": False,
                                  "rule_label": None, "runtime": None}


def test_a_result_diffed_keeps_its_settings_mark() -> None:
    log = ai.load(ai.samples.path("N04"))
    d = ai.diff(ai.predict(log, rule="fixed"), ai.reconstruct(log))
    sides = d.to_dict(limit=0)["sides"]
    assert sides["a"]["what_if"] and sides["a"]["rule_label"] == "fixed (what-if; 0.4 ships original)"
    assert not sides["b"]["what_if"] and sides["b"]["rule_label"] == "original"
