"""The documentation site: it builds strictly, documents every public name, and every internal link resolves."""

from __future__ import annotations

import html.parser
import importlib
import inspect
import posixpath
import re
import zlib
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.support.docs_site import SiteBuild, built_site

pytestmark = pytest.mark.slow


def _inventory(site: Path) -> dict[str, str]:
    """objects.inv (Sphinx v2 format, written by mkdocstrings): identifier -> page URL."""
    data = (site / "objects.inv").read_bytes()
    header_end = 0
    for _ in range(4):                       # four text lines, then the zlib stream
        header_end = data.index(b"\n", header_end) + 1
    entries: dict[str, str] = {}
    for line in zlib.decompress(data[header_end:]).decode("utf-8").splitlines():
        match = re.match(r"(?x)(.+?)\s+(\S+)\s+(-?\d+)\s+(\S+)\s+(.*)", line)
        if match and match.group(2).startswith("py:"):
            entries[match.group(1)] = match.group(4)
    return entries


def _resolve(identifier: str) -> object:
    parts = identifier.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise LookupError(identifier)


def _public_surface() -> list[tuple[str, str]]:
    import agent_inspect

    out = []
    for package in ["agent_inspect", *(f"agent_inspect.{n}" for n in agent_inspect._SUBMODULES),
                    "agent_inspect.recovery.engine"]:
        module = importlib.import_module(package)
        out += [(package, n) for n in module.__all__ if not inspect.ismodule(getattr(module, n))]
    return out


def test_the_site_builds_strictly() -> None:
    site = built_site()
    for page in ("index.html", "getting-started/index.html", "guides/debug-a-recovery/index.html",
                 "reference/api/index.html", "reference/cli/index.html", "reference/cases/index.html",
                 "changelog/index.html", "notebooks/01_production_recovery/index.html", "architecture/index.html"):
        assert (site / page).is_file(), page


def test_every_public_name_has_a_reference_entry() -> None:
    """The names of agent_inspect.__all__ and of each public subpackage's __all__, against the site's inventory."""
    inventory = _inventory(built_site())
    documented: dict[tuple[str, str] | int, str] = {}
    for identifier in inventory:
        try:
            obj = _resolve(identifier)
        except (LookupError, AttributeError):
            continue
        if inspect.isclass(obj) or inspect.isfunction(obj):
            documented[(obj.__module__, obj.__qualname__)] = identifier
    surface = _public_surface()
    assert len(surface) > 300
    missing = []
    for package, name in surface:
        obj = getattr(importlib.import_module(package), name)
        key = (obj.__module__, obj.__qualname__) if inspect.isclass(obj) or inspect.isfunction(obj) else None
        if f"{package}.{name}" not in inventory and (key is None or key not in documented):
            missing.append(f"{package}.{name}")
    assert missing == [], f"public names without a reference entry: {missing}"


def test_private_modules_stay_out() -> None:
    api = built_site() / "reference" / "api"
    pages = sorted(p.name for p in api.iterdir() if p.is_dir())
    assert pages and not [p for p in pages if p.startswith("_")]
    for page in api.rglob("index.html"):
        headings = re.findall(r'<h[2-4] id="([^"]+)"', page.read_text(encoding="utf-8"))
        private = [h for h in headings if re.search(r"\._[a-z]", h)]
        assert private == [], f"{page}: {private[:5]}"


def test_the_cli_reference_has_every_subcommand() -> None:
    from agent_inspect.cli import build_parser

    page = (built_site() / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    parser = build_parser()
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices
    assert len(commands) >= 15
    for name in commands:
        assert f'id="{name}"' in page, name


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(str(values["id"]))
        for attr in ("href", "src"):
            if values.get(attr) and (tag in ("a", "img", "script") or (tag == "link" and attr == "href")):
                self.links.append(str(values[attr]))


def test_internal_links_resolve() -> None:
    site = built_site()
    pages = {p.relative_to(site).as_posix(): p for p in site.rglob("*.html")}
    parsed: dict[str, _Links] = {}

    def parse(rel: str) -> _Links:
        if rel not in parsed:
            links = _Links()
            links.feed(pages[rel].read_text(encoding="utf-8"))
            parsed[rel] = links
        return parsed[rel]

    broken = []
    for rel in sorted(pages):
        if rel == "404.html":      # served for any missing path, so its links are root-relative by design
            continue
        for link in parse(rel).links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "data:", "javascript:")):
                continue
            target = posixpath.normpath(posixpath.join(posixpath.dirname(rel), unquote(parts.path))) \
                if parts.path else rel
            if (site / target).is_dir():
                target = posixpath.join(target, "index.html")
            if not (site / target).exists():
                broken.append(f"{rel}: {link}")
            elif parts.fragment and target.endswith(".html") and target in pages \
                    and unquote(parts.fragment) not in parse(target).ids:
                broken.append(f"{rel}: {link} (no such anchor)")
    assert broken == [], "\n".join(broken[:30])


def test_a_broken_reference_fails_the_build(broken_site_build: SiteBuild) -> None:
    """The same configuration with one broken cross-reference and one broken link: the strict build fails."""
    done = broken_site_build.wait()
    assert done.returncode != 0
    assert "no-such-page.md" in done.stderr
    assert "agent_inspect.no_such_name" in done.stderr
