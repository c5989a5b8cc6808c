"""The harness fails loudly (never skips) without Debian's chromium."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.jupyter import chromium_executable


def test_missing_chromium_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"apt-get install -y chromium.*never `playwright install`"):
        chromium_executable([None, str(tmp_path / "chromium")])


def test_system_chromium_is_found() -> None:
    assert Path(chromium_executable()).name.startswith("chromium")
