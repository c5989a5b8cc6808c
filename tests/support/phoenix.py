"""A real Arize Phoenix (SQLite) on 127.0.0.1, started as a subprocess and stopped by its PID.

Phoenix takes OTLP/HTTP on ``/v1/traces`` and gives spans back through its REST API
(``/v1/projects/{project}/spans``). Its first start creates the SQLite database (about a minute on a
busy 2-core machine).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Phoenix:
    url: str
    pid: int
    startup_s: float

    def spans(self, project: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        cursor = None
        while True:
            q = f"{self.url}/v1/projects/{project}/spans?limit=1000" + (f"&cursor={cursor}" if cursor else "")
            try:
                with urllib.request.urlopen(q, timeout=30) as r:
                    page = json.load(r)
            except urllib.error.HTTPError as exc:
                if exc.code == 404:          # the project appears with its first span
                    return out
                raise
            out += page["data"]
            cursor = page.get("next_cursor")
            if not cursor:
                return out


@dataclass
class PhoenixLaunch:
    """A Phoenix process started and not yet waited for (``ready_phoenix`` waits)."""

    proc: subprocess.Popen[bytes]
    url: str
    workdir: Path
    started: float


def launch_phoenix(workdir: Path) -> PhoenixLaunch:
    """Start Phoenix on free ports of 127.0.0.1 without waiting for it to answer."""
    port, grpc = free_port(), free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(workdir), "PHOENIX_PORT": str(port),
           "PHOENIX_GRPC_PORT": str(grpc), "PHOENIX_HOST": "127.0.0.1", "PHOENIX_TELEMETRY_ENABLED": "false"}
    exe = Path(sys.executable).with_name("phoenix")
    cmd = [str(exe), "serve"] if exe.exists() else [sys.executable, "-m", "phoenix.server.main", "serve"]
    log = open(workdir / "phoenix.log", "wb")
    started = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
    return PhoenixLaunch(proc, f"http://127.0.0.1:{port}", workdir, started)


def ready_phoenix(launch: PhoenixLaunch, timeout: float = 300.0) -> Phoenix:
    """Wait until the launched Phoenix answers its health check (stopped, and an error, if it never does)."""
    proc, url = launch.proc, launch.url
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"phoenix exited with {proc.returncode}: "
                               + (launch.workdir / "phoenix.log").read_text(errors="replace")[-2000:])
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() - launch.started > timeout:
            stop_phoenix(proc)
            raise RuntimeError(f"phoenix did not answer on {url} within {timeout:.0f} s")
        time.sleep(0.25)
    return Phoenix(url, proc.pid, time.monotonic() - launch.started)


def start_phoenix(workdir: Path, timeout: float = 300.0) -> tuple[subprocess.Popen[bytes], Phoenix]:
    """Start Phoenix and wait until it answers."""
    launch = launch_phoenix(workdir)
    return launch.proc, ready_phoenix(launch, timeout)


def stop_phoenix(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
