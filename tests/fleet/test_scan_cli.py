"""``agent-inspect scan``: JSON and text output, a scheduler address, bad usage, and Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

import agent_inspect as ai
from agent_inspect.cli import main


def test_json_on_an_existing_scheduler(dask_cluster: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    markers = ai.samples.path("production", "markers")
    code = main(["scan", str(ai.samples.path("production", "parquet")), "--markers", str(markers),
                 "--scheduler", dask_cluster.scheduler_address, "--json", "--no-progress", "-o", str(tmp_path / "o")])
    out = capsys.readouterr()
    assert code == 0, out.err
    data = json.loads(out.out)
    assert data["summary"]["keys"] == 40 and data["summary"]["windows"] == 4 and data["failures"] == []
    expected = ai.scan(ai.samples.path("production", "parquet"), markers=ai.samples.markers("production"),
                       client=dask_cluster.scheduler_address)
    assert data["summary"] == json.loads(json.dumps(expected.summary()))
    assert [r["business_key"] for r in data["at_risk"]] == list(expected.at_risk(20)["business_key"])
    assert (tmp_path / "o" / "_scan_keys.parquet").is_file()


def test_text_output_with_progress_and_a_local_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["scan", str(ai.samples.path("G01", "parquet")), "--workers", "1", "--rule", "fixed", "--what-if", "",
                 "--top", "3"])
    out = capsys.readouterr()
    assert code == 0, out.err
    lines = out.out.splitlines()
    # the what-if label is set apart from its counts, and no base rule was asked for
    assert any(line.startswith("fixed (what-if; 0.4 ships original)  ") for line in lines), out.out
    assert "most at risk, ranked under fixed (what-if; 0.4 ships original):" in lines
    assert not any(line.startswith("original") for line in lines)
    # the runtime with where it came from, as the result and --json say it ("0.4" alone hid that it was inferred)
    runtime = next(line for line in lines if line.startswith("runtime "))
    assert runtime.split(None, 1)[1].startswith("0.4: inferred from the whole input (all 3 records"), runtime
    assert "scan:" in out.err  # the progress bar
    # the local cluster's dashboard closes with the command: the link says it is for while the scan runs
    assert "Dask dashboard at http://127.0.0.1:" in out.err
    assert "while the scan runs (its local cluster closes with the command)" in out.err


def test_a_local_cluster_s_result_keeps_no_dead_dashboard_link() -> None:
    links: list[str | None] = []
    result = ai.scan(ai.samples.path("G01"), workers=1, what_if=(), on_start=links.append)
    assert links and str(links[0]).startswith("http://127.0.0.1:")   # usable while the scan runs
    assert result.dashboard is None and result.to_dict()["dashboard"] is None


@pytest.mark.parametrize("argv, message", [
    (["--workers", "0"], "--workers must be 1 or more"),
    (["--markers", "{nope"], "--markers is not valid JSON"),
    (["--what-if", "nonsense"], "nonsense"),
    (["--rule", "nonsense"], "nonsense"),
])
def test_bad_usage_exits_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["scan", str(ai.samples.path("G01", "parquet")), "--no-progress", *argv])
    assert code == 2 and message in capsys.readouterr().err


def test_a_setting_outside_its_choices_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["scan", str(ai.samples.path("G01", "parquet")), "--runtime", "9.9"])
    assert exc.value.code == 2 and "invalid choice: '9.9'" in capsys.readouterr().err


def test_missing_source_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["scan", str(tmp_path / "nope.parquet")]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.slow
def test_ctrl_c_cancels_and_leaves_no_process(tmp_path: Path) -> None:
    fleet = ai.samples.write_fleet(tmp_path / "fleet.parquet", 3000, partitions=8, seed=2)
    # as from a terminal: a shell's background job (a test run under `cmd &`) would inherit SIGINT ignored
    proc = subprocess.Popen([sys.executable, "-m", "agent_inspect", "scan", str(fleet), "--workers", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    err = bytearray()
    fd = proc.stderr.fileno()  # type: ignore[union-attr]
    reader = threading.Thread(target=lambda: [err.extend(c) for c in iter(lambda: os.read(fd, 4096), b"")],
                              daemon=True)
    reader.start()
    try:
        me = psutil.Process(proc.pid)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and b"scan:" not in err:  # the tasks are submitted: a user presses Ctrl-C
            time.sleep(0.1)
        assert b"scan:" in err, err.decode(errors="replace")
        children = me.children(recursive=True)
        assert len(children) >= 2, "the local cluster's workers are not running"
        os.kill(proc.pid, signal.SIGINT)
        proc.wait(timeout=120)
        reader.join(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = err.decode(errors="replace")
    assert proc.returncode == 130, text
    assert "scan cancelled" in text and "Traceback" not in text
    assert "8/8" not in text  # cancelled before every window was done
    gone, alive = psutil.wait_procs(children, timeout=30)
    assert not alive, f"left running: {alive}"


def test_no_dashboard_link_when_the_scheduler_runs_no_dashboard() -> None:
    # issue 26 row 13: a scheduler without a dashboard still gets a made-up link from Client.dashboard_link.
    # A fresh process, as a user's: in this one, earlier tests' dashboards leave routes behind that answer.
    script = f"""
from distributed import LocalCluster
from agent_inspect.cli import main
if __name__ == "__main__":
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None, scheduler_kwargs={{"dashboard": False, "dashboard_address": "127.0.0.1:0"}},
                      silence_logs=40) as cluster:
        raise SystemExit(main(["scan", {str(ai.samples.path("G01", "parquet"))!r}, "--scheduler",
                               cluster.scheduler_address, "--no-progress", "--top", "1"]))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "dashboard" not in proc.stderr and "8787" not in proc.stderr
