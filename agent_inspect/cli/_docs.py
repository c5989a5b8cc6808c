"""``agent-inspect docs``: serve the documentation site on 127.0.0.1 (building it first if it is missing)."""

from __future__ import annotations

import argparse
import functools
import http.server
import subprocess
import sys
from pathlib import Path
from typing import Any

from agent_inspect._errors import InspectError
from agent_inspect.cli._numbers import port

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "docs", help="serve the documentation site on 127.0.0.1 and print its URL",
        description="Serve the built documentation site (site/ of the checkout) on 127.0.0.1 and print its URL. "
                    "When the site has not been built yet, build it first with scripts/docs.sh (the docs extra).")
    parser.add_argument("--port", type=port, default=None, help="port to serve on (default: 8000, or a free one)")
    parser.add_argument("--site", type=Path, default=None, help="the built site to serve (default: site/ of the checkout)")
    parser.add_argument("--build", action="store_true", help="build the site again before serving it")
    parser.set_defaults(func=_run)


def checkout() -> Path:
    """The repository checkout this package runs from (the docs are built from its mkdocs.yml)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "mkdocs.yml").is_file():
        raise InspectError(f"no mkdocs.yml in {root}; run `agent-inspect docs` from a checkout of agent_inspect")
    return root


def build(root: Path, site: Path) -> None:
    """Build the site with scripts/docs.sh into ``site``; one line on failure."""
    print(f"agent-inspect docs: building the site into {site} …", file=sys.stderr, flush=True)
    done = subprocess.run(["bash", str(root / "scripts" / "docs.sh"), "--site-dir", str(site.resolve())],
                          cwd=root, check=False)
    if done.returncode != 0:
        raise InspectError(f"building the docs failed (exit {done.returncode}); run `bash scripts/docs.sh` to see why")


def _run(args: argparse.Namespace) -> int:
    site = args.site
    if site is None or args.build:
        root = checkout()
        site = site or root / "site"
        if args.build or not (site / "index.html").is_file():
            build(root, site)
    if not (site / "index.html").is_file():
        raise InspectError(f"no built site at {site} (no index.html); build it with `bash scripts/docs.sh`")
    with _server(site, args.port) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        print(f"agent-inspect docs: serving {site}\n  open {url}\n  stop with Ctrl-C", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
    return 0


def _server(site: Path, port: int | None) -> http.server.ThreadingHTTPServer:
    handler = functools.partial(_QuietHandler, directory=str(site))
    if port is not None:
        return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    try:
        return http.server.ThreadingHTTPServer(("127.0.0.1", 8000), handler)
    except OSError:                           # 8000 taken: any free port (the URL is printed)
        return http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # no access log on the terminal
        pass
