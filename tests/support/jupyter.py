"""Start and stop a real JupyterLab (and find Debian's chromium) for the browser tests.

Everything runs on 127.0.0.1 with throw-away HOME / XDG / IPython / Jupyter directories
(platform-notes §5, pitfall 9), and every process is stopped by its PID.
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

__all__ = [
    "JupyterLab",
    "chromium_executable",
    "free_port",
    "isolated_env",
    "start_jupyterlab",
    "CHROMIUM_ARGS",
]

CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-quic", "--disable-dev-shm-usage",
]


def chromium_executable(candidates: list[str | None] | None = None) -> str:
    """Path of the system chromium; raises with a clear message when it is not installed."""
    if candidates is None:
        candidates = [os.environ.get("CHROMIUM"), shutil.which("chromium"), "/usr/bin/chromium"]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise RuntimeError(
        "Debian's chromium is not installed: run `apt-get install -y chromium` (scripts/test.sh does it) "
        "or set CHROMIUM=/path/to/chromium; never `playwright install`"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def isolated_env(scratch: Path) -> dict[str, str]:
    """Environment with HOME, XDG_*, IPYTHONDIR and JUPYTER_* under ``scratch``."""
    home = scratch / "home"
    dirs = {
        "HOME": home,
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_RUNTIME_DIR": home / "xdg-runtime",
        "IPYTHONDIR": home / ".ipython",
        "JUPYTER_CONFIG_DIR": home / ".jupyter",
        "JUPYTER_DATA_DIR": home / ".local" / "share" / "jupyter",
        "JUPYTER_RUNTIME_DIR": home / "runtime",
        "MPLCONFIGDIR": home / ".mpl",
    }
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    os.chmod(dirs["XDG_RUNTIME_DIR"], 0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER_", "XDG_"))}
    if env.get("PYTHONPATH"):   # kernels start in the lab's root: a relative entry would point there instead
        env["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    env.update({k: str(v) for k, v in dirs.items()})
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _lab_settings(scratch: Path) -> Path:
    """User settings for the test lab: every cell stays in the DOM (no windowing), no news pop-up."""
    settings = scratch / "lab-settings"
    tracker = settings / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True, exist_ok=True)
    (tracker / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    news = settings / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True, exist_ok=True)
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false", "checkForUpdates": false}')
    return settings


@dataclass
class JupyterLab:
    """A running JupyterLab server; ``stop()`` ends it by PID."""

    proc: subprocess.Popen[bytes]
    port: int
    token: str
    root_dir: Path
    log_path: Path
    env: dict[str, str]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def lab_url(self, notebook: str) -> str:
        # `reset` drops the saved workspace, so only this notebook is open
        return f"{self.base_url}/lab/tree/{notebook}?reset&token={self.token}"

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self, timeout: float = 10.0) -> None:
        if self.proc.poll() is not None:
            return
        # The server is its own process-group leader; TERM the group so kernels go too.
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)


def start_jupyterlab(root_dir: Path, *, scratch: Path, ready_timeout: float = 60.0) -> JupyterLab:
    """Start ``jupyter lab`` on 127.0.0.1 serving ``root_dir`` and wait until its API answers."""
    env = isolated_env(scratch)
    env["JUPYTERLAB_SETTINGS_DIR"] = str(_lab_settings(scratch))
    port, token = free_port(), secrets.token_hex(16)
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
    lab = JupyterLab(proc, port, token, root_dir, log_path, env)
    deadline = time.monotonic() + ready_timeout
    status_url = f"{lab.base_url}/api/status?token={token}"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited rc={proc.returncode}:\n{lab.log_text()[-3000:]}")
        try:
            with urllib.request.urlopen(status_url, timeout=1) as resp:
                if resp.status == 200:
                    return lab
        except OSError:
            time.sleep(0.1)
    lab.stop()
    raise RuntimeError(f"jupyter lab not ready after {ready_timeout}s:\n{lab.log_text()[-3000:]}")
