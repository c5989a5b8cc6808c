"""The documentation site built once per test process (strict), shared by the docs and browser tests."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["REPO", "SITE", "SiteBuild", "broken_site_config", "build_site", "built_site", "prebuilt_site",
           "start_site_build"]

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "test-artifacts" / "docs-site"


def build_site(config: Path, site: Path, *, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of ``config`` into ``site``; the finished process (never raises on failure)."""
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], cwd=cwd, capture_output=True, text=True, timeout=900,
                          check=False)


@dataclass
class SiteBuild:
    """A ``mkdocs build --strict`` running in the background, its output in ``log``."""

    proc: subprocess.Popen[bytes]
    log: Path

    def wait(self, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        """The finished build (never raises on a failed build); its output is the ``stderr``."""
        try:
            code = self.proc.wait(timeout)
        finally:
            self.stop()
        return subprocess.CompletedProcess(self.proc.args, code, "", self.log.read_text(errors="replace"))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def start_site_build(config: Path, site: Path, *, cwd: Path = REPO) -> SiteBuild:
    """``mkdocs build --strict`` of ``config`` into ``site``, started without waiting for it."""
    log = site.with_name(site.name + ".log")
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                                 "--site-dir", str(site)], cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    return SiteBuild(proc, log)


def broken_site_config(scratch: Path) -> Path:
    """The site's configuration on a copy of docs/ with one broken cross-reference and one broken link."""
    docs = scratch / "docs"
    shutil.copytree(REPO / "docs", docs, ignore=shutil.ignore_patterns("spec", "__pycache__"))
    guide = docs / "guides" / "read-a-diff.md"
    guide.write_text(guide.read_text(encoding="utf-8")
                     + "\nSee [`nothing`][agent_inspect.no_such_name] and [a page](no-such-page.md).\n",
                     encoding="utf-8")
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    config = config.replace("docs_dir: docs", f"docs_dir: {docs}") \
                   .replace("- docs/_hooks/generate.py", f"- {REPO / 'docs' / '_hooks' / 'generate.py'}") \
                   .replace("- docs/_hooks/rst_roles.py", f"- {REPO / 'docs' / '_hooks' / 'rst_roles.py'}") \
                   .replace('paths: ["."]', f'paths: ["{REPO}"]')
    (scratch / "mkdocs.yml").write_text(config, encoding="utf-8")
    return scratch / "mkdocs.yml"


def prebuilt_site() -> Path | None:
    """The strict build scripts/test.sh made just before the tests (``$AGENT_INSPECT_DOCS_SITE``), if any."""
    prebuilt = os.environ.get("AGENT_INSPECT_DOCS_SITE")
    if prebuilt and (Path(prebuilt) / "index.html").is_file():
        return Path(prebuilt)
    return None


@functools.cache
def built_site() -> Path:
    """The site of this checkout, built strictly into test-artifacts/docs-site (an artifact to look at), or the
    strict build scripts/test.sh made just before the tests (``$AGENT_INSPECT_DOCS_SITE``)."""
    prebuilt = prebuilt_site()
    if prebuilt is not None:
        return prebuilt
    done = build_site(REPO / "mkdocs.yml", SITE)
    if done.returncode != 0:
        raise AssertionError(f"mkdocs build --strict failed (exit {done.returncode}):\n{done.stderr[-6000:]}")
    return SITE
