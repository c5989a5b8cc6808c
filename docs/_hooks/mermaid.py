"""MkDocs hook: serve Mermaid from the site itself, so the diagrams render offline.

Material loads Mermaid from unpkg.com unless a global ``mermaid`` already exists; this hook fetches one pinned
release from the npm registry (``npm pack``, cached in ``.docs-cache/mermaid/``), checks it against the pinned
integrity, and adds its ``dist/mermaid.min.js`` (and its licence) to the site as an ``extra_javascript``, which
runs before Material looks for the global.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import tarfile
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

VERSION = "11.17.2"   # Material 9.x asks for mermaid@11
INTEGRITY = "sha512-V6K3C8EBdEsPFZXSKMJe6ppQOENxuHARr9GvHX4hh47lAbhMRD9qf4oEK7LoaRQxULMa80/qt5gHO73aCleBBg=="
CACHE = Path(__file__).resolve().parents[2] / ".docs-cache" / "mermaid"
SCRIPT = f"assets/javascripts/mermaid-{VERSION}.min.js"
LICENSE = f"assets/javascripts/mermaid-{VERSION}.LICENSE.txt"


def _integrity(path: Path) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def mermaid_tarball() -> Path:
    """The pinned release's npm tarball, fetched once with ``npm pack`` and checked against ``INTEGRITY``."""
    tarball = CACHE / f"mermaid-{VERSION}.tgz"
    if not tarball.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise PluginError("the docs bundle Mermaid from the npm registry and need npm: apt-get install npm "
                              "(bash scripts/docs.sh does it when run as root)")
        CACHE.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([npm, "pack", f"mermaid@{VERSION}", "--pack-destination", str(CACHE), "--silent"],
                              capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0 or not tarball.exists():
            raise PluginError(f"npm pack mermaid@{VERSION} failed: {done.stderr.strip()[-2000:]}")
    if _integrity(tarball) != INTEGRITY:
        tarball.unlink()
        raise PluginError(f"mermaid-{VERSION}.tgz does not match the pinned integrity; removed it, build again")
    return tarball


def _member(archive: tarfile.TarFile, name: str) -> bytes:
    stream = archive.extractfile(f"package/{name}")
    if stream is None:
        raise PluginError(f"mermaid-{VERSION}.tgz has no package/{name}")
    return stream.read()


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    if SCRIPT not in [str(script) for script in config.extra_javascript]:
        config.extra_javascript.append(SCRIPT)
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    with tarfile.open(mermaid_tarball(), "r:gz") as archive:
        script, license_text = _member(archive, "dist/mermaid.min.js"), _member(archive, "LICENSE")
    files.append(File.generated(config, SCRIPT, content=script))
    files.append(File.generated(config, LICENSE, content=license_text))
    return files
