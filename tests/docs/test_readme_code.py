"""The README's ```python blocks run as written, in order, from a checkout (a new user copies them first).

Blocks preceded by ``<!-- no-run: reason -->`` need a live service (a Kafka broker, a Dask scheduler) and are
compiled only.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

from tests.docs.test_docs_code_blocks import blocks
from tests.support.docs_site import REPO

README = REPO / "README.md"


def test_every_readme_block_runs_on_the_bundled_samples(tmp_path: Path) -> None:
    for name in ("sample_logs", "cases"):
        (tmp_path / name).symlink_to(REPO / name, target_is_directory=True)
    found = blocks(README)
    assert sum(reason is None for _, reason in found) >= 6 and all(r is None or len(r) > 10 for _, r in found)
    namespace: dict[str, object] = {"__name__": "readme"}
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        for i, (code, reason) in enumerate(found):
            compiled = compile(code, f"README.md[block {i + 1}]", "exec")
            if reason is not None:
                continue
            with contextlib.redirect_stdout(io.StringIO()):
                try:
                    exec(compiled, namespace)
                except Exception as exc:
                    raise AssertionError(f"README.md block {i + 1} failed: {exc!r}\n{code}") from exc
    finally:
        os.chdir(old)
    assert (tmp_path / "spans.json").is_file()
    # the sentence the README shows beside v.tokens.headline() is the one its block prints
    shown = re.search(r'v\.tokens\.headline\(\)\s+# "([^"]+)"', README.read_text(encoding="utf-8"))
    assert shown is not None and shown.group(1) == namespace["v"].tokens.headline()  # type: ignore[attr-defined]
