"""Every ```python block of the site's pages runs, in order per page, against the bundled samples.

Each page runs in one namespace from a scratch directory that holds links to ``sample_logs/`` and ``cases/``.
A block preceded by ``<!-- no-run: reason -->`` is skipped (it needs a Fluss cluster, a tracing backend, a live
topic); the reason is required. The "debug last night's recovery" guide runs against the real tansu broker of
the suite, with the production sample written into a topic the way upstream writes it and the real Flink
checkpoint of that sample's restore: the page's placeholders are replaced by those.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.docs_site import REPO

DOCS = REPO / "docs"
BLOCK = re.compile(r"(?P<marker><!--\s*no-run:(?P<reason>[^>]*)-->\s*\n)?```python\n(?P<code>.*?)```", re.S)
KAFKA_GUIDE = "guides/debug-a-recovery.md"


def blocks(page: Path) -> list[tuple[str, str | None]]:
    """(code, reason it does not run or None) for each python block of a page."""
    out = []
    for match in BLOCK.finditer(page.read_text(encoding="utf-8")):
        reason = match.group("reason")
        out.append((match.group("code"), None if match.group("marker") is None else reason.strip()))
    return out


# architecture.md is the contributors' design page: its blocks sketch contracts between layers, not examples
PAGES = sorted(p for p in DOCS.rglob("*.md") if "spec" not in p.parts and p.name != "architecture.md"
               and any(r is None for _, r in blocks(p)))


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    for name in ("sample_logs", "cases"):
        (tmp_path / name).symlink_to(REPO / name, target_is_directory=True)
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old)


def run_page(page: Path, replace: dict[str, str] | None = None) -> str:
    namespace: dict[str, object] = {"__name__": f"docs_page_{page.stem.replace('-', '_')}"}
    out = io.StringIO()
    for i, (code, reason) in enumerate(blocks(page)):
        if reason is not None:
            continue
        for placeholder, value in (replace or {}).items():
            code = code.replace(placeholder, value)
        with contextlib.redirect_stdout(out):
            try:
                exec(compile(code, f"{page.relative_to(DOCS)}[block {i + 1}]", "exec"), namespace)
            except Exception as exc:
                raise AssertionError(f"{page.relative_to(DOCS)} block {i + 1} failed: {exc!r}\n{code}") from exc
    return out.getvalue()


def test_pages_with_code_are_found() -> None:
    names = {p.relative_to(DOCS).as_posix() for p in PAGES}
    assert {"getting-started.md", KAFKA_GUIDE, "guides/check-a-rule.md", "guides/read-a-diff.md"} <= names


def test_every_no_run_block_says_why() -> None:
    for page in DOCS.rglob("*.md"):
        for _, reason in blocks(page):
            assert reason is None or len(reason) > 10, f"{page}: a no-run block needs its reason"


@pytest.mark.parametrize("page", [p for p in PAGES if p.relative_to(DOCS).as_posix() != KAFKA_GUIDE],
                         ids=lambda p: p.relative_to(DOCS).as_posix())
def test_page_code_runs(page: Path, scratch: Path) -> None:
    run_page(page)


@pytest.mark.kafka
def test_debug_a_recovery_guide_runs_against_a_real_broker(kafka_bootstrap: str, scratch: Path) -> None:
    from tests.support.tansu import create_topic, produce_like_upstream

    rows = [json.loads(line) for line in (REPO / "sample_logs" / "production.kcat.jsonl").open(encoding="utf-8")]
    partitions = json.loads((REPO / "sample_logs" / "production.markers.json").read_text())["partitions"]
    partition_of = {row["key"]: row["partition"] for row in rows}
    topic = create_topic(kafka_bootstrap, partitions)
    produce_like_upstream(kafka_bootstrap, topic,
                          [(r["key"], None if r["payload"] is None else r["payload"].encode("utf-8")) for r in rows],
                          num_partitions=partitions, partitioner=lambda key, _n: partition_of[key],
                          timestamps=[r["ts"] for r in rows])
    printed = run_page(DOCS / KAFKA_GUIDE, {
        "broker:9092": kafka_bootstrap,
        "flink-agents-action-state": topic,
        "s3://flink/checkpoints/support-agent": str(REPO / "tests" / "fixtures" / "checkpoints" / "production"
                                                    / "checkpoints"),
        '"traces/"': '"sample_logs/production.trace.log"',
    })
    assert f"{len(rows)} records; 0 could not be decoded" in printed
    assert "checkpoint 4 markers" in printed and "{0: 248, 1: 245, 2: 215, 3: 444}" in printed
    assert "\nagree\n" in printed
    assert (scratch / "recovery-report.html").stat().st_size > 10_000
