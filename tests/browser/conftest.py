"""Fixtures for the real-browser tests: one JupyterLab and one headless chromium per session."""

from __future__ import annotations

import contextlib
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # `tests.support` must import however pytest was started
    sys.path.insert(0, str(REPO))

from tests.support.jupyter import (  # noqa: E402
    CHROMIUM_ARGS,
    JupyterLab,
    chromium_executable,
    isolated_env,
    start_jupyterlab,
)

ARTIFACTS = REPO / "test-artifacts" / "browser"


@pytest.fixture(scope="session")
def chromium() -> str:
    try:
        return chromium_executable()
    except RuntimeError as exc:  # a missing browser is a failure, never a skip
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def lab_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of notebooks/ (autosave must never touch the repo) beside the sample logs."""
    root = tmp_path_factory.mktemp("lab-root")
    shutil.copytree(REPO / "notebooks", root / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for name in ("sample_logs", "cases"):
        (root / name).symlink_to(REPO / name, target_is_directory=True)
    return root


@pytest.fixture(scope="session")
def lab(lab_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLab]:
    server = start_jupyterlab(lab_root, scratch=tmp_path_factory.mktemp("lab-scratch"))
    try:
        yield server
    finally:
        server.stop()


# Package scope (one chromium for tests/browser, each test in a context of its own): Playwright's sync API keeps
# an event loop running on the main thread while it is open, which would break every later test that calls
# asyncio.run() (and notebooks run by nbclient); none here does, and the loop ends with this package.
@pytest.fixture(scope="package")
def browser(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    env = isolated_env(tmp_path_factory.mktemp("chromium-home"))
    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS, env=env)
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


class LabPage:
    """A chromium page on one notebook in JupyterLab, with what a person would do to it."""

    def __init__(self, page: object, lab: JupyterLab) -> None:
        self.page = page
        self.lab = lab
        self.dialogs: list[str] = []
        self.console_errors: list[str] = []
        page.on("dialog", self._on_dialog)
        page.on("console", lambda m: self.console_errors.append(m.text) if m.type == "error" else None)
        # A probe that escaped its escaping calls this; the list must stay empty.
        page.add_init_script("window.__xss_hits = [];")

    def _on_dialog(self, dialog: object) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self, notebook: str, *, timeout_ms: float = 60_000) -> None:
        self.page.goto(self.lab.lab_url(notebook))
        self.page.wait_for_function(
            "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget; "
            "return w && w.sessionContext && w.sessionContext.session && "
            "w.sessionContext.session.kernel && w.sessionContext.session.kernel.status === 'idle'; }",
            timeout=timeout_ms,
        )

    def run_all(self, *, timeout_ms: float = 90_000) -> None:
        """Run every cell and wait until the kernel is idle with no cell left pending."""
        self.page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        self.page.wait_for_function(
            "() => { const w = window.jupyterapp.shell.currentWidget; "
            "const cells = w.content.widgets.filter(c => c.model.type === 'code'); "
            "const failed = cells.some(c => c.model.outputs.toJSON().some(o => o.output_type === 'error')); "
            "const done = cells.every(c => c.model.executionCount !== null); "
            "return w.sessionContext.session.kernel.status === 'idle' && (done || failed); }",
            timeout=timeout_ms,
        )
        errors = self.errors_in_outputs()
        assert not errors, f"a cell raised: {errors[0][:2000]}"

    def execute(self, code: str) -> str:
        """Run ``code`` in the notebook's kernel as a cell would (not shown in the notebook); its status."""
        return self.page.evaluate(
            "async (code) => { const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel; "
            "return (await kernel.requestExecute({code}).done).content.status; }", code)

    def errors_in_outputs(self) -> list[str]:
        """``ename: evalue`` and traceback of every error output of the current notebook."""
        return self.page.evaluate(
            "() => window.jupyterapp.shell.currentWidget.content.widgets"
            ".flatMap(c => c.model.type === 'code' ? c.model.outputs.toJSON() : [])"
            ".filter(o => o.output_type === 'error')"
            ".map(o => o.ename + ': ' + o.evalue + '\\n' + (o.traceback || []).join('\\n'))"
        )

    def xss_hits(self) -> list[object]:
        return self.page.evaluate("() => window.__xss_hits")

    def notebook_text(self) -> str:
        """What a person can read in the current notebook (inputs and outputs)."""
        return self.page.evaluate("() => window.jupyterapp.shell.currentWidget.content.node.innerText")

    def shutdown_kernel(self) -> None:
        self.page.evaluate("() => window.jupyterapp.commands.execute('kernelmenu:shutdown')")


@contextlib.contextmanager
def open_lab_page(browser: object, lab: JupyterLab, *, height: int = 1400,
                  timeout_ms: int = 30_000) -> Iterator[LabPage]:
    """A JupyterLab page in a browser context of its own; its kernel and context go when the block ends."""
    context = browser.new_context(viewport={"width": 1280, "height": height})
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    wrapper = LabPage(page, lab)
    try:
        yield wrapper
    finally:
        try:
            wrapper.shutdown_kernel()
        except Exception:  # noqa: BLE001 - the page may already be gone; the server stops the kernel anyway
            pass
        context.close()


@pytest.fixture
def lab_page(browser: object, lab: JupyterLab) -> Iterator[LabPage]:
    with open_lab_page(browser, lab) as wrapper:
        yield wrapper


class Watched:
    """A plain page (no JupyterLab) with the same XSS, dialog, console and request watches."""

    def __init__(self, page: object) -> None:
        self.page = page
        self.dialogs: list[str] = []
        self.console_errors: list[str] = []
        self.requests: list[str] = []
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        page.on("console", lambda m: self.console_errors.append(m.text) if m.type == "error" else None)
        page.on("request", lambda r: self.requests.append(r.url))
        page.add_init_script("window.__xss_hits = [];")

    def xss_hits(self) -> list[object]:
        return self.page.evaluate("() => window.__xss_hits")


@pytest.fixture
def plain_page(browser: object) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1280, "height": 1400})
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        yield Watched(page)
    finally:
        context.close()
