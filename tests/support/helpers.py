"""Small real peers the tests talk to over HTTP, and shared test data: Jobs as the pure rules see them."""

from __future__ import annotations

import atexit
import json
import socket
import subprocess
import threading
import time
import tomllib
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from events.envelope import Envelope
from events.objects import Pod
from functions.domain.jobs import JobState, parse_job
from functions.runtime.client import send
from functions.runtime.codec import to_envelope
from functions.runtime.context import Context
from functions.runtime.gateway import Gateway
from functions.runtime.plan import Outcome
from functions.runtime.resources import EVENTS, Resource, cre_jobs
from functions.runtime.settings import Settings
from tests.support.answers import moved
from tests.support.inprocess import InProcessFunction
from tests.support.paths import REPO
from tests.support.world import cache_caught_up

REPLY_EVENT = {"ce-specversion": "1.0", "ce-id": "r1", "ce-source": "/receiver", "ce-type": "test.reply",
               "content-type": "application/json"}


class Receiver:
    """An HTTP endpoint on loopback that records every POST (time, headers, body) and answers from
    `script` (status, headers) in order, then with `default`; with `scripted`, only the requests whose body it
    accepts take the script (the others `default`: on a shared API server, another test's objects may be posted
    too). With `reply_event`, a 200 carries a CloudEvent in binary mode (a Knative reply)."""

    def __init__(self, default: int = 200, body: bytes = b"ok", script: list[tuple[int, dict[str, str]]] | None = None,
                 reply_event: bool = False, scripted: Callable[[bytes], bool] = lambda body: True) -> None:
        self.requests: list[tuple[float, dict[str, str], bytes]] = []
        self.script = list(script or [])
        self.default, self.body, self.reply_event = default, body, reply_event
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                receiver.requests.append((time.monotonic(), {k.lower(): v for k, v in self.headers.items()}, body))
                status, headers = (receiver.script.pop(0) if receiver.script and scripted(body)
                                   else (receiver.default, {}))
                payload = receiver.body
                if status == 200 and receiver.reply_event:
                    headers, payload = {**REPLY_EVENT, **headers}, b'{"ok": true}'
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"

    @property
    def bodies(self) -> list[Any]:
        return [json.loads(body) for _, _, body in self.requests]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


CORE_EVENTS = Resource("", "v1", "events", "Event")


def record_failure(gateway: Gateway, ns: str, about: dict[str, Any], message: str) -> None:
    """The Event a failure leaves about an object (as CRE records it: a core/v1 Event, `involvedObject`), its
    kind, name and uid; then waited for in the API server's watch cache, which `alert` lists it from."""
    meta = about["metadata"]
    gateway.create(CORE_EVENTS, ns, {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:8]}"},
        "involvedObject": {"apiVersion": about["apiVersion"], "kind": about["kind"], "name": meta["name"],
                           "namespace": ns, "uid": meta["uid"]},
        "reason": "WorkloadFailed", "message": message, "type": "Warning", "count": 1,
        "source": {"component": "nvcre-job-controller"}})
    cache_caught_up(gateway, ns, [EVENTS])


def self_signed(directory: Path, name: str) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made by openssl: self-signed, so it is its own CA."""
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-keyout", str(key),
                    "-out", str(cert), "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


HELD: list[socket.socket] = []
"""Sockets holding loopback ports for the rest of the test process (see `closed_port`, `silent_port`),
closed when it exits."""
atexit.register(lambda: [sock.close() for sock in HELD])


def closed_port() -> int:
    """A loopback port bound and never listened on, held until the test process ends: a connection is
    refused at once, and no other process can bind the port meanwhile (the socket has no SO_REUSEADDR).
    `free_port()` alone only says the port was free a moment ago."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    HELD.append(sock)
    return int(sock.getsockname()[1])


def silent_port() -> int:
    """A loopback port listening and never accepting, held until the test process ends: a connection
    is made (the kernel's backlog), and then nothing is ever answered (a client's timeout)."""
    sock = socket.create_server(("127.0.0.1", 0), backlog=64)
    HELD.append(sock)
    return int(sock.getsockname()[1])


def kubeconfig_for_server(path: Path, server: str) -> Path:
    """A kubeconfig naming `server` (TLS not verified), with a token user."""
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return path


def unreachable_kubeconfig(path: Path) -> Path:
    """A kubeconfig naming an API server that is not there (a held loopback port: connection refused)."""
    return kubeconfig_for_server(path, f"https://127.0.0.1:{closed_port()}")


class FailingApiServer:
    """What a client meets when the API server behind a proxy or load balancer is failing: every request,
    whatever its method, is answered `status` with a Kubernetes `Status` body (plain HTTP on loopback)."""

    def __init__(self, status: int, reason: str = "ServiceUnavailable", body: bytes | None = None,
                 broken_off: bool = False) -> None:
        """`body` instead of the Status; `broken_off`: the answer promises more than it sends, then ends."""
        body = body if body is not None else json.dumps({
            "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": status, "reason": reason,
            "message": f"the server answered {status}"}).encode()

        class Handler(BaseHTTPRequestHandler):
            def answer(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body) * (2 if broken_off else 1)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = answer

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# -- Jobs as the pure decisions see them (functions.domain) -------------------------------

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
EARLIER = "2026-11-30T10:00:00Z"


def cond(type_: str, status: str, reason: str = "", message: str = "", gen: int = 1,
         ltt: str = EARLIER) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message, "observedGeneration": gen,
            "lastTransitionTime": ltt}


def job(conditions: list[dict[str, Any]] | None = None, generation: int = 1, checkpoint: dict[str, Any] | None = None,
        restart_count: int = 0, annotations: dict[str, str] | None = None, workload_ref: bool = False,
        train_job: bool = True, status: dict[str, Any] | None = None, spec: dict[str, Any] | None = None,
        created: str = EARLIER) -> JobState:
    """A Job as read; `status` and `spec` add fields to what the other arguments give."""
    job_spec: dict[str, Any] = {"workload": {"trainJob": {"runtimeRef": {"name": "t"}}} if train_job else {}}
    if checkpoint is not None:
        job_spec["checkpoint"] = checkpoint
    job_status: dict[str, Any] = {"conditions": conditions or [], "restartCount": restart_count}
    if workload_ref:
        job_status["workloadRef"] = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                                     "name": "llm-workload"}
    return parse_job({"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                      "metadata": {"name": "llm", "namespace": "ns", "uid": "job-uid", "generation": generation,
                                   "creationTimestamp": created,
                                   "labels": {"crefn.dev/managed": "true"}, "annotations": annotations or {}},
                      "spec": {**job_spec, **(spec or {})}, "status": {**job_status, **(status or {})}},
                     "nvcre.nvidia.com")


def pod(name: str = "llm-workload-node-0-0", node: str = "", scheduled: tuple[str, str, str] | None = None,
        exits: list[tuple[str, int, str]] | None = None, phase: str = "Running",
        labels: dict[str, str] | None = None) -> Pod:
    """A pod as a list returns it: `scheduled` is PodScheduled (status, reason, message), `exits` the
    containers terminated (name, exit code, reason) or running (exit code -1)."""
    conditions = [] if scheduled is None else [
        {"type": "PodScheduled", "status": scheduled[0], "reason": scheduled[1], "message": scheduled[2]}]
    statuses = [{"name": c, "state": {"running": {}} if code < 0 else
                 {"terminated": {"exitCode": code, "reason": reason}}} for c, code, reason in exits or []]
    return Pod.model_validate({"metadata": {"name": name, "labels": labels or {}}, "spec": {"nodeName": node},
                               "status": {"phase": phase, "conditions": conditions,
                                          "containerStatuses": statuses}})


def missing(sent: Any, stored: Any, path: str = "") -> list[str]:
    """Where `stored` lacks or changed what was `sent` (server-added fields are fine)."""
    if isinstance(sent, dict):
        if not isinstance(stored, dict):
            return [path or "/"]
        return [p for k, v in sent.items() for p in (missing(v, stored[k], f"{path}.{k}") if k in stored
                                                    else [f"{path}.{k}"])]
    if isinstance(sent, list):
        if not isinstance(stored, list) or len(stored) != len(sent):
            return [path]
        return [p for i, (a, b) in enumerate(zip(sent, stored, strict=True)) for p in missing(a, b, f"{path}[{i}]")]
    return [] if sent == stored else [f"{path}: {sent!r} became {stored!r}"]


def job_events(gateway: Gateway, namespace: str, job: str = "llm") -> list[dict[str, Any]]:
    """The Events regarding a Job, oldest first (the core view `kubectl describe` reads)."""
    items = gateway.request("GET", f"/api/v1/namespaces/{namespace}/events",
                            query=[("fieldSelector", f"involvedObject.name={job}")])["items"]
    return sorted(items, key=lambda e: e.get("eventTime") or e["metadata"]["creationTimestamp"])


def annotate_nodes(gateway: Gateway, namespace: str, nodes: str, job: str = "llm") -> None:
    """The group-nodes annotation CRE's Workflow sets on the Jobs it creates."""
    gateway.patch(cre_jobs("nvcre.nvidia.com"), namespace, job,
                  {"metadata": {"annotations": {"nvcre.nvidia.com/group-nodes": nodes}}})


def trainjob(conditions: list[dict[str, str]] | None = None, uid: str = "tj-uid",
             created: str = "2026-11-30T11:00:00Z") -> dict[str, Any]:
    """The attempt's TrainJob as read: controlled by the Job `job()` makes."""
    owner = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "llm", "uid": "job-uid",
             "controller": True}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "llm-workload", "namespace": "ns", "uid": uid, "creationTimestamp": created,
                         "ownerReferences": [owner]},
            "spec": {"runtimeRef": {"name": "t"}}, "status": {"conditions": conditions or []}}


class CountingGateway(Gateway):
    """The real gateway, counting the requests it makes (method, path)."""

    def __init__(self, inner: Gateway) -> None:
        super().__init__(inner.transport, 10.0)  # the same authenticated client
        self.calls: list[tuple[str, str]] = []

    def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, Any]] | None = None,
                content_type: str = "application/json") -> dict[str, Any]:
        self.calls.append((method, path))
        return super().request(method, path, body=body, query=query, content_type=content_type)


def handled_at(handle: Callable[[Envelope, Context], Outcome], record: dict[str, Any], settings: Settings,
               at: datetime) -> Outcome:
    """A handler's outcome for a CloudEvent record on a clock set at `at` (its CEL workers closed after)."""
    ctx = Context(settings, clock=lambda: at)
    try:
        return handle(to_envelope(record), ctx)
    finally:
        ctx.cel.close()


def waits_while_its_decider_may_be_at_work(handle: Callable[[Envelope, Context], Outcome], record: dict[str, Any],
                                           settings: Settings, decided: datetime) -> None:
    """A decision written at `decided`, its Event missing: delivered again 10 s later, over HTTP to the handler's
    function (served here, as `settings.kubeconfig`'s user, its clock at that time), the answer is 503 with
    `Retry-After` the 20 s left of the Broker's 30 s delivery timeout (its decider may still be recording the
    Event), counted as a wait; in observe mode (the functions wrote nothing) it restates nothing."""
    target = handle.__module__.split(".")[1]  # functions.<target>.read
    served = InProcessFunction(target, {"CREFN_KUBECONFIG": str(settings.kubeconfig)},
                               clock=lambda: decided + timedelta(seconds=10)).start()
    try:
        answer, counted = moved(served.url, target, lambda: send(served.url, record))
    finally:
        served.stop()
    assert (answer.status, answer.headers.get("retry-after")) == (503, "20"), answer.text
    assert "its decider may still be recording its Event" in answer.text
    assert counted == {("503", "wait"): 1}  # a designed wait, not an error
    observing = settings.model_copy(update={"mode": "observe"})
    assert handled_at(handle, record, observing, decided + timedelta(seconds=40)).reply is None


def announced_once(url: str, record: dict[str, Any], answer: bytes, handle: Callable[[Envelope, Context], Outcome],
                   settings: Settings, recorded: Callable[[], list[Any]]) -> Outcome:
    """A decision restated after a crash (its answer `answer`), delivered once more as the Broker refused that
    answer: the same answer, nothing recorded twice (`recorded`: the Job's Events); the event under another id:
    202; past the hour on the injected clock: no reply, nothing recorded, the outcome returned."""
    before = recorded()
    again = send(url, record)
    assert again.status == 200 and json.loads(again.body) == json.loads(answer)
    assert recorded() == before
    raced = {"attributes": {**record["attributes"], "id": "raced"}, "data": record["data"]}
    assert send(url, raced).status == 202  # announced by the event that decided it
    old = handled_at(handle, record, settings, datetime.now(UTC) + timedelta(hours=2))
    assert old.reply is None and recorded() == before
    return old


def released() -> str:
    """The version pyproject.toml gives: the one source of the release's version."""
    return str(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"])
