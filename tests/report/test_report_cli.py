"""``agent-inspect report`` and ``agent-inspect demo``, run as a user would (real processes)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from agent_inspect.cli import main
from tests.report.probe_log import assert_no_live_probe
from tests.support.jupyter import free_port, isolated_env

REPO = Path(__file__).resolve().parents[2]


def test_report_command_writes_the_file(probe_path: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(probe_path), "--rule", "original", "-o", str(out), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["path"] == str(out) and info["bytes"] == out.stat().st_size
    assert_no_live_probe(out.read_text(encoding="utf-8"))


def test_report_command_prints_what_the_markers_leave_out(tmp_path: Path, capsys) -> None:
    """The report's page said a marker lay past its partition's end; the terminal line said nothing of it."""
    logs = Path(__file__).resolve().parents[2] / "sample_logs"
    out = tmp_path / "report.html"
    markers = '[{"0": 248, "1": 245, "2": 215, "3": 99999}]'
    assert main(["report", str(logs / "production.jsonl"), "-o", str(out), "--markers", markers]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[1].startswith("warning: the marker of partition 3 lies past its end (marker 99999, last offset")
    assert main(["report", str(logs / "production.jsonl"), "-o", str(out), "--markers", markers, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["warnings"] == [printed[1].removeprefix("warning: ")]


def test_report_command_bad_input_exits_2(probe_path: Path, tmp_path: Path, capsys) -> None:
    assert main(["report", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agent-inspect:") and err.count("\n") == 1
    assert main(["report", str(probe_path), "-o", str(tmp_path / "r.html"), "--markers", "{0: 1"]) == 2
    assert "--markers" in capsys.readouterr().err


def test_demo_cli_prints_the_analysis(probe_path: Path, capsys) -> None:
    assert main(["demo", "--cli", "--json", "--sample", str(probe_path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["records"] == 20
    assert data["original"]["divergences"] >= 1 and data["fixed"]["divergences"] >= 1
    removed = {s: n for s, n in data["fixed"]["statuses"].items() if s in ("evicted", "invalidated")}
    assert sum(removed.values()) > 0
    assert main(["demo", "--cli", "--sample", str(probe_path)]) == 0
    text = capsys.readouterr().out
    assert "reconstruct under rule 'original'" in text and "reconstruct under rule 'fixed'" in text


def test_demo_falls_back_to_the_cli_without_jupyterlab(probe_path: Path) -> None:
    code = ("import sys; sys.modules['jupyterlab'] = None\n"
            "from agent_inspect.cli import main\n"
            f"raise SystemExit(main(['demo', '--sample', {str(probe_path)!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "JupyterLab is not installed" in done.stderr
    assert "reconstruct under rule 'fixed'" in done.stdout


def test_demo_serves_the_notebooks_on_loopback(tmp_path: Path) -> None:
    port, token = free_port(), "demo-test-token"
    env = isolated_env(tmp_path)
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    proc = subprocess.Popen([sys.executable, "-m", "agent_inspect", "demo", "--port", str(port), "--token", token,
                             "--notebooks", str(REPO / "notebooks")], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env, cwd=tmp_path, start_new_session=True, text=True)
    try:
        url = f"http://127.0.0.1:{port}/lab/tree/01_production_recovery.ipynb?token={token}"
        seen = _lines_until(proc, url, timeout=90)
        assert "starting JupyterLab" in seen[0] and url not in seen[0]
        # the URL is printed only once the server listens: opening it at once must work, with no retry
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents?token={token}", timeout=30) as r:
            names = {item["name"] for item in json.load(r)["content"]}
        assert "01_production_recovery.ipynb" in names
        with urllib.request.urlopen(url, timeout=30) as r:
            assert r.status == 200
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        proc.stdout.close()


def _lines_until(proc: subprocess.Popen[str], text: str, *, timeout: float) -> list[str]:
    """The process's output lines up to the first holding ``text`` (fails after ``timeout`` s or at its exit)."""
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while not seen or text not in seen[-1]:
        left = deadline - time.monotonic()
        assert left > 0 and proc.poll() is None, f"no line with {text!r} in {seen[-5:]}"
        try:
            seen.append(lines.get(timeout=min(left, 1.0)))
        except queue.Empty:
            continue
    return seen


def test_demo_cli_tells_the_production_story(capsys) -> None:
    assert main(["demo", "--cli", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["source"].endswith("production.jsonl") and data["markers"]
    original, fixed = data["original"], data["fixed"]
    assert original["statuses"]["evicted"] > fixed["statuses"].get("evicted", 0)
    assert original["ledger"]["bodies rerun"] > fixed["ledger"]["bodies rerun"]
    assert main(["demo", "--cli"]) == 0
    text = capsys.readouterr().out
    assert "re-execution ledger" in text and "durable call" in text


def test_report_command_takes_a_markers_file(tmp_path: Path, capsys) -> None:
    import agent_inspect as ai

    out = tmp_path / "r.html"
    markers = ai.samples.path("production", "markers")
    assert main(["report", str(ai.samples.path("production")), "--rule", "original", "--markers", f"@{markers}",
                 "-o", str(out), "--keys", "1"]) == 0
    assert "wrote" in capsys.readouterr().out
    html = out.read_text(encoding="utf-8")
    assert "evicted" in html and html.count('class="plotly-graph-div"') == 1
    assert main(["report", str(ai.samples.path("production")), "--markers", f"@{tmp_path / 'nope.json'}",
                 "-o", str(out)]) == 2
    assert "cannot be read" in capsys.readouterr().err


def test_report_command_says_what_it_wrote(tmp_path: Path, capsys) -> None:
    """production_v4's report is 21 kB: the command said "(0.0 MB)", which reads as an empty file; it names the
    rule (labelled a what-if) and the markers the report is of, and --json has the label as reconstruct's has."""
    import agent_inspect as ai

    out = tmp_path / "r.html"
    source, markers = str(ai.samples.path("production_v4")), "@" + str(ai.samples.path("production_v4", "markers"))
    assert main(["report", source, "--markers", markers, "--rule", "fixed", "-o", str(out), "--keys", "0"]) == 0
    line = capsys.readouterr().out.strip()
    size = out.stat().st_size
    assert 1_000 < size < 1_000_000
    assert line == (f"wrote {out} ({size / 1e3:.0f} kB): rule fixed (what-if; main ships original), markers "
                    "{0: 354, 1: 258, 2: 614, 3: 290} (given); open it in any browser, offline")
    assert main(["report", source, "--markers", markers, "--rule", "fixed", "-o", str(out), "--keys", "0",
                 "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["rule_label"] == "fixed (what-if; main ships original)" and info["what_if"] is True
    assert info["markers_label"] == "{0: 354, 1: 258, 2: 614, 3: 290} (given)"
