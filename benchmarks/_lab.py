"""A JupyterLab on 127.0.0.1 and Debian's chromium for the browser benchmarks (benchmarks never import tests).

The minimal launching logic of ``tests/support/jupyter.py``: throw-away HOME / XDG / IPython / Jupyter
directories, the server in its own process group (stopped by its PID, kernels with it), every cell kept in
the DOM (no windowing) and no news pop-up. The kernel imports ``agent_inspect`` from ``repo``.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CHROMIUM_ARGS", "Lab", "chromium_executable", "isolated_env", "start_lab"]

CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-quic", "--disable-dev-shm-usage",
]


def chromium_executable() -> str:
    for candidate in (os.environ.get("CHROMIUM"), shutil.which("chromium"), "/usr/bin/chromium"):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise RuntimeError("Debian's chromium is not installed: `apt-get install -y chromium` or set CHROMIUM=/path")


def isolated_env(scratch: Path) -> dict[str, str]:
    """The environment with HOME, XDG_*, IPYTHONDIR and JUPYTER_* under ``scratch``."""
    home = scratch / "home"
    dirs = {
        "HOME": home, "XDG_CONFIG_HOME": home / ".config", "XDG_CACHE_HOME": home / ".cache",
        "XDG_DATA_HOME": home / ".local" / "share", "XDG_RUNTIME_DIR": home / "xdg-runtime",
        "IPYTHONDIR": home / ".ipython", "JUPYTER_CONFIG_DIR": home / ".jupyter",
        "JUPYTER_DATA_DIR": home / ".local" / "share" / "jupyter", "JUPYTER_RUNTIME_DIR": home / "runtime",
        "MPLCONFIGDIR": home / ".mpl",
    }
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    os.chmod(dirs["XDG_RUNTIME_DIR"], 0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER_", "XDG_"))}
    env.update({k: str(v) for k, v in dirs.items()})
    env["PYTHONUNBUFFERED"] = "1"
    return env


@dataclass
class Lab:
    """A running JupyterLab; ``stop()`` ends its process group by PID."""

    proc: subprocess.Popen[bytes]
    port: int
    token: str
    log_path: Path

    def url(self, notebook: str) -> str:
        return f"http://127.0.0.1:{self.port}/lab/tree/{notebook}?reset&token={self.token}"

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)


def start_lab(root_dir: Path, scratch: Path, repo: Path, *, ready_timeout: float = 60.0) -> Lab:
    """``jupyter lab`` on 127.0.0.1 serving ``root_dir``; returns once its API answers."""
    env = isolated_env(scratch)
    settings = scratch / "lab-settings" / "@jupyterlab"
    (settings / "notebook-extension").mkdir(parents=True, exist_ok=True)
    (settings / "notebook-extension" / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    (settings / "apputils-extension").mkdir(parents=True, exist_ok=True)
    (settings / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}')
    env["JUPYTERLAB_SETTINGS_DIR"] = str(scratch / "lab-settings")
    env["PYTHONPATH"] = os.pathsep.join([str(repo), *filter(None, [os.environ.get("PYTHONPATH")])])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(16)
    log_path = scratch / "jupyterlab.log"
    cmd = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root_dir}",
        "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, cwd=root_dir, start_new_session=True)
    lab = Lab(proc, port, token, log_path)
    deadline = time.monotonic() + ready_timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited rc={proc.returncode}:\n{lab.log_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=1) as resp:
                if resp.status == 200:
                    return lab
        except OSError:
            time.sleep(0.1)
    lab.stop()
    raise RuntimeError(f"jupyter lab not ready after {ready_timeout}s:\n{lab.log_text()[-3000:]}")
