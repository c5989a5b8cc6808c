"""An original-rule store flavour other than the one the log's store runs is a what-if, in every verb (spec §8.2:
K1 keys on Kafka run "kafka-k1", on Fluss "fluss-k1", K1.5 and later "segment"); the default is never one."""

from __future__ import annotations

import json

import pytest

import agent_inspect as ai
from agent_inspect.cli import main


@pytest.fixture(scope="module")
def production():
    return ai.load(ai.samples.path("production")), ai.samples.markers("production")


def test_the_log_says_which_store_flavour_its_runtime_runs(production) -> None:
    log, _ = production
    assert log.runtime().store_flavour == "segment"                    # K1.5 keys
    assert ai.load(ai.samples.path("production_k1")).runtime().store_flavour == "kafka-k1"   # K1 keys on Kafka
    assert ai.log.store_flavour("K1", "fluss") == "fluss-k1" and ai.log.resolve_runtime("0.4").store_flavour is None
    assert ai.log.resolve_runtime("0.4", log).store_flavour == "segment"


def test_a_flavour_the_log_does_not_run_is_a_what_if(production) -> None:
    log, markers = production
    label = "original:kafka-k1 (what-if; 0.4 ships original:segment)"
    for given in ({"rule": "original:kafka-k1"}, {"store_flavour": "kafka-k1"},
                  {"rule": ai.rules.OriginalRule(flavour="kafka-k1")}):
        settings = ai.Recovery.for_log(log, markers=markers, **given)
        assert settings.what_if and settings.rule_label == label, given
        assert settings.provenance["rule"] == f"{label}: given"
    assert ai.log.rule_label("original:kafka-k1", log.runtime()) == label
    row = ai.predict(log, markers=markers).tasks.iloc[0]
    task = (row["key"], int(row["seq"]), row["action"])
    assert ai.predict(log, markers=markers, rule="original:kafka-k1").rule_label == label
    assert ai.reconstruct(log, markers=markers, rule="original:kafka-k1").rule_label == label
    assert ai.explain(log, *task, markers=markers, rule="original:kafka-k1").what_if
    d = ai.diff(ai.diffing.select(log, markers=markers, rule="original:segment"),
                ai.diffing.select(log, markers=markers, rule="original:kafka-k1"))
    assert not d.a.what_if and d.b.what_if and "@predict=original:kafka-k1@markers={0: 248, " in d.b.label
    assert d.b.label.endswith(label.removeprefix("original:kafka-k1"))


def test_the_log_s_own_flavour_and_the_default_are_no_what_if(production) -> None:
    log, markers = production
    for given in ({}, {"rule": "original"}, {"rule": "original:segment"}, {"store_flavour": "segment"}):
        settings = ai.Recovery.for_log(log, markers=markers, **given)
        assert not settings.what_if and "what-if" not in settings.rule_label, given
    k1 = ai.load(ai.samples.path("production_k1"))
    assert not ai.Recovery.for_log(k1, rule="original:kafka-k1").what_if
    segment = ai.Recovery.for_log(k1, rule="original:segment")
    assert segment.what_if and segment.rule_label == "original:segment (what-if; 0.4 ships original:kafka-k1)"


def test_the_cli_labels_a_flavour_what_if_in_text_and_json(capsys) -> None:
    path = str(ai.samples.path("production"))
    assert main(["reconstruct", path, "--store-flavour", "kafka-k1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["what_if"] and data["rule_label"] == "original:kafka-k1 (what-if; 0.4 ships original:segment)"
    assert main(["diff", f"{path}@original:segment", f"{path}@original:kafka-k1", "--limit", "0"]) == 0
    out = capsys.readouterr().out
    assert "b: " + path + "@predict=original:kafka-k1 (what-if; 0.4 ships original:segment)\n" in out
    assert "a: " + path + "@predict=original:segment\n" in out


def test_the_prediction_view_labels_a_flavour_what_if(production) -> None:
    log, markers = production
    view = ai.widgets.PredictionView(ai.predict(log, markers=markers, store_flavour="kafka-k1"))
    assert "original:kafka-k1 (what-if; 0.4 ships original:segment)" in view.summary.value
