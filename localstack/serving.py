"""Serve one function target with functions-framework in a child process, on a free loopback port."""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

import functions
from localstack.cluster.apiserver import free_port
from localstack.processes import kill_group, signal_group, spawn, stop_process

MAIN = Path(functions.__file__).with_name("main.py")
IMAGE_ENV = {"PYDANTIC_DISABLE_PLUGINS": "__all__"}
"""What the image's ENV sets that changes how a function starts (the Dockerfile), so that one served here starts as
in a pod: pydantic does not look for plugins."""


def wait_ready(proc: subprocess.Popen[bytes], url: str | urllib.request.Request, timeout: float, log_path: Path,
               name: str, context: ssl.SSLContext | None = None) -> str:
    """Wait until `url` answers 200 (a `/-/ready` endpoint; a Request to send headers, `context` to verify its
    TLS): "" then, else why not (the process exited, with the end of its log, or it was not ready in time)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return f"{name} exited with {proc.returncode}: {log_path.read_text()[-2000:]}"
        try:
            with urllib.request.urlopen(url, timeout=1, context=context) as resp:
                if resp.status == 200:
                    return ""
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    return f"{name} not ready after {timeout}s"


def wait_for_port(port: int, timeout: float = 20, alive: Callable[[], bool] = lambda: True,
                  interval: float = 0.1) -> bool:
    """Whether something listens on the loopback port within `timeout` (gives up once `alive()` is false), tried
    every `interval` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(interval)
    return False


class ServedFunction:
    """One target served; its environment is `settings` (what a pod takes from its ConfigMap) with `env` (its
    own, which wins, as a container's `env` wins over its `envFrom`) over them. A new `settings` applies at the
    next start."""

    def __init__(self, target: str, env: Mapping[str, str] | None = None, log_path: Path | None = None,
                 source: Path = MAIN, settings: Mapping[str, str] | None = None) -> None:
        self.target = target
        self.source = source
        self.env = dict(env or {})
        self.settings = dict(settings or {})
        self.port = 0
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        return self._proc

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self, timeout: float = 20, same_port: bool = False, interval: float = 0.1) -> ServedFunction:
        """Start serving, on a free port (or, with `same_port`, on the one it had: a restart); returns once it
        listens, asked every `interval` seconds."""
        self.port = self.port if same_port and self.port else free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("CREFN_") and k not in ("KUBECONFIG", "K_SINK")}
        env.update({**IMAGE_ENV, **self.settings, **self.env})
        argv = [sys.executable, "-m", "functions_framework", "--source", str(self.source), "--target", self.target,
                "--host", "127.0.0.1", "--port", str(self.port)]
        if self.log_path:
            with self.log_path.open("ab") as out:
                self._proc = spawn(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
        else:
            self._proc = spawn(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        proc = self._proc
        if wait_for_port(self.port, timeout, alive=lambda: proc.poll() is None, interval=interval):
            return self
        code = proc.poll()
        self.stop()
        if code is not None:
            raise RuntimeError(f"functions-framework for {self.target} exited with {code}")
        raise RuntimeError(f"functions-framework for {self.target} did not listen within {timeout}s")

    @property
    def exited(self) -> bool:
        """Whether the server was started and has exited since (killed, or crashed)."""
        return self._proc is not None and self._proc.poll() is not None

    def kill(self) -> None:
        """SIGKILL the served process tree at once (a pod killed, for drills)."""
        if self._proc and self._proc.poll() is None:
            kill_group(self._proc)

    def terminate(self) -> None:
        """Ask the server to stop without waiting (stop() then waits); lets many stop in parallel."""
        if self._proc and self._proc.poll() is None:
            signal_group(self._proc, signal.SIGTERM)

    def stop(self) -> None:
        if self._proc:
            stop_process(self._proc)
        self._proc = None

    def __enter__(self) -> ServedFunction:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
