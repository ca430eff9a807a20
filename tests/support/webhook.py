"""A validating admission webhook the tests serve on loopback: HTTPS with a self-signed certificate
for 127.0.0.1, registered with the real API server by a ValidatingWebhookConfiguration. It refuses the
CREATE of every object its configuration selects (with a message of the test's choosing) until it is
removed: a real admission path, like a cluster's policy webhooks."""

from __future__ import annotations

import base64
import json
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from functions.runtime.errors import PermanentError
from functions.runtime.gateway import Gateway
from functions.runtime.resources import Resource
from tests.support.helpers import self_signed

WEBHOOKS = Resource("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                    "ValidatingWebhookConfiguration", namespaced=False)


class DenyingWebhook:
    """Registered, and in force: it returns once a server-side dry run of `probe` (an object it
    selects, created in `namespace`) is refused — the API server loads webhook configurations
    asynchronously."""

    def __init__(self, gateway: Gateway, work_dir: Path, name: str, rules: list[dict[str, Any]],
                 object_selector: dict[str, Any], message: str, probe: tuple[Resource, str, dict[str, Any]]) -> None:
        self.gateway, self.name, self.message = gateway, name, message
        self.reviews: list[dict[str, Any]] = []
        cert, key = self_signed(work_dir, "webhook")
        webhook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
                webhook.reviews.append(review)
                body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {
                    "uid": review["request"]["uid"], "allowed": False,
                    "status": {"code": 403, "reason": "Forbidden", "message": webhook.message}}}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert), str(key))
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        url = f"https://127.0.0.1:{self.server.server_address[1]}/validate"
        gateway.create(WEBHOOKS, None, {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [{"name": f"{name}.crefn.test", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                          "failurePolicy": "Fail", "timeoutSeconds": 5, "rules": rules,
                          "objectSelector": object_selector,
                          "clientConfig": {"url": url, "caBundle": base64.b64encode(cert.read_bytes()).decode()}}]})
        self.wait_in_force(*probe)

    def wait_in_force(self, res: Resource, namespace: str, body: dict[str, Any], timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.gateway.request("POST", res.path(namespace), body=body, query=[("dryRun", "All")])
            except PermanentError as e:
                if self.message in e.detail:
                    return
                raise
            if time.monotonic() > deadline:
                raise AssertionError(f"webhook {self.name} not in force after {timeout}s")
            time.sleep(0.1)

    def remove(self) -> None:
        self.gateway.delete(WEBHOOKS, None, self.name)
        self.server.shutdown()
        self.server.server_close()
