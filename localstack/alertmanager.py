"""A Prometheus Alertmanager on loopback (Debian's `prometheus-alertmanager`), clustering off, with
one webhook receiver: for the test suite and for trying the alert sinks locally. Stopped by PID."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from localstack.apiserver import free_port, stop_process
from localstack.serving import wait_ready


def start_webhook(on_notification: Callable[[dict[str, Any]], None]) -> tuple[ThreadingHTTPServer, str]:
    """A webhook receiver for Alertmanager's notifications (plain JSON, one call per notification)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                on_notification(json.loads(body))
                self.send_response(200)
            except ValueError:
                self.send_response(400)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


class AlertmanagerError(RuntimeError):
    """Alertmanager could not be started."""


def find_alertmanager() -> str:
    path = os.environ.get("ALERTMANAGER") or shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
    if not path:
        raise AlertmanagerError("alertmanager not found: install Debian's prometheus-alertmanager (make deps)")
    return path


class LocalAlertmanager:
    def __init__(self, work_dir: Path, webhook_url: str) -> None:
        self.work_dir = Path(work_dir)
        self.webhook_url = webhook_url
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30) -> LocalAlertmanager:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        config = {
            "route": {"receiver": "webhook", "group_by": ["alertname", "namespace", "job"], "group_wait": "0s",
                      "group_interval": "1s", "repeat_interval": "1h"},
            "receivers": [{"name": "webhook", "webhook_configs": [{"url": self.webhook_url, "send_resolved": True}]}],
        }
        config_file = self.work_dir / "alertmanager.yml"
        config_file.write_text(yaml.safe_dump(config))
        self.port = free_port()
        with (self.work_dir / "alertmanager.log").open("ab") as log:
            self._proc = subprocess.Popen([
                find_alertmanager(), f"--config.file={config_file}", f"--storage.path={self.work_dir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}", "--cluster.listen-address=", "--log.level=warn",
            ], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        if why := wait_ready(self._proc, f"{self.url}/-/ready", timeout, self.work_dir / "alertmanager.log",
                             "alertmanager"):
            self.stop()
            raise AlertmanagerError(why)
        return self

    def alerts(self, **filters: str) -> list[dict[str, Any]]:
        query = "&".join(f"{k}={v}" for k, v in filters.items())
        with urllib.request.urlopen(f"{self.url}/api/v2/alerts{'?' + query if query else ''}", timeout=5) as resp:
            result: list[dict[str, Any]] = json.loads(resp.read())
            return result

    def stop(self) -> None:
        if self._proc:
            stop_process(self._proc)
        self._proc = None
