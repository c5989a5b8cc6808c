"""The documentation site built once per test process (strict), shared by the docs and browser tests."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

__all__ = ["REPO", "SITE", "build_site", "built_site"]

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "test-artifacts" / "docs-site"


def build_site(config: Path, site: Path, *, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of ``config`` into ``site``; the finished process (never raises on failure)."""
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], cwd=cwd, capture_output=True, text=True, timeout=900,
                          check=False)


@functools.cache
def built_site() -> Path:
    """The site of this checkout, built strictly into test-artifacts/docs-site (an artifact to look at), or the
    strict build scripts/test.sh made just before the tests (``$AGENT_INSPECT_DOCS_SITE``)."""
    prebuilt = os.environ.get("AGENT_INSPECT_DOCS_SITE")
    if prebuilt and (Path(prebuilt) / "index.html").is_file():
        return Path(prebuilt)
    done = build_site(REPO / "mkdocs.yml", SITE)
    if done.returncode != 0:
        raise AssertionError(f"mkdocs build --strict failed (exit {done.returncode}):\n{done.stderr[-6000:]}")
    return SITE
