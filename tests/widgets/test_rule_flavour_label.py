"""The views name a rule as every verb does, with its store flavour: a reconstruction under ``original:kafka-k1``
is labelled ``original:kafka-k1`` in the timeline's and graph's divergence hovers, the key history and a diff side.
They took the rule's bare ``name`` ("original"), so a flavour picked as a what-if read as the shipped rule."""

from __future__ import annotations

import agent_inspect as ai
from agent_inspect.diffing import as_side
from agent_inspect.history._graph_data import load_key
from agent_inspect.widgets._graph import _key_divergences
from agent_inspect.widgets._timeline import _divergences_of


def test_a_rule_s_store_flavour_is_in_every_view_s_label() -> None:
    log = ai.load(ai.samples.path("production_k1"))
    recon = ai.reconstruct(log, markers=ai.samples.markers("production_k1"), rule="original:kafka-k1")
    key = recon.divergences["business_key"].iloc[0]
    assert {d["rule"] for d in _key_divergences(recon, key)} == {"original:kafka-k1"}
    frame = recon.records[recon.records["business_key"] == key]
    hovers = [facts["title"] for *_, facts in _divergences_of(recon, key, frame)]
    assert hovers and all("rule original:kafka-k1" in title for title in hovers)
    assert load_key(recon, key).rule == "original:kafka-k1"
    assert as_side(recon).rule == "original:kafka-k1"
