from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # `tests.report.probe_log` must import however pytest was started
    sys.path.insert(0, str(REPO))

from tests.report.probe_log import write_probe_log  # noqa: E402


@pytest.fixture(scope="session")
def probe_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_probe_log(tmp_path_factory.mktemp("probe") / "probe.jsonl")


@pytest.fixture(scope="session")
def probe_log(probe_path: Path):
    import agent_inspect as ai

    return ai.load(probe_path)
