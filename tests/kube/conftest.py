"""Fixtures for lifecycle tests: every lifecycle function served once per settings, each authenticated
as its own ServiceAccount (bound exactly as `knative/` binds it), and a relay that stands where `K_SINK`
points (resync's SinkBinding) and hands events to the current test's broker."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from functions.transport import decode
from localstack.apiserver import LocalCluster, free_port
from localstack.manifests import service_account_user
from localstack.serving import ServedFunction
from tests.kube.rounds import Bus

LIFECYCLE = ("phase", "launch", "status", "restart", "resync", "workloadrun")
ALERT_USER = "crefn-alert"


@dataclass
class Relay:
    url: str = ""
    bus: Bus | None = None
    received: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture(scope="session")
def relay() -> Iterator[Relay]:
    state = Relay()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            record = decode({k.lower(): v for k, v in self.headers.items()}, body)
            state.received.append(record)
            if state.bus is None:
                self.send_response(503)
            else:
                state.bus.publish(record)
                self.send_response(202)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state.url = f"http://127.0.0.1:{port}/"
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def functions(serve: Callable[..., ServedFunction], cluster: LocalCluster,
              relay: Relay) -> Callable[..., dict[str, str]]:
    """functions(**settings) → {target: url} for every lifecycle function, served with those settings."""

    def start(**settings: str) -> dict[str, str]:
        urls = {}
        for target in LIFECYCLE:
            user = service_account_user(f"crefn-{target}")  # least privilege: the function's own RBAC
            env = {"CREFN_KUBECONFIG": str(cluster.kubeconfig_for(user)), "K_SINK": relay.url,
                   "CREFN_LOG_LEVEL": "WARNING", "CREFN_RESTART_GRACE_SECONDS": "0", **settings}
            urls[target] = serve(target, **env).url
        return urls

    return start
