"""``agent-inspect docs``: serves the built site on 127.0.0.1 and prints its URL; a missing site is one line."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from agent_inspect.cli import main
from tests.support.docs_site import built_site


@pytest.mark.slow
def test_serves_the_built_site_on_loopback_and_prints_the_url() -> None:
    site = built_site()
    proc = subprocess.Popen([sys.executable, "-m", "agent_inspect", "docs", "--site", str(site), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(2)]
        url = lines[1].split("open", 1)[1].strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/")
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.status == 200 and b"agent_inspect" in response.read()
        with urllib.request.urlopen(url + "reference/cli/", timeout=10) as response:
            assert b"agent-inspect docs" in response.read()
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_missing_site_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["docs", "--site", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bash scripts/docs.sh" in err
