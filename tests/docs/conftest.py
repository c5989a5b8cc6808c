"""The strict build of a broken copy of the site (test_docs_site.py checks that it fails), started early when it can be."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.docs_site import SiteBuild, broken_site_config, prebuilt_site, start_site_build


@pytest.fixture(scope="package", autouse=True)
def early_broken_site_build(request: pytest.FixtureRequest,
                            tmp_path_factory: pytest.TempPathFactory) -> Iterator[SiteBuild | None]:
    """Started with this package's first test when a selected test needs it and scripts/test.sh built the site
    just before (its executed notebooks are cached then, so two builds never execute them at once): the 20-30 s
    build runs on the second core beside the docs tests instead of after them."""
    if prebuilt_site() is None or not any("broken_site_build" in getattr(item, "fixturenames", ())
                                          for item in request.session.items):
        yield None
        return
    scratch = tmp_path_factory.mktemp("broken-site")
    build = start_site_build(broken_site_config(scratch), scratch / "site")
    try:
        yield build
    finally:
        build.stop()


@pytest.fixture
def broken_site_build(early_broken_site_build: SiteBuild | None, tmp_path: Path) -> Iterator[SiteBuild]:
    """The broken copy's strict build: the one started early, or one started now."""
    build = early_broken_site_build or start_site_build(broken_site_config(tmp_path), tmp_path / "site")
    try:
        yield build
    finally:
        build.stop()
