"""Results never follow Python's string hash seed: the same log gives the same answer in every process."""

from __future__ import annotations

from tests.support.seeds import outputs_under_hash_seeds

# every sample, markers and whole log, both rules: the divergences (with their positions), evictions and outcomes
DIGEST = """
import agent_inspect as ai
for name in ai.samples.SAMPLES:
    log = ai.load(ai.samples.path(name))
    for markers in (None, ai.samples.markers(name)):
        for rule in ("original", "fixed"):
            r = ai.reconstruct(log, markers=markers, rule=rule)
            p = ai.predict(log, markers=markers, rule=rule)
            print(name, rule, r.divergences[["kind", "positions"]].to_dict("records"),
                  r.evictions.to_dict("records"), p.tasks["outcome"].tolist())
"""


def test_every_sample_answers_alike_under_two_hash_seeds() -> None:
    # the fixed rule's root-conflict positions on the production sample were (81, 79, 196) under some seeds
    first, second = outputs_under_hash_seeds(DIGEST, ["1", "2"])
    assert "root-conflict" in first and first == second
