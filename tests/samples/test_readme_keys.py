"""sample_logs/README.md names each sample's business keys as its log holds them (subagents_v4's K2 key by its
digest: a reader who took S05's or the subagents sample's key names had none to go by)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import agent_inspect as ai

README = Path(__file__).resolve().parents[2] / "sample_logs" / "README.md"


def _sections() -> dict[str, str]:
    text = README.read_text(encoding="utf-8")
    return {m.group(1): m.group(2) for m in re.finditer(r"^## `([^`]+)`.*?\n(.*?)(?=^## |\Z)", text, re.M | re.S)}


@pytest.mark.parametrize("name", list(ai.samples.SAMPLES))
def test_readme_names_the_keys_the_log_holds(name: str) -> None:
    keys = sorted(ai.load(ai.samples.path(name)).records["business_key"].dropna().astype(str).unique())
    listed = re.search(r"business keys? \(([^)]*)\)", _sections()[name])
    assert listed is not None, f"{name}: the README does not name its business keys"
    assert re.findall(r"`([^`]+)`", listed.group(1)) == keys[:3]


def test_subagents_v4_key_is_its_digest_not_a_key_text() -> None:
    section = _sections()["subagents_v4"]
    (key,) = ai.load(ai.samples.path("subagents_v4")).records["business_key"].dropna().unique()
    assert f"`{key}`" in section and "order-1" not in section
