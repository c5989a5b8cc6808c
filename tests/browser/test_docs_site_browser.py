"""The documentation site in chromium: home, a guide, an API page and a rendered notebook, at a phone and a desktop
width, in light and dark, each with no console error and no failed request; screenshots in the artifacts. The
concepts' Mermaid diagrams render with every non-loopback request refused (the site serves its own Mermaid)."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support.docs_site import built_site

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGES = {
    "home": ("", "agent_inspect"),
    "guide": ("guides/debug-a-recovery/", "Debug last night's recovery"),
    "api": ("reference/api/agent_inspect/", "ai.load"),
    "notebook": ("notebooks/01_production_recovery/", "LogBrowser: an interactive view"),
}
VIEWPORTS = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1366, "height": 900}}


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site_url() -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(built_site()))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", list(VIEWPORTS))
@pytest.mark.parametrize("name", list(PAGES))
def test_page_renders_without_console_errors(browser: object, site_url: str, artifacts: Path,
                                             name: str, width: str, scheme: str) -> None:
    path, expected = PAGES[name]
    context = browser.new_context(viewport=VIEWPORTS[width], color_scheme=scheme)  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
        response = page.goto(site_url + path, wait_until="networkidle")
        assert response is not None and response.ok
        assert expected in page.inner_text("article")
        palette = page.get_attribute("body", "data-md-color-scheme")
        assert palette == ("slate" if scheme == "dark" else "default")
        page.screenshot(path=str(artifacts / f"docs-{name}-{width}-{scheme}.png"), full_page=False)
        assert errors == [], errors
    finally:
        context.close()


# Material renders each diagram into a closed shadow root; opened here so the test can see the svg inside.
OPEN_SHADOW_ROOTS = """
const attach = Element.prototype.attachShadow;
Element.prototype.attachShadow = function (init) { return attach.call(this, {...init, mode: "open"}); };
"""


def test_mermaid_renders_offline(browser: object, site_url: str, artifacts: Path) -> None:
    context = browser.new_context(viewport=VIEWPORTS["desktop"])  # type: ignore[attr-defined]
    try:
        refused: list[str] = []

        def only_loopback(route: object) -> None:
            url = route.request.url  # type: ignore[attr-defined]
            if urlsplit(url).hostname in ("127.0.0.1", "localhost"):
                route.continue_()  # type: ignore[attr-defined]
            else:
                refused.append(url)
                route.abort()  # type: ignore[attr-defined]

        context.route("**/*", only_loopback)
        context.add_init_script(OPEN_SHADOW_ROOTS)
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        response = page.goto(site_url + "concepts/outcomes/", wait_until="networkidle")
        assert response is not None and response.ok
        diagram = page.locator("article div.mermaid svg").first
        diagram.wait_for(state="attached", timeout=20_000)
        labels = diagram.text_content() or ""
        assert "RERUN: the body runs again with every durable call" in labels
        assert "NOT DISPATCHED" in labels
        page.screenshot(path=str(artifacts / "docs-mermaid-offline.png"), full_page=False)
        assert refused == [] and errors == [], (refused, errors)
    finally:
        context.close()
