"""A script that calls ``ai.scan`` on a LocalCluster needs ``if __name__ == "__main__":`` (the workers import it
again; unguarded it fails with "Nanny failed to start"): the docstring, the README and the guide say so."""

from __future__ import annotations

from pathlib import Path

import agent_inspect as ai

ROOT = Path(__file__).parents[2]
GUARD = 'if __name__ == "__main__":'


def test_the_scan_docs_show_the_main_guard() -> None:
    assert GUARD in (ai.scan.__doc__ or "")
    for page in ("README.md", "docs/guides/scan-a-topic.md"):
        assert GUARD in (ROOT / page).read_text(encoding="utf-8"), page
