"""Every notebook in notebooks/ runs end to end under nbclient, and is stored without outputs."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def test_the_notebooks_exist() -> None:
    names = [p.name for p in NOTEBOOKS]
    assert names == ["01_production_recovery.ipynb", "02_action_graphs.ipynb", "03_divergence_rules.ipynb",
                     "04_verify_against_trace.ipynb", "05_fleet_scan.ipynb",
                     "06_diff_and_explain.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name} has stored outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_live_source_cell_is_inert_by_default(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    marked = [c for c in nb.cells if c.cell_type == "code" and "LIVE SOURCE" in c.source]
    assert len(marked) == 1, "exactly one clearly marked cell points the notebook at a live broker/cluster"
    assert "LIVE = None" in marked[0].source


@pytest.fixture(scope="module")
def run_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """notebooks/ copied beside links to sample_logs/ and cases/, so runs never write into the repo."""
    root = tmp_path_factory.mktemp("nb-run")
    shutil.copytree(REPO / "notebooks", root / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for name in ("sample_logs", "cases"):
        if (REPO / name).exists():
            (root / name).symlink_to(REPO / name, target_is_directory=True)
    return root


@pytest.fixture(scope="module")
def executed(run_root: Path, tmp_path_factory: pytest.TempPathFactory,
             monkeypatch_module: pytest.MonkeyPatch) -> dict[str, nbformat.NotebookNode]:
    """Every notebook executed end to end in a kernel of its own, two kernels at a time."""
    home = tmp_path_factory.mktemp("nb-home")
    monkeypatch_module.setenv("IPYTHONDIR", str(home / ".ipython"))
    monkeypatch_module.setenv("MPLCONFIGDIR", str(home / ".mpl"))
    notebooks = {p.name: nbformat.read(run_root / "notebooks" / p.name, as_version=4) for p in NOTEBOOKS}

    async def run(name: str, nb: nbformat.NotebookNode, slots: asyncio.Semaphore) -> None:
        client = NotebookClient(nb, kernel_name="python3", timeout=120, allow_errors=True,
                                resources={"metadata": {"path": str(run_root / "notebooks")}})
        # an IPYTHONDIR per kernel: kernels starting together in one fresh IPYTHONDIR raced on a fresh
        # machine ("Kernel died before replying to kernel_info")
        env = {**os.environ, "IPYTHONDIR": str(home / Path(name).stem / ".ipython")}
        async with slots:
            await client.async_execute(env=env)

    async def run_all() -> None:
        # two at a time: CI has 2 cores and pytest itself only waits meanwhile (about 30 s of 64 saved there)
        slots = asyncio.Semaphore(2)
        await asyncio.gather(*(run(name, nb, slots) for name, nb in notebooks.items()))

    # a worker thread has no event loop of its own (Playwright's sync API may own this thread's)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, run_all()).result()
    artifacts = REPO / "test-artifacts" / "notebooks"
    artifacts.mkdir(parents=True, exist_ok=True)
    for name, nb in notebooks.items():
        nbformat.write(nb, artifacts / name)  # executed copies, for a person to look at
    return notebooks


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path: Path, executed: dict[str, nbformat.NotebookNode]) -> None:
    nb = executed[path.name]
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{path.name}: {errors[0].ename}: {errors[0].evalue}" if errors else ""
    unrun = [c.source.splitlines()[0] for c in nb.cells if c.cell_type == "code" and c.execution_count is None]
    assert not unrun, f"{path.name}: cells did not run: {unrun}"
    html = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
            if "text/html" in o.get("data", {})]
    assert html, "the notebook shows rich results"
