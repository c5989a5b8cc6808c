"""``agent-inspect demo --cli`` shows the 0.4+ sample beside the production one (issue #12 item 9)."""

from __future__ import annotations

import json

import pytest

from agent_inspect.cli import main


def test_demo_cli_shows_the_v4_sample_beside_the_production_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--cli", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["source"].endswith("production.jsonl")                      # the production sample, as before
    v4 = data["beside"]["production_v4"]
    assert v4["value_formats"] == {"V4": v4["records"]} and v4["runtime"]["name"] == "main"
    assert v4["statuses"]["refresh"] > 0
    restore = v4["restore"]
    assert restore["tasks"][0] == {"action": "chat", "outcome": "RESUME"}
    assert not [c for c in restore["calls"] if c.startswith("call:")]      # zero repeated calls
    assert restore["calls"]["replayed:route:support-router"] == 1
    assert restore["calls"]["replayed:chat:support-router:gpt-large"] == 1   # the failed primary, re-raised

    assert main(["demo", "--cli"]) == 0
    text = capsys.readouterr().out
    assert text.index("reconstruct under rule 'fixed'") < text.index("the 0.4+ sample")
    assert "runtime          main" in text and "chat             RESUME" in text
    assert "durable call run again   none" in text
    assert f"records          {v4['records']:,}" in text and f"value formats    V4: {v4['records']:,}" in text


def test_the_demo_ledger_names_resubmitted_subagent_calls_apart_from_executed_ones() -> None:
    from agent_inspect.cli._demo import _ledger_rows

    rows = _ledger_rows([{"subagent:s0#s0-1": 1, "resubmit:s0#s0-2": 2, "resubmit:s0#s0-3": 1}, {}])
    assert rows == [("sub-agent calls", [1, 0]), ("sub-agent calls re-submitted", [3, 0])]


def test_the_demo_labels_the_fixed_rule_a_what_if(capsys) -> None:
    from agent_inspect import samples

    assert main(["demo", "--cli", "--sample", str(samples.path("N04")), "--markers", '{"0": 0}']) == 0
    text = capsys.readouterr().out
    assert "== reconstruct under rule 'original': 1 divergence" in text
    assert "== reconstruct under rule 'fixed' (what-if; 0.4 ships original): 0 divergences" in text
    assert "== re-execution ledger: what the restore runs again (fixed: a what-if)" in text


def test_the_demo_takes_the_what_if_mark_from_the_rule_mark(capsys, monkeypatch) -> None:
    """The mark after the rule's name is the rule mark's, not text cut off the label."""
    import agent_inspect.log._facts as facts
    from agent_inspect import samples

    monkeypatch.setattr(facts.RuleMark, "mark", property(lambda m: f" [what-if: {m.runtime} ships {m.ships}]"
                                                          if m.what_if else ""))
    monkeypatch.setattr(facts.RuleMark, "label", property(lambda m: f"rule {m.name}{m.mark}"))   # no slice fits
    assert main(["demo", "--cli", "--sample", str(samples.path("N04")), "--markers", '{"0": 0}']) == 0
    text = capsys.readouterr().out
    assert "== reconstruct under rule 'original': 1 divergence" in text
    assert "== reconstruct under rule 'fixed' [what-if: 0.4 ships original]: 0 divergences" in text


def test_markers_without_a_sample_are_refused_not_dropped(capsys: pytest.CaptureFixture[str]) -> None:
    # the production sample was analysed under its own markers and the given ones were ignored without a word
    assert main(["demo", "--cli", "--markers", '{"0": 1}']) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--markers goes with --sample" in err


def test_a_sample_is_named_as_samples_list_names_it(capsys: pytest.CaptureFixture[str]) -> None:
    # "--sample G01" said "cannot open 'G01': No such file or directory"
    assert main(["demo", "--cli", "--json", "--sample", "G01"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["source"].endswith("G01.jsonl") and data["markers"] == [{"0": 0}]
    assert main(["demo", "--cli", "--json", "--sample", "G01", "--markers", '{"0": 2}']) == 0
    assert json.loads(capsys.readouterr().out)["markers"] == {"0": 2}


@pytest.mark.parametrize("options, says", [
    (["--sample", "N04"], "--sample goes with --cli"),
    (["--markers", '{"0": 1}'], "--markers goes with --cli"),
    (["--sample", "N04", "--markers", '{"0": 1}'], "--sample and --markers go with --cli"),
])
def test_a_sample_without_cli_is_a_usage_error_before_jupyterlab_starts(options, says, capsys, monkeypatch) -> None:
    # "demo --sample N04" started JupyterLab on the notebooks and dropped the option without a word
    from agent_inspect.cli import _demo

    def no_lab(args: object) -> int:
        raise AssertionError("JupyterLab was started")

    monkeypatch.setattr(_demo, "_jupyterlab", no_lab)
    monkeypatch.setattr(_demo, "_cli_analysis", lambda *a, **k: 0)   # the fallback when JupyterLab is missing
    assert main(["demo", *options]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err


def test_a_sample_that_is_neither_a_file_nor_a_sample_names_the_samples(capsys: pytest.CaptureFixture[str]) -> None:
    # "--sample nosuch" said "cannot open 'nosuch': No such file or directory" and named no sample
    assert main(["demo", "--cli", "--sample", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'nosuch' is neither a file nor a sample" in err, err
    assert "N04, N07, G01" in err and "agent-inspect samples list" in err
