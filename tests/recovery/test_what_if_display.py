"""A what-if rule says so wherever a result shows its rule: the notebook display and the repr of a
prediction, a reconstruction and the replay executor (issue #21: "a what-if rule is always labelled")."""

from __future__ import annotations

import re

import pytest

import agent_inspect as ai


@pytest.fixture(scope="module")
def n04():
    return ai.load(ai.samples.path("N04")), ai.samples.markers("N04")


def _text(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def _results(log, markers, rule):
    executor = ai.ReplayExecutor(log, markers=markers, rule=rule)
    executor.run()
    return {"predict": ai.predict(log, markers=markers, rule=rule),
            "reconstruct": ai.reconstruct(log, markers=markers, rule=rule), "executor": executor}


def test_a_what_if_rule_is_labelled_in_every_display(n04) -> None:
    for verb, result in _results(*n04, "fixed").items():
        assert "what-if" in _text(result._repr_html_()), verb
        assert "what-if" in repr(result), verb


def test_the_shipped_rule_is_not_called_a_what_if(n04) -> None:
    for verb, result in _results(*n04, None).items():
        assert "what-if" not in _text(result._repr_html_()), verb
        assert "what-if" not in repr(result), verb
        assert "original" in _text(result._repr_html_()), verb


def test_a_prediction_repr_is_a_summary_not_every_cache_event() -> None:
    log = ai.load(ai.samples.path("production"))
    prediction = ai.predict(log, markers=ai.samples.markers("production"))
    text = repr(prediction)
    assert len(text) < 400, text[:600]
    assert "643 tasks" in text and "RERUN 464" in text and "37 divergences" in text


def test_verify_names_the_rule_the_runtime_ships_like_every_other_result(n04) -> None:
    log, markers = n04
    verification = ai.verify(log, ai.samples.path("N04", "trace"), markers=markers, rule="fixed")
    assert verification.rule_label == ai.predict(log, markers=markers, rule="fixed").rule_label
    assert "ships original" in verification.summary_text()


def test_a_given_store_flavour_shows_in_the_rule_label(n04, capsys) -> None:
    from agent_inspect.cli import main

    log, markers = n04
    label = "original:kafka-k1 (what-if; 0.4 ships original:segment)"     # N04's K1.5 keys run the segment store
    assert ai.Recovery.for_log(log, store_flavour="kafka-k1").rule_label == label
    assert ai.predict(log, markers=markers, rule="original:kafka-k1").rule_label == label
    assert ai.Recovery.for_log(log).rule_label == "original"
    assert main(["reconstruct", str(ai.samples.path("N04")), "--store-flavour", "segment"]) == 0
    assert "\nrule original:segment: 10 records" in capsys.readouterr().out


def test_a_given_store_flavour_shows_in_the_report(n04, tmp_path) -> None:
    log, markers = n04
    html = ai.write_report(ai.reconstruct(log, markers=markers, store_flavour="segment"), tmp_path / "r.html")
    assert "· rule original:segment ·" in html.read_text(encoding="utf-8")     # the report's header line
