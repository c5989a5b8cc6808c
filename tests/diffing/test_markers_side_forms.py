"""A diff side's ``@markers=`` takes every form ``--markers`` takes, through the same reader: ``@FILE`` (before: the
``@`` split the side and it failed "cannot open"), ``FILE``, JSON (before: "cannot read the markers file") and a
checkpoint folder."""

from __future__ import annotations

from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect import InspectError

CHECKPOINT = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints" / "production" / "checkpoints"


def test_every_markers_form_gives_one_side() -> None:
    log, sample = str(ai.samples.path("production")), str(ai.samples.path("production", "markers"))
    given = ai.diffing.select(log, markers=ai.samples.markers("production"))
    inline = '[{"0": 248, "1": 245, "2": 215, "3": 444}]'
    for value in (sample, f"@{sample}", inline, str(CHECKPOINT), f"@{CHECKPOINT}"):
        side = ai.diffing.select(f"{log}@markers={value}")
        assert side.label == given.label, value
        assert ai.diff(side, given).empty, value
    assert ai.diffing.parse_selector(f"{log}@markers=@{sample}@key=user-0011").key == "user-0011"


@pytest.mark.parametrize("value, message", [("@/no/such/file.json", "@markers file '/no/such/file.json' cannot be read"),
                                            ("/no/such/file.json", "@markers file '/no/such/file.json' cannot be read"),
                                            ("[{0: 1}]", "@markers is not valid JSON")])
def test_a_bad_markers_side_says_what_to_pass(value: str, message: str) -> None:
    with pytest.raises(InspectError, match=message):
        ai.diffing.select(f"{ai.samples.path('production')}@markers={value}")
