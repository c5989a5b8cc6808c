"""The bundled case matrix is reachable from any directory, and ships in the wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import agent_inspect as ai
from agent_inspect.cases import builtin, builtin_path, load_cases

ROOT = Path(__file__).resolve().parents[2]


def test_builtin_cases_load_from_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cases = builtin()
    ids = [c.id for c in cases]
    assert ids == [c.id for c in load_cases("builtin")] == [c.id for c in ai.cases.builtin()]
    assert {p.stem for p in (ROOT / "cases").glob("*.toml")} == {i.split("/")[0] for i in ids}
    assert {"G09", "G03", "N01"} <= set(ids)
    assert sorted(p.name for p in builtin_path().glob("*.toml")) == sorted(p.name for p in (ROOT / "cases").glob("*.toml"))
    assert ai.cases.run_case(next(c for c in cases if c.id == "G09"), "fixed").passed


def test_the_cli_runs_the_builtin_cases_from_anywhere(tmp_path, monkeypatch, capsys):
    from agent_inspect.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["cases", "run", "builtin", "--rules", "fixed"]) == 0
    assert "0 failed" in capsys.readouterr().out


def test_a_missing_case_directory_names_the_builtin_cases(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ai.InspectError, match=r"load_cases\(\"builtin\"\)"):
        load_cases("cases/")
    (tmp_path / "builtin").mkdir()                      # a directory of that name wins
    assert load_cases("builtin") == []


@pytest.mark.slow
def test_the_wheel_ships_the_case_files(tmp_path):
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                          "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    (wheel,) = tmp_path.glob("agent_inspect-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {n.rsplit("/", 1)[-1] for n in names if n.startswith("agent_inspect/cases/_matrix/")}
    assert shipped == {p.name for p in (ROOT / "cases").glob("*.toml")}
