"""A Prometheus Alertmanager on loopback (Debian's `prometheus-alertmanager`), clustering off, with
one webhook receiver: for the test suite and for trying the alert sinks locally. Stopped by PID.
With a `Guard`, its API is behind TLS and basic auth (its `--web.config.file`), as a production
Alertmanager often is; with `inhibit_rules`, those of its configuration (docs/operating.md#one-fault-one-page)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import ssl
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from localstack.cluster.apiserver import free_port
from localstack.processes import spawn, stop_process
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


@dataclass(frozen=True)
class Guard:
    """TLS and basic auth in front of Alertmanager's API: the certificate (for 127.0.0.1, self-signed: it is
    its own CA) and key it serves, and its one user, with the bcrypt hash of the password it checks."""

    cert: Path
    key: Path
    username: str
    password: str
    password_hash: str

    def web_config(self) -> dict[str, Any]:
        return {"tls_server_config": {"cert_file": str(self.cert), "key_file": str(self.key)},
                "basic_auth_users": {self.username: self.password_hash}}

    def request(self, url: str) -> urllib.request.Request:
        basic = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        return urllib.request.Request(url, headers={"Authorization": f"Basic {basic}"})

    def context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.cert))


class LocalAlertmanager:
    def __init__(self, work_dir: Path, webhook_url: str, guard: Guard | None = None,
                 inhibit_rules: Sequence[Mapping[str, Any]] = ()) -> None:
        self.work_dir = Path(work_dir)
        self.webhook_url = webhook_url
        self.guard = guard
        self.inhibit_rules = [dict(rule) for rule in inhibit_rules]
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self.guard else 'http'}://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30) -> LocalAlertmanager:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        config = {
            "route": {"receiver": "webhook", "group_by": ["alertname", "namespace", "job"], "group_wait": "0s",
                      "group_interval": "1s", "repeat_interval": "1h"},
            "receivers": [{"name": "webhook", "webhook_configs": [{"url": self.webhook_url, "send_resolved": True}]}],
            "inhibit_rules": self.inhibit_rules,
        }
        config_file = self.work_dir / "alertmanager.yml"
        config_file.write_text(yaml.safe_dump(config))
        web = []
        if self.guard:
            (self.work_dir / "web.yml").write_text(yaml.safe_dump(self.guard.web_config()))
            web = [f"--web.config.file={self.work_dir / 'web.yml'}"]
        self.port = free_port()
        with (self.work_dir / "alertmanager.log").open("ab") as log:
            self._proc = spawn([
                find_alertmanager(), f"--config.file={config_file}", f"--storage.path={self.work_dir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}", "--cluster.listen-address=", "--log.level=warn", *web,
            ], stdout=log, stderr=subprocess.STDOUT)
        if why := wait_ready(self._proc, self._request("/-/ready"), timeout, self.work_dir / "alertmanager.log",
                             "alertmanager", self.guard.context() if self.guard else None):
            self.stop()
            raise AlertmanagerError(why)
        return self

    def alerts(self, **filters: str) -> list[dict[str, Any]]:
        query = "&".join(f"{k}={v}" for k, v in filters.items())
        with urllib.request.urlopen(self._request(f"/api/v2/alerts{'?' + query if query else ''}"), timeout=5,
                                    context=self.guard.context() if self.guard else None) as resp:
            result: list[dict[str, Any]] = json.loads(resp.read())
            return result

    def _request(self, path: str) -> urllib.request.Request:
        return self.guard.request(self.url + path) if self.guard else urllib.request.Request(self.url + path)

    def children(self) -> list[subprocess.Popen[bytes]]:
        """Its process, while it runs (for `localstack.processes.stop_together`)."""
        return [self._proc] if self._proc else []

    def stop(self) -> None:
        if self._proc:
            stop_process(self._proc)
        self._proc = None
